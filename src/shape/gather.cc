// Shape functions of the gather family: Gather, GatherElements, GatherND and the
// scatters (Scatter, ScatterElements, ScatterND, TensorScatter).
#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

void require_index_dtype(const InferContext& ctx, size_t i, bool int64_only = false) {
  DType t = ctx.input_dtype(i);
  if (t != DType::kInt64 && (int64_only || t != DType::kInt32))
    ctx.fail("input {} (indices) must be {}, got {}", i, int64_only ? "int64" : "int32 or int64",
             dtype_name(t));
}

/// Merges two dims that must agree: a known one wins; fails when both are known and differ.
Dim merge_dim(const InferContext& ctx, const Dim& a, const Dim& b, const char* what) {
  if (a.known() && b.known() && a.value != b.value) ctx.fail("{}: {} vs {}", what, a.value, b.value);
  return a.known() ? a : b;
}

void gather_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  require_index_dtype(ctx, 1);
  if (!ctx.has_shape(0) || !ctx.has_shape(1)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& data = ctx.input_shape(0);
  const Shape& ind = ctx.input_shape(1);
  if (data.empty()) ctx.fail("data must have rank >= 1");
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(data.size())));
  Shape out(data.begin(), data.begin() + static_cast<ptrdiff_t>(axis));
  out.insert(out.end(), ind.begin(), ind.end());
  out.insert(out.end(), data.begin() + static_cast<ptrdiff_t>(axis) + 1, data.end());
  ctx.set_output(0, dt, std::move(out));
}

void gather_elements_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  require_index_dtype(ctx, 1);
  if (ctx.has_shape(0) && ctx.has_shape(1)) {
    const Shape& data = ctx.input_shape(0);
    const Shape& ind = ctx.input_shape(1);
    if (data.empty() || data.size() != ind.size())
      ctx.fail("data and indices must have the same rank >= 1, got {} and {}", ir::shape_str(data),
               ir::shape_str(ind));
    normalize_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(data.size()));
  }
  if (ctx.has_shape(1)) ctx.set_output(0, dt, ctx.input_shape(1));
  else ctx.set_output_unranked(0, dt);
}

void gather_nd_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  require_index_dtype(ctx, 1, true);
  if (!ctx.has_shape(0) || !ctx.has_shape(1)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& data = ctx.input_shape(0);
  const Shape& ind = ctx.input_shape(1);
  int64_t b = ctx.opset() >= 12 ? ctx.attr_i("batch_dims", 0) : 0;
  auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(ind.size());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) ctx.fail("batch_dims {} must be in [0, min(rank(data), rank(indices)))", b);
  const Dim& last = ind.back();
  if (!last.known()) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  if (last.value < 1 || last.value > r - b)
    ctx.fail("indices.shape[-1] = {} must be in [1, {}]", last.value, r - b);
  Shape out;
  for (int64_t k = 0; k < b; ++k)
    out.push_back(merge_dim(ctx, data[static_cast<size_t>(k)], ind[static_cast<size_t>(k)], "batch dims differ"));
  out.insert(out.end(), ind.begin() + b, ind.end() - 1);
  out.insert(out.end(), data.begin() + b + last.value, data.end());
  ctx.set_output(0, dt, std::move(out));
}

/// Scatter / ScatterElements: indices and updates share a shape, of data's rank.
void scatter_elements_shape(InferContext& ctx) {
  require_index_dtype(ctx, 1);
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    ctx.fail("updates has dtype {}, data has {}", dtype_name(ctx.input_dtype(2)), dtype_name(ctx.input_dtype(0)));
  std::string red = ctx.attr_s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    ctx.fail("reduction must be none, add, mul, max or min, got '{}'", red);
  if (ctx.has_shape(1) && ctx.has_shape(2)) {
    const Shape& ind = ctx.input_shape(1);
    const Shape& upd = ctx.input_shape(2);
    if (ind.size() != upd.size()) ctx.fail("indices and updates must have the same shape");
    for (size_t k = 0; k < ind.size(); ++k) merge_dim(ctx, ind[k], upd[k], "indices and updates differ");
  }
  if (ctx.has_shape(0)) {
    auto r = static_cast<int64_t>(ctx.input_rank(0));
    if (r < 1) ctx.fail("data must have rank >= 1");
    if (ctx.has_shape(1) && static_cast<int64_t>(ctx.input_rank(1)) != r)
      ctx.fail("indices must have the rank of data ({}), got {}", r, ctx.input_rank(1));
    normalize_axis(ctx, ctx.attr_i("axis", 0), r);
  }
  propagate(ctx);
}

