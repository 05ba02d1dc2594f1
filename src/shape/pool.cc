// Shape functions of the pool family: MaxPool, AveragePool, LpPool, the Global*Pool
// ops, MaxUnpool and MaxRoiPool.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

/// Output extent of a pooling window along one axis, following the opset-19+ rules
/// (which agree with the older ones wherever those were defined): explicit pads use
/// floor or ceil, and in ceil mode a last window that would start inside the end
/// padding is dropped.
int64_t pool_out(const InferContext& ctx, size_t i, int64_t in, int64_t k, int64_t s, int64_t d,
                 int64_t pb, int64_t pe, const std::string& auto_pad, bool ceil_mode) {
  int64_t ek = checked_add(ctx, checked_mul(ctx, k - 1, d, "(kernel_shape - 1) * dilations"), 1,
                           "the dilated kernel extent");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return in / s + (in % s != 0);
  if (auto_pad == "VALID") {
    if (in < ek) ctx.fail("spatial axis {}: input extent {} is smaller than the dilated kernel {}", i, in, ek);
    return (in - ek) / s + 1;
  }
  int64_t padded = checked_add(ctx, checked_add(ctx, in, pb, "a padded spatial extent"), pe,
                               "a padded spatial extent");
  int64_t span = padded - ek;
  if (span < 0)
    ctx.fail("spatial axis {}: padded input extent {} is smaller than the dilated kernel {}", i,
             padded, ek);
  int64_t out = ceil_mode ? span / s + (span % s != 0) + 1 : span / s + 1;
  int64_t last_start = 0;  // where the last window starts; past in + pb it is dropped
  if (ceil_mode && (!mul_fits(out - 1, s, last_start) || last_start >= in + pb)) --out;
  return out;
}

/// MaxPool, AveragePool and LpPool: [N, C, D...] -> [N, C, O...]; MaxPool's optional
/// second output (Indices) has the same shape with dtype int64.
void infer_pool(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  bool is_max = ctx.node().op_type == "MaxPool";
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    if (is_max) ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got rank {}", x.size());
  size_t nsp = x.size() - 2;
  if (!ctx.has_attr("kernel_shape")) ctx.fail("attribute kernel_shape is required");
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> dilations = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  bool ceil_mode = ctx.attr_i("ceil_mode", 0) != 0;
  if (kernel.size() != nsp) ctx.fail("kernel_shape has {} values, expected {} (one per spatial axis)", kernel.size(), nsp);
  if (strides.size() != nsp) ctx.fail("strides has {} values, expected {}", strides.size(), nsp);
  if (dilations.size() != nsp) ctx.fail("dilations has {} values, expected {}", dilations.size(), nsp);
  if (pads.size() != 2 * nsp) ctx.fail("pads has {} values, expected {}", pads.size(), 2 * nsp);
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    ctx.fail("auto_pad '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", auto_pad);
  if (is_max && ctx.attr_i("storage_order", 0) != 0 && ctx.attr_i("storage_order", 0) != 1)
    ctx.fail("storage_order must be 0 or 1, got {}", ctx.attr_i("storage_order", 0));
  for (size_t i = 0; i < nsp; ++i) {
    if (kernel[i] < 1) ctx.fail("kernel_shape[{}] = {} must be >= 1", i, kernel[i]);
    if (strides[i] < 1) ctx.fail("strides[{}] = {} must be >= 1", i, strides[i]);
    if (dilations[i] < 1) ctx.fail("dilations[{}] = {} must be >= 1", i, dilations[i]);
    if (pads[i] < 0 || pads[i + nsp] < 0) ctx.fail("pads must be >= 0 on axis {}", i);
  }
  ir::Shape out{x[0], x[1]};
  for (size_t i = 0; i < nsp; ++i) {
    if (!x[i + 2].known()) {
      out.push_back(ctx.fresh_dim());
      continue;
    }
    out.push_back(pool_out(ctx, i, x[i + 2].value, kernel[i], strides[i], dilations[i], pads[i],
                           pads[i + nsp], auto_pad, ceil_mode));
  }
  if (is_max) ctx.set_output(1, DType::kInt64, out);
  ctx.set_output(0, dt, std::move(out));
}

/// Global*Pool: [N, C, D...] -> [N, C, 1...].
void infer_global_pool(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 2) ctx.fail("X must have rank >= 2 (N, C, spatial...), got rank {}", x.size());
  ir::Shape out{x[0], x[1]};
  for (size_t i = 2; i < x.size(); ++i) out.push_back(1);
  ctx.set_output(0, dt, std::move(out));
}

