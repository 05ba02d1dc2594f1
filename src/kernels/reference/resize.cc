// Reference kernels of the resize family: Resize (opsets 10 to 19+) and Upsample (7, 9).
// GridSample, RoiAlign and AffineGrid live in resize_sample.cc.
//
// Every resized axis is reduced to "taps": for each output index, the input indices
// and weights that make it (or a flag that it takes extrapolation_value). The taps
// follow the ONNX reference implementation exactly, including its quirks (the
// fractional output width in align_corners / tf_crop_and_resize, -0.5 for
// pytorch_half_pixel at width 1). Nearest mode gathers elements of any dtype; linear
// and cubic modes resample one axis at a time in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_resize_sample(Registry& r);  // resize_sample.cc

namespace {

struct Tap {
  int64_t index;
  double weight;
};

struct AxisPlan {
  int64_t in = 0, out = 0;
  bool identity = true;
  std::vector<std::vector<Tap>> taps;  // per output index
  std::vector<uint8_t> extrapolate;    // per output index
};

struct Params {
  std::string mode;          // nearest, linear, cubic
  std::string ctm;           // coordinate_transformation_mode
  std::string nearest_mode;  // round_prefer_floor, ..., or "simple" before opset 11
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Weights of the taps at offsets start .. start+n-1 from the base index (see make_taps).
std::vector<double> coeffs(const Params& p, double ratio, double scale, int64_t& start) {
  if (p.mode == "linear") {
    if (!p.antialias) {
      start = 0;
      return {1 - ratio, ratio};
    }
    const double s = std::min(scale, 1.0);
    start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    const int64_t n = 2 - 2 * start;
    std::vector<double> c(static_cast<size_t>(n));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = 1 - std::fabs((static_cast<double>(start + i) - ratio) * s);
      c[static_cast<size_t>(i)] = std::clamp(v, 0.0, 1.0);
      sum += c[static_cast<size_t>(i)];
    }
    for (double& v : c) v /= sum;
    return c;
  }
  // cubic
  if (!p.antialias) {
    start = -1;
    return {cubic_kernel(ratio + 1, p.cubic_a), cubic_kernel(ratio, p.cubic_a),
            cubic_kernel(1 - ratio, p.cubic_a), cubic_kernel(2 - ratio, p.cubic_a)};
  }
  const double s = std::min(scale, 1.0);
  start = static_cast<int64_t>(std::floor(-2 / s) + 1);
  const int64_t n = 2 - 2 * start;
  std::vector<double> c(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    c[static_cast<size_t>(i)] = cubic_kernel(s * (static_cast<double>(start + i) - ratio), p.cubic_a);
    sum += c[static_cast<size_t>(i)];
  }
  for (double& v : c) v /= sum;
  return c;
}

// Maps output index x to a coordinate of the input axis; false means "extrapolate".
bool original_coord(const Params& p, int64_t x_int, int64_t in, int64_t out_int, double scale,
                    double roi_start, double roi_end, double& x_ori) {
  const double x = static_cast<double>(x_int);
  const double len = static_cast<double>(in);
  const double out_w = scale * len;  // fractional, as in the ONNX reference
  const std::string& m = p.ctm;
  if (m == "half_pixel") {
    x_ori = (x + 0.5) / scale - 0.5;
  } else if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_int) / out_w;
    const double offset = len / 2 * (1 - adjustment);
    x_ori = offset + (x + 0.5) / scale - 0.5;
  } else if (m == "pytorch_half_pixel") {
    x_ori = out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (m == "align_corners") {
    x_ori = out_w == 1 ? 0.0 : x * (len - 1) / (out_w - 1);
  } else if (m == "asymmetric") {
    x_ori = x / scale;
  } else if (m == "tf_half_pixel_for_nn") {
    x_ori = (x + 0.5) / scale;
  } else {  // tf_crop_and_resize
    const double span = roi_end - roi_start;
    x_ori = out_w == 1 ? span * (len - 1) / 2 : x * span * (len - 1) / (out_w - 1);
    x_ori += roi_start * (len - 1);
    if (!(x_ori >= 0 && x_ori <= len - 1)) return false;  // a NaN roi extrapolates too
  }
  // Never a NaN or infinite coordinate past this point: it would become an index.
  return std::isfinite(x_ori);
}

