// Shape functions of the quant family: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear.
#include <algorithm>

#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

bool is_quantized_type(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kUint8:
    case DType::kInt16:
    case DType::kUint16:
    case DType::kInt4:
    case DType::kUint4:
    case DType::kInt2:
    case DType::kUint2:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: return true;
    default: return false;
  }
}

/// A shape with one element: scalar or [1] (zero points are often given as [1] next to
/// a scalar scale).
bool single_element(const Shape& s) {
  for (const Dim& d : s)
    if (!(d.known() && d.value == 1)) return false;
  return s.size() <= 1;
}

/// Checks the scale (input 1) and zero point (input 2) against x (input 0): per-tensor,
/// per-axis or (block_size > 0) blocked granularity.
void check_quant_params(const InferContext& ctx) {
  const int64_t block = ctx.attr_i("block_size", 0);
  if (block < 0) ctx.fail("attribute 'block_size' must be >= 0, got {}", block);
  if (block > 0 && ctx.opset() < 21)
    ctx.fail("blocked quantization (block_size) needs opset 21 or later");
  if (!ctx.has_shape(1)) return;
  const Shape& s = ctx.input_shape(1);
  if (ctx.has_input(2) && ctx.has_shape(2)) {
    const Shape& z = ctx.input_shape(2);
    bool same = z.size() == s.size();
    for (size_t k = 0; same && k < z.size(); ++k)
      same = !(z[k].known() && s[k].known() && z[k].value != s[k].value);
    if (!same && !(single_element(z) && single_element(s)))
      ctx.fail("zero point shape {} must match the scale shape {}", ir::shape_str(z),
               ir::shape_str(s));
  }
  if (block == 0 && single_element(s)) return;  // per-tensor
  if (!ctx.has_shape(0)) return;
  const Shape& x = ctx.input_shape(0);
  const auto rank = static_cast<int64_t>(x.size());
  if (block == 0) {
    if (s.size() != 1)
      ctx.fail("scale must be a scalar (per-tensor) or 1-D (per-axis) without block_size, got {}",
               ir::shape_str(s));
    if (ctx.opset() < 13) ctx.fail("per-axis quantization needs opset 13 or later");
    const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 1), rank));
    if (x[axis].known() && s[0].known() && s[0].value != x[axis].value)
      ctx.fail("per-axis scale has {} elements but axis {} of the input has {}", s[0].value, axis,
               x[axis].value);
    return;
  }
  if (s.size() != x.size())
    ctx.fail("blocked quantization needs a scale of the input's rank {}, got {}", rank,
             ir::shape_str(s));
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 1), rank));
  for (size_t k = 0; k < x.size(); ++k) {
    if (!x[k].known() || !s[k].known()) continue;
    const int64_t want = k == axis ? x[k].value / block + (x[k].value % block != 0) : x[k].value;
    if (s[k].value != want)
      ctx.fail("blocked scale shape {} does not fit input {} with block_size {} on axis {}",
               ir::shape_str(s), ir::shape_str(x), block, axis);
  }
}

void set_like_x(InferContext& ctx, DType dt) {
  if (ctx.has_shape(0)) ctx.set_output(0, dt, ctx.input_shape(0));
  else ctx.set_output_unranked(0, dt);
}

void quantize_linear(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (xt != DType::kFloat && xt != DType::kFloat16 && xt != DType::kBFloat16 &&
      xt != DType::kInt32)
    ctx.fail("x must be float, float16, bfloat16 or int32, got {}", dtype_name(xt));
  DType out = DType::kUint8;
  const bool has_zp = ctx.has_input(2);
  if (has_zp) out = ctx.input_dtype(2);
  const int64_t od = ctx.attr_i("output_dtype", 0);
  if (od != 0) {
    if (!dtype_valid(static_cast<int32_t>(od)) || !is_quantized_type(static_cast<DType>(od)))
      ctx.fail("attribute 'output_dtype' is not a quantized type: {}", od);
    if (has_zp && static_cast<DType>(od) != out)
      ctx.fail("attribute 'output_dtype' ({}) differs from the zero point type {}",
               dtype_name(static_cast<DType>(od)), dtype_name(out));
    out = static_cast<DType>(od);
  }
  if (!is_quantized_type(out))
    ctx.fail("cannot quantize to {} (expected an 8/16-bit integer, int4/uint4/int2/uint2, "
             "float8 or float4 zero point)", dtype_name(out));
  const DType st = ctx.input_dtype(1);
  if (st != DType::kFloat && st != DType::kFloat16 && st != DType::kBFloat16 &&
      st != DType::kInt32 && st != DType::kFloat8E8M0)
    ctx.fail("y_scale must be float, float16, bfloat16, int32 or float8e8m0, got {}",
             dtype_name(st));
  const int64_t prec = ctx.attr_i("precision", 0);
  if (prec != 0) {
    auto p = static_cast<DType>(prec);
    if (!dtype_valid(static_cast<int32_t>(prec)) ||
        (p != DType::kFloat && p != DType::kFloat16 && p != DType::kBFloat16 &&
         p != DType::kDouble))
      ctx.fail("attribute 'precision' must name float, float16, bfloat16 or double, got {}", prec);
  }
  check_quant_params(ctx);
  set_like_x(ctx, out);
}

void dequantize_linear(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (!is_quantized_type(xt) && xt != DType::kInt32)
    ctx.fail("x has type {}, which is not a quantized type", dtype_name(xt));
  if (ctx.has_input(2) && ctx.input_dtype(2) != xt)
    ctx.fail("zero point type {} differs from x type {}", dtype_name(ctx.input_dtype(2)),
             dtype_name(xt));
  const DType st = ctx.input_dtype(1);
  if (st != DType::kFloat && st != DType::kFloat16 && st != DType::kBFloat16 &&
      st != DType::kFloat8E8M0)
    ctx.fail("x_scale must be float, float16, bfloat16 or float8e8m0, got {}", dtype_name(st));
  DType out = st;
  const int64_t od = ctx.attr_i("output_dtype", 0);
  if (od != 0) out = static_cast<DType>(od);
  if (out != DType::kFloat && out != DType::kFloat16 && out != DType::kBFloat16)
    ctx.fail("output type must be float, float16 or bfloat16, got {}{}",
             dtype_valid(static_cast<int32_t>(out)) ? dtype_name(out) : "an invalid code",
             od == 0 ? " (set 'output_dtype' when the scale is float8e8m0)" : "");
  check_quant_params(ctx);
  set_like_x(ctx, out);
}

void dynamic_quantize_linear(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kFloat)
    ctx.fail("x must be float, got {}", dtype_name(ctx.input_dtype(0)));
  set_like_x(ctx, DType::kUint8);
  ctx.set_output(1, DType::kFloat, {});
  ctx.set_output(2, DType::kUint8, {});
}

}  // namespace

void register_quant_shapes(ShapeRegistry& r) {
  r.add("", "QuantizeLinear", quantize_linear);
  r.add("", "DequantizeLinear", dequantize_linear);
  r.add("", "DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace onyx::shape
