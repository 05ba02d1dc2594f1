// Shape functions of the resize family: Resize, Upsample, GridSample, RoiAlign, AffineGrid.
#include <algorithm>
#include <cmath>

#include "base/half.h"
#include "shape/infer.h"

namespace onyx::shape {

namespace {

bool is_float_dtype(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

// Reads a float tensor (float/double/float16) value as doubles.
std::vector<double> read_floats(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat: v[i] = t.data<float>()[i]; break;
      case DType::kDouble: v[i] = t.data<double>()[i]; break;
      case DType::kFloat16: v[i] = static_cast<float>(t.data<Float16>()[i]); break;
      case DType::kBFloat16: v[i] = static_cast<float>(t.data<BFloat16>()[i]); break;
      default: break;
    }
  }
  return v;
}

// floor(in * scale) in double, as the ONNX reference computes the resized extent.
ir::Dim scaled_dim(InferContext& ctx, const ir::Dim& in, double scale) {
  if (scale == 1.0) return in;
  if (!in.known()) return ctx.fresh_dim();
  const double v = std::floor(static_cast<double>(in.value) * scale);
  if (!(v < 9.0e18)) ctx.fail("resized extent {} * {} is too large", in.value, scale);
  return ir::Dim(static_cast<int64_t>(v));
}

// 0: absent or an empty tensor (an empty `scales` means "not given"), 1: a known
// non-empty value, 2: given but its value is not known yet.
int input_state(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return 0;
  if (const Tensor* t = ctx.input_value(i)) return t->numel() > 0 ? 1 : 0;
  if (ctx.has_shape(i)) {
    for (const ir::Dim& d : ctx.input_shape(i))
      if (d.known() && d.value == 0) return 0;
  }
  return 2;
}

void set_scaled(InferContext& ctx, const ir::Shape& in, size_t scales_input) {
  std::vector<double> scales;
  if (const Tensor* t = ctx.input_value(scales_input)) {
    if (!is_float_dtype(t->dtype())) ctx.fail("scales must be a float tensor, got {}", dtype_name(t->dtype()));
    scales = read_floats(*t);
  }
  ir::Shape out(in.size());
  if (scales.empty()) {
    for (size_t d = 0; d < in.size(); ++d) out[d] = ctx.fresh_dim();
  } else {
    if (scales.size() != in.size())
      ctx.fail("scales has {} values, expected one per axis of X (rank {})", scales.size(), in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      if (!(scales[d] > 0)) ctx.fail("scales[{}] is {}, expected > 0", d, scales[d]);
      out[d] = scaled_dim(ctx, in[d], scales[d]);
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_upsample(InferContext& ctx) {
  if (!ctx.has_shape(0)) return ctx.set_output_unranked(0, ctx.input_dtype(0));
  const ir::Shape& in = ctx.input_shape(0);
  std::string mode = ctx.attr_s("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    ctx.fail("mode must be nearest or linear, got '{}'", mode);
  if (ctx.opset() < 7) ctx.fail("Upsample-1 (experimental) is not supported; use opset 7 or later");
  if (ctx.opset() < 9) {
    std::vector<float> s = ctx.node().attr_floats("scales");
    if (s.size() != in.size())
      ctx.fail("scales attribute has {} values, expected one per axis of X (rank {})", s.size(), in.size());
    ir::Shape out(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      if (!(s[d] > 0)) ctx.fail("scales[{}] is {}, expected > 0", d, s[d]);
      out[d] = scaled_dim(ctx, in[d], s[d]);
    }
    return ctx.set_output(0, ctx.input_dtype(0), out);
  }
  set_scaled(ctx, in, 1);
}

void infer_resize(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  std::string mode = ctx.attr_s("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.fail("mode must be nearest, linear or cubic, got '{}'", mode);
  if (mode != "nearest" && (dt == DType::kString || dt == DType::kBool))
    ctx.fail("mode '{}' needs a numeric X, got {}", mode, dtype_name(dt));
  if (ctx.opset() >= 11) {
    const std::string m = ctx.attr_s("coordinate_transformation_mode", "half_pixel");
    const bool known_ctm = m == "half_pixel" || m == "pytorch_half_pixel" || m == "align_corners" ||
                           m == "asymmetric" || m == "tf_crop_and_resize" ||
                           (m == "tf_half_pixel_for_nn" && ctx.opset() < 13) ||
                           (m == "half_pixel_symmetric" && ctx.opset() >= 19);
    if (!known_ctm)
      ctx.fail("coordinate_transformation_mode '{}' is not valid at opset {}", m, ctx.opset());
    const std::string nm = ctx.attr_s("nearest_mode", "round_prefer_floor");
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
      ctx.fail("nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '{}'", nm);
  } else if (mode == "cubic") {
    ctx.fail("mode cubic needs Resize-11 or later");
  }
  if (!ctx.has_shape(0)) return ctx.set_output_unranked(0, dt);
  const ir::Shape& in = ctx.input_shape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  if (ctx.opset() < 11) return set_scaled(ctx, in, 1);

  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
    std::vector<bool> seen(in.size(), false);
    for (int64_t& a : axes) {
      a = normalize_axis(ctx, a, rank);
      if (seen[static_cast<size_t>(a)]) ctx.fail("axes repeats axis {}", a);
      seen[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  const int scales_state = input_state(ctx, 2), sizes_state = input_state(ctx, 3);
  if (scales_state == 1 && sizes_state == 1) ctx.fail("only one of scales and sizes may be given");
  if (scales_state == 0 && sizes_state == 0) ctx.fail("one of scales and sizes must be given");

  ir::Shape out = in;
  if (scales_state != 1 && sizes_state != 1) {
    for (int64_t a : axes) out[static_cast<size_t>(a)] = ctx.fresh_dim();
    return ctx.set_output(0, dt, out);
  }
  if (scales_state == 1) {
    std::vector<double> scales = read_floats(*ctx.input_value(2));
    if (scales.size() != axes.size())
      ctx.fail("scales has {} values, expected {} (rank of X or length of axes)", scales.size(),
               axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0)) ctx.fail("scales[{}] is {}, expected > 0", i, scales[i]);
      size_t a = static_cast<size_t>(axes[i]);
      out[a] = scaled_dim(ctx, in[a], scales[i]);
    }
    return ctx.set_output(0, dt, out);
  }

  std::vector<int64_t> sizes;
  ctx.input_ints(3, sizes);
  if (sizes.size() != axes.size())
    ctx.fail("sizes has {} values, expected {} (rank of X or length of axes)", sizes.size(),
             axes.size());
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0) ctx.fail("sizes[{}] is {}, expected >= 0", i, sizes[i]);
  std::string policy = ctx.opset() >= 18 ? ctx.attr_s("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axes[i])] = ir::Dim(sizes[i]);
    return ctx.set_output(0, dt, out);
  }
  if (policy != "not_larger" && policy != "not_smaller")
    ctx.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '{}'", policy);
  bool known = true;
  for (int64_t a : axes) known = known && in[static_cast<size_t>(a)].known();
  if (!known) {
    for (int64_t a : axes) out[static_cast<size_t>(a)] = ctx.fresh_dim();
    return ctx.set_output(0, dt, out);
  }
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < axes.size(); ++i) {
    double s = static_cast<double>(sizes[i]) / static_cast<double>(in[static_cast<size_t>(axes[i])].value);
    scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (int64_t a : axes) {
    double v = scale * static_cast<double>(in[static_cast<size_t>(a)].value);
    if (!(v < 9.0e18)) ctx.fail("resized extent of axis {} is too large", a);
    out[static_cast<size_t>(a)] = ir::Dim(static_cast<int64_t>(v + 0.5));  // round half up
  }
  ctx.set_output(0, dt, out);
}

void infer_grid_sample(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float_dtype(ctx.input_dtype(1)))
    ctx.fail("grid must be a float tensor, got {}", dtype_name(ctx.input_dtype(1)));
  std::string mode = ctx.attr_s("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  if (mode != "linear" && mode != "bilinear" && mode != "nearest" && mode != "cubic" &&
      mode != "bicubic")
    ctx.fail("mode must be linear, nearest or cubic, got '{}'", mode);
  std::string pad = ctx.attr_s("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    ctx.fail("padding_mode must be zeros, border or reflection, got '{}'", pad);
  if (!ctx.has_shape(0) || !ctx.has_shape(1)) {
    if (ctx.has_shape(1)) {
      const ir::Shape& g = ctx.input_shape(1);
      ir::Shape out{g.empty() ? ir::Dim() : g[0], ir::Dim()};
      for (size_t i = 1; i + 1 < g.size(); ++i) out.push_back(g[i]);
      return ctx.set_output(0, dt, out);
    }
    return ctx.set_output_unranked(0, dt);
  }
  const ir::Shape& x = ctx.input_shape(0);
  const ir::Shape& g = ctx.input_shape(1);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, D1, ...), got rank {}", x.size());
  if (ctx.opset() < 20 && x.size() != 4)
    ctx.fail("GridSample-{} takes 4-D X (N, C, H, W), got rank {}", ctx.opset(), x.size());
  if (g.size() != x.size())
    ctx.fail("grid must have rank {} (N, D1_out, ..., {}), got rank {}", x.size(), x.size() - 2, g.size());
  const ir::Dim& last = g.back();
  if (last.known() && last.value != static_cast<int64_t>(x.size() - 2))
    ctx.fail("grid's last dim is {}, expected {} (the number of spatial dims)", last.value, x.size() - 2);
  if (x[0].known() && g[0].known() && x[0].value != g[0].value)
    ctx.fail("grid batch {} differs from X batch {}", g[0].value, x[0].value);
  ir::Shape out{x[0].known() ? x[0] : g[0], x[1]};
  for (size_t i = 1; i + 1 < g.size(); ++i) out.push_back(g[i]);
  ctx.set_output(0, dt, out);
}

void infer_roi_align(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float_dtype(dt)) ctx.fail("X must be a float tensor, got {}", dtype_name(dt));
  std::string mode = ctx.attr_s("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, got '{}'", mode);
  if (ctx.opset() >= 16) {
    std::string ctm = ctx.attr_s("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      ctx.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '{}'", ctm);
  }
  const int64_t oh = ctx.attr_i("output_height", 1), ow = ctx.attr_i("output_width", 1);
  if (oh <= 0 || ow <= 0) ctx.fail("output_height and output_width must be positive, got {} and {}", oh, ow);
  if (ctx.attr_i("sampling_ratio", 0) < 0) ctx.fail("sampling_ratio must be >= 0");
  ir::Dim rois, channels;
  if (ctx.has_shape(0)) {
    const ir::Shape& x = ctx.input_shape(0);
    if (x.size() != 4) ctx.fail("X must be 4-D (N, C, H, W), got rank {}", x.size());
    channels = x[1];
  }
  if (ctx.has_shape(1)) {
    const ir::Shape& r = ctx.input_shape(1);
    if (r.size() != 2 || (r[1].known() && r[1].value != 4))
      ctx.fail("rois must have shape (num_rois, 4), got {}", ir::shape_str(r));
    rois = r[0];
  }
  if (ctx.has_shape(2)) {
    const ir::Shape& b = ctx.input_shape(2);
    if (b.size() != 1) ctx.fail("batch_indices must be 1-D (num_rois), got rank {}", b.size());
    if (rois.known() && b[0].known() && rois.value != b[0].value)
      ctx.fail("batch_indices has {} entries but rois has {}", b[0].value, rois.value);
    if (!rois.known()) rois = b[0];
  }
  ctx.set_output(0, dt, {rois, channels, ir::Dim(oh), ir::Dim(ow)});
}

void infer_affine_grid(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float_dtype(dt)) ctx.fail("theta must be a float tensor, got {}", dtype_name(dt));
  int64_t spatial = -1;
  ir::Dim n;
  if (ctx.has_shape(0)) {
    const ir::Shape& th = ctx.input_shape(0);
    if (th.size() != 3) ctx.fail("theta must be (N, 2, 3) or (N, 3, 4), got {}", ir::shape_str(th));
    n = th[0];
    if (th[1].known()) {
      spatial = th[1].value;
      if ((spatial != 2 && spatial != 3) || (th[2].known() && th[2].value != spatial + 1))
        ctx.fail("theta must be (N, 2, 3) or (N, 3, 4), got {}", ir::shape_str(th));
    }
  }
  std::vector<int64_t> size;
  if (ctx.input_ints(1, size)) {
    if (size.size() != 4 && size.size() != 5)
      ctx.fail("size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values, got {}", size.size());
    int64_t sp = static_cast<int64_t>(size.size()) - 2;
    if (spatial >= 0 && spatial != sp)
      ctx.fail("theta is for {}-D but size has {} values", spatial, size.size());
    for (int64_t v : size)
      if (v < 0) ctx.fail("size values must be >= 0, got {}", v);
    if (n.known() && n.value != size[0])
      ctx.fail("theta batch {} differs from size[0] {}", n.value, size[0]);
    ir::Shape out{ir::Dim(size[0])};
    for (size_t i = 2; i < size.size(); ++i) out.push_back(ir::Dim(size[i]));
    out.push_back(ir::Dim(sp));
    return ctx.set_output(0, dt, out);
  }
  if (spatial < 0 && ctx.has_shape(1)) {
    const ir::Shape& s = ctx.input_shape(1);
    if (s.size() == 1 && s[0].known()) spatial = s[0].value - 2;
  }
  if (spatial != 2 && spatial != 3) return ctx.set_output_unranked(0, dt);
  ir::Shape out{n.known() ? n : ctx.fresh_dim()};
  for (int64_t i = 0; i < spatial; ++i) out.push_back(ctx.fresh_dim());
  out.push_back(ir::Dim(spatial));
  ctx.set_output(0, dt, out);
}

}  // namespace

void register_resize_shapes(ShapeRegistry& r) {
  r.add("", "Resize", infer_resize);
  r.add("", "Upsample", infer_upsample);
  r.add("", "GridSample", infer_grid_sample);
  r.add("", "RoiAlign", infer_roi_align);
  r.add("", "AffineGrid", infer_affine_grid);
}

}  // namespace onyx::shape
