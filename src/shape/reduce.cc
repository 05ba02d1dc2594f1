// Shape functions of the reduce family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/
// Hardmax, TopK, CumSum/CumProd, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
#include <algorithm>

#include "shape/infer.h"

namespace onyx::shape {
namespace {

/// True when the Reduce* op takes `axes` as input 1 at this opset (ReduceSum from 13,
/// the others from 18); before that it is an attribute.
bool axes_from_input(const InferContext& ctx) {
  return ctx.node().op_type == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
}

void reduce_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& in = ctx.input_shape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  const bool keep = ctx.attr_i("keepdims", 1) != 0;
  const bool noop = ctx.attr_i("noop_with_empty_axes", 0) != 0;

  std::vector<int64_t> axes;
  if (axes_from_input(ctx)) {
    if (ctx.has_input(1) && !ctx.input_ints(1, axes)) {
      // Axes come at run time: the rank is known only when dims are kept or the
      // number of axes is static.
      if (keep) {
        ir::Shape out;
        for (const ir::Dim& d : in) out.push_back(d.known() && d.value == 1 ? d : ctx.fresh_dim());
        ctx.set_output(0, dt, out);
      } else if (ctx.has_shape(1) && ctx.input_rank(1) == 1 && ctx.input_shape(1)[0].known() &&
                 ctx.input_shape(1)[0].value > 0) {
        int64_t n = ctx.input_shape(1)[0].value;
        if (n > rank) ctx.fail("{} axes given for an input of rank {}", n, rank);
        ir::Shape out;
        for (int64_t k = 0; k < rank - n; ++k) out.push_back(ctx.fresh_dim());
        ctx.set_output(0, dt, out);
      } else {
        ctx.set_output_unranked(0, dt);
      }
      return;
    }
  } else {
    if (ctx.num_inputs() > 1 && ctx.has_input(1))
      ctx.fail("takes 'axes' as an attribute at opset {}, not as an input", ctx.opset());
    axes = ctx.attr_ints("axes");
  }

  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (!noop) std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t a : axes) {
      int64_t k = normalize_axis(ctx, a, rank);
      if (reduced[static_cast<size_t>(k)]) ctx.fail("axis {} is repeated in 'axes'", a);
      reduced[static_cast<size_t>(k)] = true;
    }
  }
  ir::Shape out;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduced[static_cast<size_t>(k)]) out.push_back(in[static_cast<size_t>(k)]);
    else if (keep) out.push_back(ir::Dim(1));
  }
  ctx.set_output(0, dt, out);
}

void arg_reduce_shape(InferContext& ctx) {
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, DType::kInt64);
    return;
  }
  const ir::Shape& in = ctx.input_shape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.attr_i("axis", 0), rank);
  const bool keep = ctx.attr_i("keepdims", 1) != 0;
  ir::Shape out;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis) out.push_back(in[static_cast<size_t>(k)]);
    else if (keep) out.push_back(ir::Dim(1));
  }
  ctx.set_output(0, DType::kInt64, out);
}

void softmax_shape(InferContext& ctx) {
  if (ctx.has_shape(0)) {
    int64_t rank = static_cast<int64_t>(ctx.input_rank(0));
    int64_t def = ctx.opset() >= 13 ? -1 : 1;
    int64_t axis = ctx.attr_i("axis", def);
    // Before opset 13 the input is coerced to 2D at `axis`, which may equal the rank.
    if (ctx.opset() < 13) {
      if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
    } else {
      normalize_axis(ctx, axis, rank);
    }
  }
  propagate(ctx);
}

void topk_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  ir::Shape shape = ctx.input_shape(0);
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.attr_i("axis", -1), rank);
  ir::Dim kdim = ctx.fresh_dim();
  std::vector<int64_t> k;
  if (ctx.opset() < 10) {
    if (!ctx.has_attr("k")) ctx.fail("attribute 'k' is required at opset {}", ctx.opset());
    k.push_back(ctx.attr_i("k", 0));
  } else if (!ctx.input_ints(1, k)) {
    k.clear();
  } else if (k.size() != 1) {
    ctx.fail("'K' must hold exactly one value, got {}", k.size());
  }
  if (!k.empty()) {
    const ir::Dim& d = shape[static_cast<size_t>(axis)];
    if (k[0] < 0) ctx.fail("k must be >= 0, got {}", k[0]);
    if (d.known() && k[0] > d.value)
      ctx.fail("k = {} exceeds dimension {} (size {}) of the input", k[0], axis, d.value);
    kdim = ir::Dim(k[0]);
  }
  shape[static_cast<size_t>(axis)] = kdim;
  ctx.set_output(0, dt, shape);
  ctx.set_output(1, DType::kInt64, shape);
}

void cumulative_shape(InferContext& ctx) {
  if (ctx.has_shape(1) && ctx.input_rank(1) > 1)
    ctx.fail("'axis' must be a scalar or a 1-element 1-D tensor");
  propagate(ctx);
}

/// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss: input (N, C, d1..dk) and
/// target (N, d1..dk); the loss has the target's shape or is a scalar.
void loss_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::string red = ctx.attr_s("reduction", "mean");
  if (red != "none" && red != "sum" && red != "mean")
    ctx.fail("'reduction' must be none, sum or mean, got '{}'", red);
  if (ctx.has_shape(0)) {
    if (ctx.input_rank(0) < 2) ctx.fail("input must have rank >= 2 (N, C, ...)");
    if (ctx.has_shape(1) && ctx.input_rank(1) + 1 != ctx.input_rank(0))
      ctx.fail("target must have rank {} (input rank minus one), got {}", ctx.input_rank(0) - 1,
               ctx.input_rank(1));
  }
  if (ctx.has_shape(2) && ctx.input_rank(2) != 1) ctx.fail("weight must be 1-D (C)");
  if (red != "none") {
    ctx.set_output(0, dt, {});
  } else if (ctx.has_shape(1)) {
    ctx.set_output(0, dt, ctx.input_shape(1));
  } else if (ctx.has_shape(0)) {
    ir::Shape s = ctx.input_shape(0);
    s.erase(s.begin() + 1);
    ctx.set_output(0, dt, s);
  } else {
    ctx.set_output_unranked(0, dt);
  }
  if (ctx.node().op_type == "SoftmaxCrossEntropyLoss") propagate(ctx, 0, 1);
}

}  // namespace

void register_reduce_shapes(ShapeRegistry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                         "ReduceSumSquare"})
    r.add("", op, reduce_shape);
  r.add("", "ArgMax", arg_reduce_shape);
  r.add("", "ArgMin", arg_reduce_shape);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add("", op, softmax_shape);
  r.add("", "TopK", topk_shape);
  r.add("", "CumSum", cumulative_shape);
  r.add("", "CumProd", cumulative_shape);
  r.add("", "NegativeLogLikelihoodLoss", loss_shape);
  r.add("", "SoftmaxCrossEntropyLoss", loss_shape);
}

}  // namespace onyx::shape
