// Reference kernels of the quant family: QuantizeLinear and DequantizeLinear (per-tensor,
// per-axis and blocked; 8/16-bit, 4-bit and 2-bit integers, float8, float4) and
// DynamicQuantizeLinear.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/reference/dispatch.h"
#include "kernels/reference/minifloat.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// How the scale / zero point map onto x: the element (o, a, i) of x viewed as
/// [outer, axis_len, inner] uses scale / zero point element index(o, a, i).
struct QuantLayout {
  enum class Mode { kTensor, kAxis, kBlocked } mode = Mode::kTensor;
  int64_t outer = 1, axis_len = 1, inner = 1;
  int64_t block = 1, scale_axis_len = 1;

  int64_t index(int64_t o, int64_t a, int64_t i) const {
    switch (mode) {
      case Mode::kTensor: return 0;
      case Mode::kAxis: return a;
      default: return (o * scale_axis_len + a / block) * inner + i;
    }
  }
};

/// Works out the granularity from the shapes and validates them (the shape function
/// did too, but symbolic dims may have hidden a mismatch).
QuantLayout make_layout(const KernelContext& ctx, const Tensor& x, const Tensor& scale,
                        const Tensor* zp) {
  QuantLayout L;
  const int64_t block = ctx.attr_i("block_size", 0);
  if (zp && zp->numel() != scale.numel())
    ctx.fail("zero point has {} elements, scale {}", zp->numel(), scale.numel());
  if ((block <= 0 && scale.numel() == 1 && scale.rank() <= 1) || x.numel() == 0) {
    // Per tensor; and an empty x has nothing to scale (its other extents may not even
    // multiply, and looping over them would be for nothing).
    L.inner = x.numel();
    return L;
  }
  const auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attr_i("axis", 1);
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const auto ax = static_cast<size_t>(axis);
  for (size_t k = 0; k < ax; ++k) L.outer *= x.dim(k);
  L.axis_len = x.dim(ax);
  for (size_t k = ax + 1; k < x.rank(); ++k) L.inner *= x.dim(k);
  if (block <= 0) {
    if (scale.rank() != 1 || scale.dim(0) != L.axis_len)
      ctx.fail("per-axis scale must be 1-D of length {} (axis {} of x {}), got {}", L.axis_len,
               axis, dims_str(x.dims()), dims_str(scale.dims()));
    L.mode = QuantLayout::Mode::kAxis;
    return L;
  }
  if (scale.rank() != x.rank())
    ctx.fail("blocked scale {} must have the rank of x {}", dims_str(scale.dims()),
             dims_str(x.dims()));
  for (size_t k = 0; k < x.rank(); ++k) {
    const int64_t want = k == ax ? x.dim(k) / block + (x.dim(k) % block != 0) : x.dim(k);
    if (scale.dim(k) != want)
      ctx.fail("blocked scale {} does not fit x {} with block_size {} on axis {}",
               dims_str(scale.dims()), dims_str(x.dims()), block, axis);
  }
  if (zp && zp->dims() != scale.dims())
    ctx.fail("zero point shape {} must match scale shape {}", dims_str(zp->dims()),
             dims_str(scale.dims()));
  L.mode = QuantLayout::Mode::kBlocked;
  L.block = block;
  L.scale_axis_len = scale.dim(ax);
  return L;
}

/// Reads any float-ish or integer tensor as doubles (scales, float inputs).
std::vector<double> read_as_double(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  const DType dt = t.dtype();
  if (is_minifloat(dt)) {
    for (size_t k = 0; k < v.size(); ++k) v[k] = minifloat_to_float(dt, t.data<uint8_t>()[k]);
    return v;
  }
  switch (dt) {
    case DType::kInt4:
    case DType::kInt2:
      for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<int8_t>()[k];
      return v;
    case DType::kUint4:
    case DType::kUint2:
      for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<uint8_t>()[k];
      return v;
    default: break;
  }
  dispatch_numeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(static_cast<acc_t<T>>(p[k]));
  }, "quantization parameter");
  return v;
}

/// Rounds a double to the precision of `p` (float, float16, bfloat16 or double).
double round_to(DType p, double v) {
  switch (p) {
    case DType::kFloat: return static_cast<float>(v);
    case DType::kFloat16: return static_cast<float>(Float16(static_cast<float>(v)));
    case DType::kBFloat16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    default: return v;
  }
}

struct IntRange {
  double lo, hi;
};

IntRange int_range(DType t) {
  switch (t) {
    case DType::kInt8: return {-128, 127};
    case DType::kUint8: return {0, 255};
    case DType::kInt16: return {-32768, 32767};
    case DType::kUint16: return {0, 65535};
    case DType::kInt4: return {-8, 7};
    case DType::kUint4: return {0, 15};
    case DType::kInt2: return {-2, 1};
    case DType::kUint2: return {0, 3};
    default: return {0, 0};
  }
}

/// Stores integer `v` (already in range) as element k of an integer tensor; 4/2-bit
/// types live one per byte, signed ones sign-extended.
void store_int(Tensor& y, int64_t k, int64_t v) {
  switch (y.dtype()) {
    case DType::kInt8:
    case DType::kInt4:
    case DType::kInt2: y.data<int8_t>()[k] = static_cast<int8_t>(v); break;
    case DType::kUint8:
    case DType::kUint4:
    case DType::kUint2: y.data<uint8_t>()[k] = static_cast<uint8_t>(v); break;
    case DType::kInt16: y.data<int16_t>()[k] = static_cast<int16_t>(v); break;
    case DType::kUint16: y.data<uint16_t>()[k] = static_cast<uint16_t>(v); break;
    default: break;
  }
}

