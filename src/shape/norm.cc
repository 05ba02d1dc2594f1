// Shape functions of the norm family: BatchNormalization, LayerNormalization,
// InstanceNormalization, GroupNormalization, LRN, LpNormalization,
// MeanVarianceNormalization, RMSNormalization.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

/// Fails unless input `i` is 1-D with `c` values (when both are known).
void check_per_channel(const InferContext& ctx, size_t i, const ir::Dim& c, const char* what) {
  if (!ctx.has_shape(i)) return;
  const ir::Shape& s = ctx.input_shape(i);
  if (s.size() != 1) ctx.fail("{} (input {}) must be 1-D, got rank {}", what, i, s.size());
  if (s[0].known() && c.known() && s[0].value != c.value)
    ctx.fail("{} (input {}) has {} values, expected {} (one per channel)", what, i, s[0].value, c.value);
}

void infer_batch_norm(InferContext& ctx) {
  propagate(ctx, 0, 0);
  ir::Dim c = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    const ir::Shape& x = ctx.input_shape(0);
    if (x.empty()) ctx.fail("X must have rank >= 1");
    c = x.size() >= 2 ? x[1] : ir::Dim(1);
  }
  // Before opset 9 a non-spatial BatchNormalization takes [C, D...] statistics; only
  // the spatial form (1-D per-channel statistics) is checked here.
  bool spatial = ctx.opset() >= 9 || ctx.attr_i("spatial", 1) != 0;
  if (spatial) {
    for (size_t i = 1; i < 5; ++i) check_per_channel(ctx, i, c, i == 1 ? "scale" : i == 2 ? "B" : i == 3 ? "mean" : "var");
  }
  // Extra outputs: opset 14+ (training_mode): running_mean, running_var.
  // Older: mean, var, saved_mean, saved_var. All are per-channel vectors.
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    if (ctx.opset() >= 14 && i > 2) ctx.fail("BatchNormalization-{} has at most 3 outputs", ctx.opset());
    if (ctx.opset() >= 14 && ctx.attr_i("training_mode", 0) == 0)
      ctx.fail("output {} is only produced with training_mode=1 (this node has training_mode=0)", i);
    size_t src = i == 2 || i == 4 ? 4 : 3;
    DType dt = ctx.has_input(src) ? ctx.input_dtype(src) : ctx.input_dtype(0);
    if (spatial)
      ctx.set_output(i, dt, {c});
    else if (ctx.has_shape(src))
      ctx.set_output(i, dt, ctx.input_shape(src));
    else
      ctx.set_output_unranked(i, dt);
  }
}

/// DType named by a stash_type attribute (a TensorProto data type code).
DType stash_dtype(const InferContext& ctx) {
  int64_t st = ctx.attr_i("stash_type", 1);
  if (st != static_cast<int64_t>(DType::kFloat) && st != static_cast<int64_t>(DType::kDouble) &&
      st != static_cast<int64_t>(DType::kFloat16) && st != static_cast<int64_t>(DType::kBFloat16))
    ctx.fail("stash_type {} is not a floating-point data type", st);
  return static_cast<DType>(st);
}

void infer_layer_norm(InferContext& ctx) {
  propagate(ctx, 0, 0);
  DType st = stash_dtype(ctx);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(1, st);
    ctx.set_output_unranked(2, st);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 1) ctx.fail("X must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.attr_i("axis", -1), rank);
  ir::Shape stat(x.begin(), x.begin() + axis);
  for (int64_t i = axis; i < rank; ++i) stat.push_back(1);
  ctx.set_output(1, st, stat);
  ctx.set_output(2, st, stat);
}

void infer_rms_norm(InferContext& ctx) {
  stash_dtype(ctx);
  DType v = ctx.input_dtype(1);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, v);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.empty()) ctx.fail("X must have rank >= 1");
  normalize_axis(ctx, ctx.attr_i("axis", -1), static_cast<int64_t>(x.size()));
  ctx.set_output(0, v, x);
}

void infer_instance_norm(InferContext& ctx) {
  propagate(ctx, 0, 0);
  if (!ctx.has_shape(0)) return;
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, D...), got rank {}", x.size());
  check_per_channel(ctx, 1, x[1], "scale");
  check_per_channel(ctx, 2, x[1], "B");
}

void infer_group_norm(InferContext& ctx) {
  propagate(ctx, 0, 0);
  if (!ctx.has_attr("num_groups")) ctx.fail("attribute num_groups is required");
  int64_t groups = ctx.attr_i("num_groups", 1);
  if (groups < 1) ctx.fail("num_groups = {} must be >= 1", groups);
  if (ctx.opset() >= 21) stash_dtype(ctx);
  if (!ctx.has_shape(0)) return;
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 2) ctx.fail("X must have rank >= 2 (N, C, D...), got rank {}", x.size());
  if (x[1].known() && x[1].value % groups != 0)
    ctx.fail("channels {} are not divisible by num_groups {}", x[1].value, groups);
  // Opset 18 takes scale and bias per group; opset 21 per channel.
  ir::Dim per = ctx.opset() >= 21 ? x[1] : ir::Dim(groups);
  check_per_channel(ctx, 1, per, "scale");
  check_per_channel(ctx, 2, per, "bias");
}

void infer_lrn(InferContext& ctx) {
  propagate(ctx, 0, 0);
  if (!ctx.has_attr("size")) ctx.fail("attribute size is required");
  if (ctx.attr_i("size", 1) < 1) ctx.fail("size = {} must be >= 1", ctx.attr_i("size", 1));
  if (ctx.has_shape(0) && ctx.input_rank(0) < 2)
    ctx.fail("X must have rank >= 2 (N, C, D...), got rank {}", ctx.input_rank(0));
}

void infer_lp_norm(InferContext& ctx) {
  propagate(ctx, 0, 0);
  int64_t p = ctx.attr_i("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got {}", p);
  if (ctx.has_shape(0)) {
    int64_t rank = static_cast<int64_t>(ctx.input_rank(0));
    if (rank < 1) ctx.fail("X must have rank >= 1");
    normalize_axis(ctx, ctx.attr_i("axis", -1), rank);
  }
}

void infer_mvn(InferContext& ctx) {
  propagate(ctx, 0, 0);
  if (!ctx.has_shape(0)) return;
  int64_t rank = static_cast<int64_t>(ctx.input_rank(0));
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3})) normalize_axis(ctx, a, rank);
}

}  // namespace

void register_norm_shapes(ShapeRegistry& r) {
  r.add("", "BatchNormalization", infer_batch_norm);
  r.add("", "LayerNormalization", infer_layer_norm);
  r.add("", "InstanceNormalization", infer_instance_norm);
  r.add("", "GroupNormalization", infer_group_norm);
  r.add("", "LRN", infer_lrn);
  r.add("", "LpNormalization", infer_lp_norm);
  r.add("", "MeanVarianceNormalization", infer_mvn);
  r.add("", "RMSNormalization", infer_rms_norm);
}

}  // namespace onyx::shape