AxisPlan make_taps(const Params& p, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  AxisPlan a;
  a.in = in;
  a.out = out;
  a.taps.resize(static_cast<size_t>(out));
  a.extrapolate.assign(static_cast<size_t>(out), 0);
  auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t x = 0; x < out; ++x) {
    std::vector<Tap>& taps = a.taps[static_cast<size_t>(x)];
    double xo = 0;
    if (!original_coord(p, x, in, out, scale, roi_start, roi_end, xo)) {
      a.extrapolate[static_cast<size_t>(x)] = 1;
      a.identity = false;
      continue;
    }
    if (p.mode == "nearest") {
      int64_t idx;
      if (p.nearest_mode == "simple") {
        idx = static_cast<int64_t>(scale < 1 ? std::ceil(xo) : std::floor(xo));
      } else if (xo == std::floor(xo)) {
        idx = static_cast<int64_t>(xo);
      } else {
        const double fl = std::floor(xo), ratio = xo - fl;
        bool up;
        if (p.nearest_mode == "round_prefer_ceil") up = ratio >= 0.5;
        else if (p.nearest_mode == "floor") up = false;
        else if (p.nearest_mode == "ceil") up = true;
        else up = ratio > 0.5;  // round_prefer_floor
        idx = static_cast<int64_t>(fl) + (up ? 1 : 0);
      }
      taps.push_back({clamp_index(idx), 1.0});
    } else {
      // The reference takes ratio in (0, 1]: an integral coordinate x uses base x - 1
      // with ratio 1. Tap k sits at base + start + k.
      const double fl = std::floor(xo);
      const bool integral = xo == fl;
      const double ratio = integral ? 1.0 : xo - fl;
      const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
      int64_t start = 0;
      std::vector<double> c = coeffs(p, ratio, scale, start);
      if (p.exclude_outside) {
        double sum = 0;
        for (size_t k = 0; k < c.size(); ++k) {
          const int64_t i = base + start + static_cast<int64_t>(k);
          if (i < 0 || i >= in) c[k] = 0;
          sum += c[k];
        }
        if (sum != 0)
          for (double& v : c) v /= sum;
      }
      for (size_t k = 0; k < c.size(); ++k) {
        if (c[k] == 0) continue;
        taps.push_back({clamp_index(base + start + static_cast<int64_t>(k)), c[k]});
      }
    }
    if (!(taps.size() == 1 && taps[0].index == x && taps[0].weight == 1.0)) a.identity = false;
  }
  if (in != out) a.identity = false;
  return a;
}

// Nearest: every output element copies one input element (or takes the extrapolation value).
template <typename T>
void gather_nearest(const Tensor& X, Tensor& Y, const std::vector<AxisPlan>& plans, T extrap) {
  const size_t rank = plans.size();
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * X.dim(d);
  const T* src = X.data<T>();
  T* dst = Y.data<T>();
  std::vector<int64_t> pos(rank, 0);
  const int64_t total = Y.numel();
  for (int64_t o = 0; o < total; ++o) {
    int64_t off = 0;
    bool ext = false;
    for (size_t d = 0; d < rank; ++d) {
      const size_t x = static_cast<size_t>(pos[d]);
      if (plans[d].extrapolate[x]) {
        ext = true;
        break;
      }
      off += plans[d].taps[x][0].index * in_stride[d];
    }
    dst[o] = ext ? extrap : src[off];
    for (size_t d = rank; d-- > 0;) {
      if (++pos[d] < plans[d].out) break;
      pos[d] = 0;
    }
  }
}

// Resamples axis `axis` of a row-major buffer with dims `dims` (updated to the new extent).
std::vector<double> resample_axis(const std::vector<double>& src, Dims& dims, size_t axis,
                                  const AxisPlan& plan, double extrap) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t in = plan.in, out = plan.out;
  // Between two axes the buffer holds output extents before `axis` and input ones after
  // it, a product neither X nor Y bounds.
  std::vector<double> dst(checked_count({outer, out, inner}, "the intermediate of a Resize"), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    const double* s = src.data() + o * in * inner;
    double* t = dst.data() + o * out * inner;
    for (int64_t j = 0; j < out; ++j) {
      double* row = t + j * inner;
      if (plan.extrapolate[static_cast<size_t>(j)]) {
        std::fill(row, row + inner, extrap);
        continue;
      }
      for (const Tap& tap : plan.taps[static_cast<size_t>(j)]) {
        const double* srow = s + tap.index * inner;
        for (int64_t k = 0; k < inner; ++k) row[k] += tap.weight * srow[k];
      }
    }
  }
  dims[axis] = out;
  return dst;
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    if (std::isnan(v)) return T(0);
    v = std::round(v);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