void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel()) ctx.fail("output has {} elements, x {}", y.numel(), x.numel());
  const QuantLayout L = make_layout(ctx, x, scale, zp);
  const DType out = y.dtype();
  if (zp && zp->dtype() != out)
    ctx.fail("zero point type {} differs from the output type {}", dtype_name(zp->dtype()),
             dtype_name(out));

  // Precision of x / scale: the 'precision' attribute, else the scale type. int32 and
  // float8e8m0 scales divide in float; int32 x divides in double (numpy promotes
  // int32 / float32 to float64, which the reference outputs follow).
  DType prec = static_cast<DType>(ctx.attr_i("precision", 0));
  if (prec == DType::kUndefined) {
    prec = scale.dtype();
    if (prec != DType::kFloat16 && prec != DType::kBFloat16) prec = DType::kFloat;
    if (x.dtype() == DType::kInt32) prec = DType::kDouble;
  }
  std::vector<double> s = read_as_double(scale);
  for (double& v : s) v = round_to(prec, v);
  std::vector<double> z = zp ? read_as_double(*zp) : std::vector<double>(s.size(), 0.0);
  const std::vector<double> xv = read_as_double(x);

  const bool saturate = ctx.attr_i("saturate", 1) != 0;
  const bool to_float = is_minifloat(out);
  if (!to_float && int_range(out).hi == 0)
    ctx.fail("cannot quantize to {}", dtype_name(out));
  const IntRange r = int_range(out);
  int64_t k = 0;
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t a = 0; a < L.axis_len; ++a)
      for (int64_t i = 0; i < L.inner; ++i, ++k) {
        const auto p = static_cast<size_t>(L.index(o, a, i));
        const double q = round_to(prec, round_to(prec, xv[static_cast<size_t>(k)]) / s[p]);
        if (to_float) {
          y.data<uint8_t>()[k] = float_to_minifloat(out, q + z[p], saturate);
          continue;
        }
        // saturate(round_half_even(x / scale) + zero_point); NaN maps to the zero point
        double v = (std::isnan(q) ? 0.0 : std::nearbyint(q)) + z[p];
        v = std::min(std::max(v, r.lo), r.hi);
        store_int(y, k, static_cast<int64_t>(v));
      }
}

void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel()) ctx.fail("output has {} elements, x {}", y.numel(), x.numel());
  if (zp && zp->dtype() != x.dtype())
    ctx.fail("zero point type {} differs from x type {}", dtype_name(zp->dtype()),
             dtype_name(x.dtype()));
  const QuantLayout L = make_layout(ctx, x, scale, zp);
  const std::vector<double> s = read_as_double(scale);
  const std::vector<double> z = zp ? read_as_double(*zp) : std::vector<double>(s.size(), 0.0);
  const std::vector<double> xv = read_as_double(x);
  // The output type sets the precision of the product: both factors are rounded to
  // it, then the product (exact in double for these widths) is rounded once.
  const DType out = y.dtype();
  dispatch_float(out, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* yp = y.data<T>();
    int64_t k = 0;
    for (int64_t o = 0; o < L.outer; ++o)
      for (int64_t a = 0; a < L.axis_len; ++a)
        for (int64_t i = 0; i < L.inner; ++i, ++k) {
          const auto p = static_cast<size_t>(L.index(o, a, i));
          const double d = round_to(out, xv[static_cast<size_t>(k)] - z[p]);
          const double v = d * round_to(out, s[p]);
          if constexpr (std::is_same_v<T, double>) yp[k] = v;
          else yp[k] = T(static_cast<float>(v));
        }
  }, "DequantizeLinear output");
}

void dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const float* xp = x.data<float>();
  const int64_t n = x.numel();
  // The range always includes 0 so that 0 quantizes exactly.
  float lo = 0, hi = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (std::isnan(xp[k])) continue;
    lo = std::min(lo, xp[k]);
    hi = std::max(hi, xp[k]);
  }
  // An all-zero input has no range; scale 1 (as onnxruntime gives) keeps later
  // divisions by the scale finite.
  float scale = (hi - lo) / 255.0f;
  if (scale == 0) scale = 1;
  float zpf = 0;
  if (std::isfinite(scale))
    zpf = std::min(std::max(std::nearbyint(0.0f - lo / scale), 0.0f), 255.0f);
  const auto zp = static_cast<uint8_t>(zpf);
  uint8_t* yp = y.data<uint8_t>();
  for (int64_t k = 0; k < n; ++k) {
    float v = zpf;
    if (std::isfinite(scale) && !std::isnan(xp[k]))
      v = std::nearbyint(xp[k] / scale) + zpf;
    yp[k] = static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f));
  }
  if (ctx.has_output(1)) *ctx.output(1).data<float>() = scale;
  if (ctx.has_output(2)) *ctx.output(2).data<uint8_t>() = zp;
}

}  // namespace

void register_quant(Registry& r) {
  r.add("", "QuantizeLinear", 10, 1000,
        {DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kInt32}, quantize_linear);
  r.add("", "DequantizeLinear", 10, 1000,
        {DType::kInt8, DType::kUint8, DType::kInt16, DType::kUint16, DType::kInt32,
         DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
         DType::kFloat8E5M2FNUZ, DType::kInt4, DType::kUint4, DType::kFloat4E2M1,
         DType::kInt2, DType::kUint2},
        dequantize_linear);
  r.add("", "DynamicQuantizeLinear", 11, 1000, {DType::kFloat}, dynamic_quantize_linear);
}

}  // namespace onyx::kernels