void infer_max_unpool(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (ctx.has_shape(0) && ctx.input_rank(0) >= 3) {  // attribute sizes, also with output_shape
    size_t nsp = ctx.input_rank(0) - 2;
    size_t k = ctx.attr_ints("kernel_shape").size();
    size_t st = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1)).size();
    size_t p = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0)).size();
    if (k != nsp) ctx.fail("kernel_shape has {} values, expected {} (one per spatial axis)", k, nsp);
    if (st != nsp) ctx.fail("strides has {} values, expected {}", st, nsp);
    if (p != 2 * nsp) ctx.fail("pads has {} values, expected {}", p, 2 * nsp);
    for (int64_t v : ctx.attr_ints("kernel_shape"))
      if (v < 1) ctx.fail("kernel_shape values must be >= 1, got {}", v);
    for (int64_t v : ctx.attr_ints("strides"))
      if (v < 1) ctx.fail("strides values must be >= 1, got {}", v);
    for (int64_t v : ctx.attr_ints("pads"))
      if (v < 0) ctx.fail("pads values must be >= 0, got {}", v);
  }
  if (ctx.has_input(2)) {
    std::vector<int64_t> shape;
    if (ctx.input_ints(2, shape)) {
      check_rank(ctx, static_cast<int64_t>(shape.size()), "the output (input 'output_shape')");
      ir::Shape out;
      for (int64_t d : shape) {
        if (d < 0) ctx.fail("output_shape values must be >= 0, got {}", d);
        out.push_back(d);
      }
      if (ctx.has_shape(0) && out.size() != ctx.input_rank(0))
        ctx.fail("output_shape has {} values but X has rank {}", out.size(), ctx.input_rank(0));
      ctx.set_output(0, dt, std::move(out));
      return;
    }
    if (ctx.has_shape(2) && ctx.input_shape(2).size() == 1 && ctx.input_shape(2)[0].known()) {
      ctx.set_output(
          0, dt,
          fresh_shape(ctx, ctx.input_shape(2)[0].value, "the output (input 'output_shape')"));
    } else {
      ctx.set_output_unranked(0, dt);
    }
    return;
  }
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got rank {}", x.size());
  size_t nsp = x.size() - 2;
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (kernel.size() != nsp) ctx.fail("kernel_shape has {} values, expected {} (one per spatial axis)", kernel.size(), nsp);
  if (strides.size() != nsp) ctx.fail("strides has {} values, expected {}", strides.size(), nsp);
  if (pads.size() != 2 * nsp) ctx.fail("pads has {} values, expected {}", pads.size(), 2 * nsp);
  ir::Shape out{x[0], x[1]};
  for (size_t i = 0; i < nsp; ++i) {
    if (!x[i + 2].known()) {
      out.push_back(ctx.fresh_dim());
      continue;
    }
    const char* what = "the output extent ((input - 1) * strides + kernel_shape - pads)";
    int64_t o =
        checked_add(ctx, checked_mul(ctx, x[i + 2].value - 1, strides[i], what), kernel[i], what);
    o = checked_sub(ctx, o, checked_add(ctx, pads[i], pads[i + nsp], "pads"), what);
    if (o < 0) ctx.fail("spatial axis {}: output extent {} is negative (check pads)", i, o);
    out.push_back(o);
  }
  ctx.set_output(0, dt, std::move(out));
}

void infer_max_roi_pool(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> pooled = ctx.attr_ints("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values [h, w], got {}", pooled.size());
  if (pooled[0] < 1 || pooled[1] < 1) ctx.fail("pooled_shape values must be >= 1");
  ir::Dim rois = ctx.fresh_dim();
  if (ctx.has_shape(1)) {
    const ir::Shape& r = ctx.input_shape(1);
    if (r.size() != 2) ctx.fail("rois must be 2-D [num_rois, 5], got rank {}", r.size());
    if (r[1].known() && r[1].value != 5) ctx.fail("rois must be [num_rois, 5], got {} columns", r[1].value);
    rois = r[0];
  }
  ir::Dim c = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    const ir::Shape& x = ctx.input_shape(0);
    if (x.size() != 4) ctx.fail("X must be 4-D (N, C, H, W), got rank {}", x.size());
    c = x[1];
  }
  ctx.set_output(0, dt, {rois, c, pooled[0], pooled[1]});
}

}  // namespace

void register_pool_shapes(ShapeRegistry& r) {
  r.add("", "MaxPool", infer_pool);
  r.add("", "AveragePool", infer_pool);
  r.add("", "LpPool", infer_pool);
  r.add("", "GlobalMaxPool", infer_global_pool);
  r.add("", "GlobalAveragePool", infer_global_pool);
  r.add("", "GlobalLpPool", infer_global_pool);
  r.add("", "MaxUnpool", infer_max_unpool);
  r.add("", "MaxRoiPool", infer_max_roi_pool);
}

}  // namespace onyx::shape