std::vector<double> read_floats(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kFloat:
      for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<float>()[k];
      break;
    case DType::kDouble:
      for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<double>()[k];
      break;
    case DType::kFloat16:
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(t.data<Float16>()[k]);
      break;
    case DType::kBFloat16:
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(t.data<BFloat16>()[k]);
      break;
    default: ctx.fail("{} must be a float tensor, got {}", what, dtype_name(t.dtype()));
  }
  return v;
}

// Shared by Resize and Upsample once the per-axis scales and roi are known.
void run_resize(KernelContext& ctx, const Params& p, const std::vector<double>& scales,
                const std::vector<double>& roi) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const size_t rank = X.rank();
  if (Y.rank() != rank) ctx.fail("output rank {} differs from input rank {}", Y.rank(), rank);
  if (Y.numel() == 0) return;
  std::vector<AxisPlan> plans;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = X.dim(d), out = Y.dim(d);
    if (in == 0) ctx.fail("cannot resize axis {} of extent 0 to {}", d, out);
    if (!(scales[d] > 0) || !std::isfinite(scales[d]))
      ctx.fail("scale of axis {} is {}, expected a finite value > 0", d, scales[d]);
    plans.push_back(make_taps(p, in, out, scales[d], roi[d], roi[rank + d]));
  }
  if (p.mode == "nearest") {
    const DType dt = X.dtype();
    if (dt == DType::kString) {
      gather_nearest<std::string>(X, Y, plans, std::string());
      return;
    }
    if (dt == DType::kBool) {
      gather_nearest<uint8_t>(X, Y, plans, p.extrapolation != 0 ? 1 : 0);
      return;
    }
    dispatch_numeric(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      gather_nearest<T>(X, Y, plans, from_double<T>(p.extrapolation));
    }, "Resize");
    return;
  }
  dispatch_numeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = X.data<T>();
    std::vector<double> buf(static_cast<size_t>(X.numel()));
    for (size_t k = 0; k < buf.size(); ++k) buf[k] = to_double(src[k]);
    Dims dims = X.dims();
    for (size_t d = 0; d < rank; ++d)
      if (!plans[d].identity) buf = resample_axis(buf, dims, d, plans[d], p.extrapolation);
    T* dst = Y.data<T>();
    for (size_t k = 0; k < buf.size(); ++k) dst[k] = from_double<T>(buf[k]);
  }, "Resize");
}

void check_mode(const KernelContext& ctx, Params& p) {
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    ctx.fail("mode must be nearest, linear or cubic, got '{}'", p.mode);
  if (p.mode != "nearest" && (ctx.input(0).dtype() == DType::kString || ctx.input(0).dtype() == DType::kBool))
    ctx.fail("mode '{}' needs a numeric X, got {}", p.mode, dtype_name(ctx.input(0).dtype()));
}

// Upsample-7/9 and Resize-10: asymmetric coordinates, nearest takes floor when
// upsampling and ceil when downsampling (onnxruntime's behavior for these opsets).
void run_legacy(KernelContext& ctx, std::vector<double> scales) {
  Params p;
  p.mode = ctx.attr_s("mode", "nearest");
  check_mode(ctx, p);
  if (p.mode == "cubic") ctx.fail("mode cubic needs Resize-11 or later");
  p.ctm = "asymmetric";
  p.nearest_mode = "simple";
  const size_t rank = ctx.input(0).rank();
  if (scales.size() != rank)
    ctx.fail("scales has {} values, expected one per axis of X (rank {})", scales.size(), rank);
  std::vector<double> roi(2 * rank, 0.0);
  std::fill(roi.begin() + static_cast<ptrdiff_t>(rank), roi.end(), 1.0);
  run_resize(ctx, p, scales, roi);
}

void upsample_kernel(KernelContext& ctx) {
  if (ctx.opset() < 7) ctx.fail("Upsample-1 (experimental) is not supported; use opset 7 or later");
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float s : ctx.attr_floats("scales")) scales.push_back(s);
  } else {
    scales = read_floats(ctx, 1, "scales");
  }
  run_legacy(ctx, scales);
}