void scatter_nd_shape(InferContext& ctx) {
  require_index_dtype(ctx, 1, true);
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    ctx.fail("updates has dtype {}, data has {}", dtype_name(ctx.input_dtype(2)), dtype_name(ctx.input_dtype(0)));
  std::string red = ctx.attr_s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    ctx.fail("reduction must be none, add, mul, max or min, got '{}'", red);
  if (ctx.has_shape(0) && ctx.has_shape(1) && ctx.has_shape(2)) {
    const Shape& data = ctx.input_shape(0);
    const Shape& ind = ctx.input_shape(1);
    const Shape& upd = ctx.input_shape(2);
    if (ind.empty()) ctx.fail("indices must have rank >= 1");
    const Dim& k = ind.back();
    if (k.known()) {
      if (k.value < 1 || k.value > static_cast<int64_t>(data.size()))
        ctx.fail("indices.shape[-1] = {} must be in [1, rank(data) = {}]", k.value, data.size());
      // updates.shape == indices.shape[:-1] + data.shape[k:]
      Shape want(ind.begin(), ind.end() - 1);
      want.insert(want.end(), data.begin() + k.value, data.end());
      if (want.size() != upd.size())
        ctx.fail("updates must have shape {}, got {}", ir::shape_str(want), ir::shape_str(upd));
      for (size_t j = 0; j < want.size(); ++j) merge_dim(ctx, want[j], upd[j], "updates shape differs");
    }
  }
  propagate(ctx);
}

void tensor_scatter_shape(InferContext& ctx) {
  if (ctx.input_dtype(1) != ctx.input_dtype(0))
    ctx.fail("update has dtype {}, past_cache has {}", dtype_name(ctx.input_dtype(1)), dtype_name(ctx.input_dtype(0)));
  if (ctx.has_input(2)) require_index_dtype(ctx, 2, true);
  std::string mode = ctx.attr_s("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be linear or circular, got '{}'", mode);
  if (ctx.has_shape(0) && ctx.has_shape(1)) {
    const Shape& past = ctx.input_shape(0);
    const Shape& upd = ctx.input_shape(1);
    auto r = static_cast<int64_t>(past.size());
    if (r < 2 || upd.size() != past.size())
      ctx.fail("past_cache and update must have the same rank >= 2");
    int64_t axis = normalize_axis(ctx, ctx.attr_i("axis", -2), r);
    if (axis == 0) ctx.fail("axis must not be the batch axis 0");
    for (size_t k = 0; k < past.size(); ++k) {
      if (static_cast<int64_t>(k) == axis) {
        if (past[k].known() && upd[k].known() && upd[k].value > past[k].value)
          ctx.fail("update has {} steps, the cache holds {}", upd[k].value, past[k].value);
        continue;
      }
      merge_dim(ctx, past[k], upd[k], "past_cache and update differ outside the sequence axis");
    }
  }
  propagate(ctx);
}

}  // namespace

void register_gather_shapes(ShapeRegistry& r) {
  r.add("", "Gather", gather_shape);
  r.add("", "GatherElements", gather_elements_shape);
  r.add("", "GatherND", gather_nd_shape);
  r.add("", "Scatter", scatter_elements_shape);
  r.add("", "ScatterElements", scatter_elements_shape);
  r.add("", "ScatterND", scatter_nd_shape);
  r.add("", "TensorScatter", tensor_scatter_shape);
}

}  // namespace onyx::shape