void resize_kernel(KernelContext& ctx) {
  if (ctx.opset() < 11) return run_legacy(ctx, read_floats(ctx, 1, "scales"));
  const Tensor& X = ctx.input(0);
  const size_t rank = X.rank();
  Params p;
  p.mode = ctx.attr_s("mode", "nearest");
  check_mode(ctx, p);
  p.ctm = ctx.attr_s("coordinate_transformation_mode", "half_pixel");
  const std::string& m = p.ctm;
  const bool known_ctm = m == "half_pixel" || m == "pytorch_half_pixel" || m == "align_corners" ||
                         m == "asymmetric" || m == "tf_crop_and_resize" ||
                         (m == "tf_half_pixel_for_nn" && ctx.opset() < 13) ||
                         (m == "half_pixel_symmetric" && ctx.opset() >= 19);
  if (!known_ctm)
    ctx.fail("coordinate_transformation_mode '{}' is not valid at opset {}", m, ctx.opset());
  p.nearest_mode = ctx.attr_s("nearest_mode", "round_prefer_floor");
  if (p.nearest_mode != "round_prefer_floor" && p.nearest_mode != "round_prefer_ceil" &&
      p.nearest_mode != "floor" && p.nearest_mode != "ceil")
    ctx.fail("nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '{}'",
             p.nearest_mode);
  p.cubic_a = ctx.attr_f("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_i("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attr_f("extrapolation_value", 0.f);
  p.antialias = ctx.opset() >= 18 && ctx.attr_i("antialias", 0) != 0 && p.mode != "nearest";

  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
    for (int64_t& a : axes) {
      if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank))
        ctx.fail("axis {} is out of range for rank {}", a, rank);
      if (a < 0) a += static_cast<int64_t>(rank);
    }
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  const size_t na = axes.size();

  std::vector<double> scales(rank, 1.0);
  const bool has_scales = ctx.has_input(2) && ctx.input(2).numel() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.input(3).numel() > 0;
  if (has_scales && has_sizes) ctx.fail("only one of scales and sizes may be given");
  if (has_scales) {
    std::vector<double> s = read_floats(ctx, 2, "scales");
    if (s.size() != na) ctx.fail("scales has {} values, expected {}", s.size(), na);
    for (size_t i = 0; i < na; ++i) scales[static_cast<size_t>(axes[i])] = s[i];
  } else if (has_sizes) {
    std::vector<int64_t> sizes = ctx.input_ints(3);
    if (sizes.size() != na) ctx.fail("sizes has {} values, expected {}", sizes.size(), na);
    const std::string policy =
        ctx.opset() >= 18 ? ctx.attr_s("keep_aspect_ratio_policy", "stretch") : "stretch";
    for (size_t i = 0; i < na; ++i)
      if (X.dim(static_cast<size_t>(axes[i])) == 0) ctx.fail("cannot resize axis {} of extent 0", axes[i]);
    if (policy == "stretch") {
      for (size_t i = 0; i < na; ++i) {
        const size_t a = static_cast<size_t>(axes[i]);
        scales[a] = static_cast<double>(sizes[i]) / static_cast<double>(X.dim(a));
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < na; ++i) {
        const double s = static_cast<double>(sizes[i]) / static_cast<double>(X.dim(static_cast<size_t>(axes[i])));
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      for (int64_t a : axes) scales[static_cast<size_t>(a)] = scale;
    } else {
      ctx.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '{}'", policy);
    }
  } else {
    ctx.fail("one of scales and sizes must be given");
  }

  std::vector<double> roi(2 * rank, 0.0);
  std::fill(roi.begin() + static_cast<ptrdiff_t>(rank), roi.end(), 1.0);
  if (p.ctm == "tf_crop_and_resize") {
    if (!ctx.has_input(1) || ctx.input(1).numel() == 0)
      ctx.fail("coordinate_transformation_mode tf_crop_and_resize needs the roi input");
    std::vector<double> r = read_floats(ctx, 1, "roi");
    if (r.size() != 2 * na) ctx.fail("roi has {} values, expected {} (2 per resized axis)", r.size(), 2 * na);
    for (size_t i = 0; i < na; ++i) {
      roi[static_cast<size_t>(axes[i])] = r[i];
      roi[rank + static_cast<size_t>(axes[i])] = r[na + i];
    }
  }
  run_resize(ctx, p, scales, roi);
}

}  // namespace

void register_resize(Registry& r) {
  r.add("", "Resize", 10, 1000, all_types(), resize_kernel);
  r.add("", "Upsample", 7, 1000, all_types(), upsample_kernel);
  register_resize_sample(r);
}

}  // namespace onyx::kernels
