// Shape functions of the tensor family: ops that create, reshape, reorder, slice,
// join or pad tensors (Constant, Reshape, Transpose, Concat, Split, Slice, Pad, ...).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/half.h"
#include "kernels/reference/tensor_data.h"
#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

/// Product of dims [from, to) of `s`: known when every factor is known (or one is 0).
Dim dims_product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  bool known = true;
  for (size_t k = from; k < to; ++k) {
    if (!s[k].known()) {
      known = false;
      continue;
    }
    if (s[k].value == 0) return Dim(0);
    if (p > std::numeric_limits<int64_t>::max() / s[k].value) return Dim();
    p *= s[k].value;
  }
  if (known) return Dim(p);
  // A single symbolic factor times ones keeps its name.
  if (p == 1 && to - from >= 1) {
    const Dim* only = nullptr;
    for (size_t k = from; k < to; ++k) {
      if (s[k].known()) continue;
      if (only) return Dim();
      only = &s[k];
    }
    return *only;
  }
  return Dim();
}

/// Number of elements of input `i` when its shape is fully known, else -1.
int64_t known_numel(const InferContext& ctx, size_t i) {
  if (!ctx.has_shape(i)) return -1;
  const Shape& s = ctx.input_shape(i);
  if (!ir::shape_known(s)) return -1;
  int64_t n = 1;
  for (const Dim& d : s)
    if (!mul_fits(n, d.value, n))
      ctx.fail("input {} of shape {} has more elements than fit in 64 bits", i, ir::shape_str(s));
  return n;
}

/// Length of a 1-D input when its shape says so, else -1.
int64_t vector_length(const InferContext& ctx, size_t i) {
  if (!ctx.has_shape(i)) return -1;
  const Shape& s = ctx.input_shape(i);
  if (s.size() == 0) return 1;
  if (s.size() != 1 || !s[0].known()) return -1;
  return s[0].value;
}

/// Reads a scalar (or one-element) numeric input as double; false when unknown.
bool input_scalar(const InferContext& ctx, size_t i, double& out) {
  const Tensor* t = ctx.input_value(i);
  if (!t) return false;
  if (t->numel() != 1) ctx.fail("input {} must hold exactly one value, got shape {}", i, dims_str(t->dims()));
  switch (t->dtype()) {
    case DType::kFloat: out = *t->data<float>(); break;
    case DType::kDouble: out = *t->data<double>(); break;
    case DType::kFloat16: out = static_cast<float>(*t->data<Float16>()); break;
    case DType::kBFloat16: out = static_cast<float>(*t->data<BFloat16>()); break;
    case DType::kInt8: out = *t->data<int8_t>(); break;
    case DType::kInt16: out = *t->data<int16_t>(); break;
    case DType::kInt32: out = *t->data<int32_t>(); break;
    case DType::kInt64: out = static_cast<double>(*t->data<int64_t>()); break;
    case DType::kUint8: out = *t->data<uint8_t>(); break;
    case DType::kUint16: out = *t->data<uint16_t>(); break;
    case DType::kUint32: out = *t->data<uint32_t>(); break;
    case DType::kUint64: out = static_cast<double>(*t->data<uint64_t>()); break;
    default: ctx.fail("input {} has unsupported dtype {}", i, dtype_name(t->dtype()));
  }
  return true;
}

/// Normalizes axes (possibly negative) against `rank`; fails on duplicates.
std::vector<int64_t> normalize_axes(const InferContext& ctx, std::vector<int64_t> axes, int64_t rank) {
  check_rank(ctx, rank, "the tensor the axes refer to");
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = normalize_axis(ctx, a, rank);
    if (seen[static_cast<size_t>(a)]) ctx.fail("axis {} is repeated", a);
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// ---- Constant / Identity / Dropout ----

void constant_shape(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  int given = 0;
  for (const char* a : {"value", "sparse_value", "value_float", "value_floats", "value_int",
                        "value_ints", "value_string", "value_strings"})
    given += n.has_attr(a) ? 1 : 0;
  if (given != 1)
    ctx.fail("exactly one of the attributes value, sparse_value, value_float(s), value_int(s), "
             "value_string(s) must be set, got {}", given);
  if (const Tensor* t = n.has_attr("value") ? n.attr_t("value") : n.attr_t("sparse_value")) {
    ctx.set_output(0, t->dtype(), ir::shape_of(t->dims()));
  } else if (n.has_attr("value_float")) {
    ctx.set_output(0, DType::kFloat, {});
  } else if (n.has_attr("value_floats")) {
    ctx.set_output(0, DType::kFloat, {Dim(static_cast<int64_t>(n.attr_floats("value_floats").size()))});
  } else if (n.has_attr("value_int")) {
    ctx.set_output(0, DType::kInt64, {});
  } else if (n.has_attr("value_ints")) {
    ctx.set_output(0, DType::kInt64, {Dim(static_cast<int64_t>(n.attr_ints("value_ints").size()))});
  } else if (n.has_attr("value_string")) {
    ctx.set_output(0, DType::kString, {});
  } else {
    ctx.set_output(0, DType::kString, {Dim(static_cast<int64_t>(n.attr_strings("value_strings").size()))});
  }
}

void identity_shape(InferContext& ctx) { propagate(ctx); }

void dropout_shape(InferContext& ctx) {
  propagate(ctx);
  if (ctx.has_output(1)) {
    // Before opset 10 the mask had the input's type.
    DType mask = ctx.opset() < 10 ? ctx.input_dtype(0) : DType::kBool;
    const ir::TypeInfo& t = ctx.input_type(0);
    if (t.has_shape) ctx.set_output(1, mask, t.shape);
    else ctx.set_output_unranked(1, mask);
  }
  if (ctx.has_input(1) && ctx.has_shape(1) && !ctx.input_shape(1).empty())
    ctx.fail("ratio must be a scalar, got shape {}", ir::shape_str(ctx.input_shape(1)));
  double ratio = 0;
  if (input_scalar(ctx, 1, ratio) && !(ratio >= 0 && ratio < 1))
    ctx.fail("ratio must be in [0, 1), got {}", ratio);
}

// ---- Reshape / Flatten / Squeeze / Unsqueeze ----

void reshape_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> target;
  bool have = false;
  int64_t target_len = -1;
  if (ctx.opset() < 5) {
    if (!ctx.has_attr("shape")) ctx.fail("attribute 'shape' is required before opset 5");
    target = ctx.attr_ints("shape");
    have = true;
  } else {
    have = ctx.input_ints(1, target);
    target_len = vector_length(ctx, 1);
  }
  if (!have) {
    if (target_len >= 0)
      ctx.set_output(0, dt, fresh_shape(ctx, target_len, "the reshaped output"));
    else ctx.set_output_unranked(0, dt);
    return;
  }
  bool allowzero = ctx.opset() >= 14 && ctx.attr_i("allowzero", 0) != 0;
  const Shape* in = ctx.has_shape(0) ? &ctx.input_shape(0) : nullptr;
  check_rank(ctx, static_cast<int64_t>(target.size()), "the reshaped output");
  Shape out(target.size());
  int64_t infer_at = -1;
  int64_t known_prod = 1;  // product of the output dims other than the -1 one
  bool prod_known = true;
  for (size_t k = 0; k < target.size(); ++k) {
    int64_t v = target[k];
    if (v == -1) {
      if (infer_at >= 0) ctx.fail("shape {} has more than one -1", dims_str(target));
      infer_at = static_cast<int64_t>(k);
      continue;
    }
    if (v < -1) ctx.fail("shape {} has invalid value {}", dims_str(target), v);
    if (v == 0 && !allowzero) {
      if (!in) {
        out[k] = ctx.fresh_dim();
        prod_known = false;
        continue;
      }
      if (k >= in->size())
        ctx.fail("shape {} copies dim {} (value 0) but the input has rank {}", dims_str(target), k,
                 in->size());
      out[k] = (*in)[k];
    } else {
      out[k] = Dim(v);
    }
    if (!out[k].known()) {
      prod_known = false;
    } else if (out[k].value != 0) {
      if (known_prod > std::numeric_limits<int64_t>::max() / out[k].value)
        ctx.fail("shape {} is too large", dims_str(target));
      known_prod *= out[k].value;
    } else {
      known_prod = 0;
    }
  }
  if (allowzero && infer_at >= 0 && known_prod == 0 && prod_known)
    ctx.fail("shape {} has both -1 and 0 with allowzero set", dims_str(target));
  int64_t n = known_numel(ctx, 0);
  if (infer_at >= 0) {
    if (n >= 0 && prod_known) {
      if (known_prod == 0 || n % known_prod != 0)
        ctx.fail("cannot reshape {} elements into {}", n, dims_str(target));
      out[static_cast<size_t>(infer_at)] = Dim(n / known_prod);
    } else {
      out[static_cast<size_t>(infer_at)] = ctx.fresh_dim();
    }
  } else if (n >= 0 && prod_known && n != known_prod) {
    ctx.fail("cannot reshape {} elements into shape {} ({} elements)", n, ir::shape_str(out),
             known_prod);
  }
  ctx.set_output(0, dt, std::move(out));
}

void flatten_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output(0, dt, {ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const Shape& in = ctx.input_shape(0);
  int64_t r = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_i("axis", 1);
  if (axis < 0 && ctx.opset() < 11)
    ctx.fail("axis {} is negative; Flatten accepts negative axes from opset 11 on", axis);
  if (axis < -r || axis > r) ctx.fail("axis {} is out of range [{}, {}]", axis, -r, r);
  if (axis < 0) axis += r;
  auto a = static_cast<size_t>(axis);
  ctx.set_output(0, dt, {dims_product(in, 0, a), dims_product(in, a, in.size())});
}

/// Axes from the attribute (before opset 13) or the second input; false when unknown.
bool axes_of(InferContext& ctx, std::vector<int64_t>& axes, bool& given) {
  if (ctx.opset() < 13) {
    given = ctx.has_attr("axes");
    axes = ctx.attr_ints("axes");
    return true;
  }
  given = ctx.has_input(1);
  if (!given) return true;
  return ctx.input_ints(1, axes);
}

void squeeze_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> axes;
  bool given = false;
  if (!axes_of(ctx, axes, given) || !ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  int64_t r = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (given && !axes.empty()) {  // an empty axes list squeezes every 1, like no list
    for (int64_t a : normalize_axes(ctx, axes, r)) {
      const Dim& d = in[static_cast<size_t>(a)];
      if (d.known() && d.value != 1) ctx.fail("cannot squeeze axis {} of size {}", a, d.value);
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t k = 0; k < in.size(); ++k) {
      if (!in[k].known()) {
        ctx.set_output_unranked(0, dt);  // whether it is 1 decides the rank
        return;
      }
      drop[k] = in[k].value == 1;
    }
  }
  Shape out;
  for (size_t k = 0; k < in.size(); ++k)
    if (!drop[k]) out.push_back(in[k]);
  ctx.set_output(0, dt, std::move(out));
}

void unsqueeze_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> axes;
  bool given = false;
  bool known = axes_of(ctx, axes, given);
  if (!given) ctx.fail("axes are required");
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  if (!known) {
    int64_t n = vector_length(ctx, 1);
    if (n < 0) ctx.set_output_unranked(0, dt);
    else
      ctx.set_output(
          0, dt,
          fresh_shape(ctx, checked_add(ctx, static_cast<int64_t>(in.size()), n, "the output rank"),
                      "the unsqueezed output"));
    return;
  }
  check_rank(ctx, static_cast<int64_t>(in.size() + axes.size()), "the unsqueezed output");
  int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : normalize_axes(ctx, axes, out_rank)) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  size_t src = 0;
  for (size_t k = 0; k < inserted.size(); ++k) out.push_back(inserted[k] ? Dim(1) : in[src++]);
  ctx.set_output(0, dt, std::move(out));
}

// ---- Transpose / Concat / Split / Slice ----

void transpose_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (!ctx.has_shape(0)) {
    if (ctx.has_attr("perm"))
      ctx.set_output(
          0, dt,
          fresh_shape(ctx, static_cast<int64_t>(perm.size()), "the transposed output (perm)"));
    else ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  size_t r = in.size();
  if (!ctx.has_attr("perm")) {
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  }
  if (perm.size() != r) ctx.fail("perm {} has {} entries, input rank is {}", dims_str(perm), perm.size(), r);
  std::vector<bool> seen(r, false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
      ctx.fail("perm {} is not a permutation of 0..{}", dims_str(perm), r - 1);
    seen[static_cast<size_t>(p)] = true;
    out.push_back(in[static_cast<size_t>(p)]);
  }
  ctx.set_output(0, dt, std::move(out));
}

void concat_shape(InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  DType dt = ctx.input_dtype(0);
  // Concat-1 defaulted the axis to 1; from opset 4 it is required.
  if (ctx.opset() >= 4 && !ctx.has_attr("axis")) ctx.fail("attribute 'axis' is required");
  const Shape* first = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input_dtype(i) != dt)
      ctx.fail("input {} has dtype {}, input 0 has {}", i, dtype_name(ctx.input_dtype(i)), dtype_name(dt));
    if (ctx.has_shape(i) && !first) first = &ctx.input_shape(i);
  }
  if (!first) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  int64_t r = static_cast<int64_t>(first->size());
  if (r == 0) ctx.fail("cannot concatenate scalars");
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 1), r));
  Shape out = *first;
  int64_t total = 0;
  bool total_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_shape(i)) {
      total_known = false;
      continue;
    }
    const Shape& s = ctx.input_shape(i);
    if (s.size() != first->size())
      ctx.fail("input {} has rank {}, input 0 has rank {}", i, s.size(), first->size());
    for (size_t k = 0; k < s.size(); ++k) {
      if (k == axis) continue;
      if (s[k].known() && out[k].known() && s[k].value != out[k].value)
        ctx.fail("input {} has dim {} on axis {}, expected {}", i, s[k].value, k, out[k].value);
      if (s[k].known() && !out[k].known()) out[k] = s[k];
    }
    if (s[axis].known())
      total = checked_add(ctx, total, s[axis].value, "the concatenated axis");
    else total_known = false;
  }
  out[axis] = total_known ? Dim(total) : ctx.fresh_dim();
  ctx.set_output(0, dt, std::move(out));
}

void split_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  size_t n_out = ctx.num_outputs();
  if (n_out == 0) ctx.fail("needs at least one output");
  if (!ctx.has_shape(0)) {
    for (size_t i = 0; i < n_out; ++i) ctx.set_output_unranked(i, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(in.size())));
  std::vector<int64_t> split;
  bool have_split = false, split_unknown = false;
  bool split_input = ctx.opset() >= 13 || ctx.opset() == 1;
  if (split_input && ctx.has_input(1)) {
    have_split = ctx.input_ints(1, split);
    split_unknown = !have_split;
  } else if (ctx.opset() < 13 && ctx.has_attr("split")) {
    split = ctx.attr_ints("split");
    have_split = true;
  }
  const Dim& d = in[axis];
  std::vector<Dim> sizes(n_out);
  if (have_split) {
    if (split.size() != n_out)
      ctx.fail("split {} has {} entries but the node has {} outputs", dims_str(split), split.size(), n_out);
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) ctx.fail("split {} has a negative size", dims_str(split));
      sum = checked_add(ctx, sum, s, "the sum of split");
    }
    if (d.known() && sum != d.value)
      ctx.fail("split {} sums to {}, but axis {} has size {}", dims_str(split), sum, axis, d.value);
    for (size_t i = 0; i < n_out; ++i) sizes[i] = Dim(split[i]);
  } else if (split_unknown || !d.known()) {
    for (auto& s : sizes) s = ctx.fresh_dim();
  } else {
    auto n = static_cast<int64_t>(n_out);
    if (ctx.opset() >= 18) {
      int64_t num = ctx.attr_i("num_outputs", n);
      if (num != n) ctx.fail("num_outputs is {} but the node has {} outputs", num, n);
      // Chunks of ceil(dim / n); the last one takes what is left.
      int64_t chunk = d.value / n + (d.value % n != 0);
      int64_t left = d.value;
      for (size_t i = 0; i < n_out; ++i) {
        int64_t c = std::min(chunk, left);
        sizes[i] = Dim(c);
        left -= c;
      }
    } else {
      if (d.value % n != 0)
        ctx.fail("axis {} of size {} cannot be split evenly into {} outputs", axis, d.value, n);
      for (auto& s : sizes) s = Dim(d.value / n);
    }
  }
  for (size_t i = 0; i < n_out; ++i) {
    Shape s = in;
    s[axis] = sizes[i];
    ctx.set_output(i, dt, std::move(s));
  }
}

/// Clamped start and element count of one sliced axis (ONNX Slice semantics).
void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t& first, int64_t& count) {
  first = 0;
  count = 0;
  if (dim == 0) return;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -step overflows for INT64_MIN; any step that large takes one element anyway.
    int64_t back = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    count = start > end ? (start - end - 1) / back + 1 : 0;
  }
  first = start;
}

void slice_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  auto r = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  bool known = true;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    known = ctx.input_ints(1, starts) && ctx.input_ints(2, ends);
    if (ctx.has_input(3)) known = ctx.input_ints(3, axes) && known;
    if (ctx.has_input(4)) known = ctx.input_ints(4, steps) && known;
  }
  if (!known) {
    ctx.set_output(0, dt, fresh_shape(ctx, in.size()));
    return;
  }
  if (starts.size() != ends.size())
    ctx.fail("starts {} and ends {} differ in length", dims_str(starts), dims_str(ends));
  if (axes.empty() && !(ctx.opset() >= 10 && ctx.has_input(3)))
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps must have the same length ({}, {}, {}, {})",
             starts.size(), ends.size(), axes.size(), steps.size());
  axes = normalize_axes(ctx, axes, r);
  Shape out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (steps[k] == 0) ctx.fail("step on axis {} is 0", axes[k]);
    auto a = static_cast<size_t>(axes[k]);
    if (!in[a].known()) {
      bool whole = starts[k] == 0 && steps[k] == 1 && ends[k] >= std::numeric_limits<int32_t>::max();
      if (!whole) out[a] = ctx.fresh_dim();
      continue;
    }
    int64_t first = 0, count = 0;
    slice_axis(in[a].value, starts[k], ends[k], steps[k], first, count);
    out[a] = Dim(count);
  }
  ctx.set_output(0, dt, std::move(out));
}

// ---- Shape / Size ----

void shape_shape(InferContext& ctx) {
  if (!ctx.has_shape(0)) {
    ctx.set_output(0, DType::kInt64, {ctx.fresh_dim()});
    return;
  }
  auto r = static_cast<int64_t>(ctx.input_rank(0));
  int64_t start = ctx.opset() >= 15 ? ctx.attr_i("start", 0) : 0;
  int64_t end = ctx.opset() >= 15 ? ctx.attr_i("end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  ctx.set_output(0, DType::kInt64, {Dim(std::max<int64_t>(end - start, 0))});
}

void size_shape(InferContext& ctx) {
  ctx.input_type(0);
  ctx.set_output(0, DType::kInt64, {});
}

// ---- Expand / Tile / ConstantOfShape / Range ----

void expand_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> target;
  if (!ctx.input_ints(1, target)) {
    int64_t n = vector_length(ctx, 1);
    if (n < 0 || !ctx.has_shape(0)) ctx.set_output_unranked(0, dt);
    else
      ctx.set_output(0, dt,
                     fresh_shape(ctx, std::max<int64_t>(n, static_cast<int64_t>(ctx.input_rank(0))),
                                 "the expanded output"));
    return;
  }
  check_rank(ctx, static_cast<int64_t>(target.size()), "the expanded output (input 'shape')");
  for (int64_t v : target)
    if (v < 0) ctx.fail("shape {} has a negative value", dims_str(target));
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  Shape t = ir::shape_of(target);
  ctx.set_output(0, dt, broadcast_shapes(ctx, {&ctx.input_shape(0), &t}));
}

void tile_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  std::vector<int64_t> reps;
  if (!ctx.input_ints(1, reps)) {
    ctx.set_output(0, dt, fresh_shape(ctx, in.size()));
    return;
  }
  if (reps.size() != in.size())
    ctx.fail("repeats {} has {} entries, input rank is {}", dims_str(reps), reps.size(), in.size());
  Shape out(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    if (reps[k] < 0) ctx.fail("repeats {} has a negative value", dims_str(reps));
    if (in[k].known())
      out[k] = Dim(checked_mul(ctx, in[k].value, reps[k], "an axis times its repeats"));
    else out[k] = reps[k] == 1 ? in[k] : reps[k] == 0 ? Dim(0) : ctx.fresh_dim();
  }
  ctx.set_output(0, dt, std::move(out));
}

void constant_of_shape_shape(InferContext& ctx) {
  DType dt = DType::kFloat;
  if (const Tensor* v = ctx.node().attr_t("value")) {
    if (v->numel() != 1) ctx.fail("attribute 'value' must hold one element, got shape {}", dims_str(v->dims()));
    dt = v->dtype();
  }
  if (ctx.has_shape(0) && ctx.input_rank(0) != 1)
    ctx.fail("input 'input' (the output shape) must be a 1-D tensor, got rank {}", ctx.input_rank(0));
  std::vector<int64_t> dims;
  if (!ctx.input_ints(0, dims)) {
    int64_t n = vector_length(ctx, 0);
    if (n < 0) ctx.set_output_unranked(0, dt);
    else
      ctx.set_output(0, dt,
                     fresh_shape(ctx, n, "the output (its rank is the length of input 'input')"));
    return;
  }
  check_rank(ctx, static_cast<int64_t>(dims.size()),
             "the output (its rank is the length of input 'input')");
  for (int64_t d : dims)
    if (d < 0) ctx.fail("shape {} has a negative dim", dims_str(dims));
  ctx.set_output(0, dt, ir::shape_of(dims));
}

void range_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input_dtype(i) != dt)
      ctx.fail("start, limit and delta must share one dtype, input {} is {}", i, dtype_name(ctx.input_dtype(i)));
    if (ctx.has_shape(i) && !ctx.input_shape(i).empty() &&
        !(ctx.input_shape(i).size() == 1 && ctx.input_shape(i)[0] == Dim(1)))
      ctx.fail("input {} must be a scalar, got shape {}", i, ir::shape_str(ctx.input_shape(i)));
  }
  int64_t count = -1;
  double sv = 0, lv = 0, dv = 0;
  if (dt == DType::kInt64) {
    // int64 bounds may not fit a double exactly: count in 128-bit integers.
    std::vector<int64_t> st, li, de;
    if (ctx.input_ints(0, st) && ctx.input_ints(1, li) && ctx.input_ints(2, de)) {
      if (de[0] == 0) ctx.fail("delta is 0");
      __int128 diff = static_cast<__int128>(li[0]) - st[0];
      __int128 d = de[0];
      __int128 n = (diff > 0) == (d > 0) && diff != 0 ? (diff + d - (d > 0 ? 1 : -1)) / d : 0;
      if (n > std::numeric_limits<int64_t>::max())
        ctx.fail("range from {} to {} by {} has more elements than fit in 64 bits", st[0], li[0],
                 de[0]);
      count = static_cast<int64_t>(n);
    }
  } else if (input_scalar(ctx, 0, sv) && input_scalar(ctx, 1, lv) && input_scalar(ctx, 2, dv)) {
    if (dv == 0) ctx.fail("delta is 0");
    double n = std::ceil((lv - sv) / dv);
    if (!(n < 9.0e18)) ctx.fail("range from {} to {} by {} is too long", sv, lv, dv);
    count = static_cast<int64_t>(std::max(n, 0.0));
  }
  ctx.set_output(0, dt, {count >= 0 ? Dim(count) : ctx.fresh_dim()});
}

// ---- DepthToSpace / SpaceToDepth / Trilu / EyeLike / OneHot ----

void depth_space_shape(InferContext& ctx, bool to_space) {
  DType dt = ctx.input_dtype(0);
  int64_t b = ctx.attr_i("blocksize", 0);
  if (b <= 0) ctx.fail("attribute 'blocksize' must be positive, got {}", b);
  if (!ctx.has_shape(0)) {
    ctx.set_output(0, dt, fresh_shape(ctx, 4));
    return;
  }
  const Shape& in = ctx.input_shape(0);
  if (in.size() != 4) ctx.fail("input must be 4-D (N, C, H, W), got {}", ir::shape_str(in));
  if (to_space) {
    std::string mode = ctx.attr_s("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD, got '{}'", mode);
  }
  Shape out = in;
  // blocksize comes from the file: b * b and dim * b are checked (2^32 squared wraps to 0).
  const int64_t bb = checked_mul(ctx, b, b, "attribute 'blocksize' squared");
  auto scale = [&](const Dim& d, bool mul) -> Dim {
    if (!d.known()) return ctx.fresh_dim();
    if (mul) return Dim(checked_mul(ctx, d.value, b, "a spatial dim times attribute 'blocksize'"));
    if (d.value % b != 0) ctx.fail("dim {} is not divisible by blocksize {}", d.value, b);
    return Dim(d.value / b);
  };
  if (to_space) {
    if (in[1].known() && in[1].value % bb != 0)
      ctx.fail("channels {} are not divisible by blocksize^2 = {}", in[1].value, bb);
    out[1] = in[1].known() ? Dim(in[1].value / bb) : ctx.fresh_dim();
    out[2] = scale(in[2], true);
    out[3] = scale(in[3], true);
  } else {
    out[1] = in[1].known() ? Dim(checked_mul(ctx, in[1].value, bb, "channels times blocksize^2"))
                           : ctx.fresh_dim();
    out[2] = scale(in[2], false);
    out[3] = scale(in[3], false);
  }
  ctx.set_output(0, dt, std::move(out));
}

void depth_to_space_shape(InferContext& ctx) { depth_space_shape(ctx, true); }
void space_to_depth_shape(InferContext& ctx) { depth_space_shape(ctx, false); }

void trilu_shape(InferContext& ctx) {
  if (ctx.has_shape(0) && ctx.input_rank(0) < 2)
    ctx.fail("input must have rank >= 2, got {}", ir::shape_str(ctx.input_shape(0)));
  if (ctx.has_input(1) && ctx.has_shape(1) && !ctx.input_shape(1).empty())
    ctx.fail("k must be a scalar, got shape {}", ir::shape_str(ctx.input_shape(1)));
  propagate(ctx);
}

void eye_like_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (ctx.has_attr("dtype")) {
    int64_t code = ctx.attr_i("dtype", 0);
    if (!dtype_valid(static_cast<int32_t>(code)) || code == static_cast<int64_t>(DType::kString))
      ctx.fail("attribute 'dtype' = {} is not a valid numeric or bool dtype", code);
    dt = static_cast<DType>(code);
  }
  if (!ctx.has_shape(0)) {
    ctx.set_output(0, dt, fresh_shape(ctx, 2));
    return;
  }
  if (ctx.input_rank(0) != 2) ctx.fail("input must be 2-D, got {}", ir::shape_str(ctx.input_shape(0)));
  ctx.set_output(0, dt, ctx.input_shape(0));
}

void one_hot_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(2);
  if (ctx.has_shape(2) && !(ctx.input_rank(2) == 1 && (!ctx.input_shape(2)[0].known() || ctx.input_shape(2)[0].value == 2)))
    ctx.fail("values must be a 1-D tensor of 2 elements (off, on), got {}", ir::shape_str(ctx.input_shape(2)));
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  auto r = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_i("axis", -1);
  if (axis < -r - 1 || axis > r) ctx.fail("axis {} is out of range [{}, {}]", axis, -r - 1, r);
  if (axis < 0) axis += r + 1;
  double depth = 0;
  Dim d = ctx.fresh_dim();
  if (input_scalar(ctx, 1, depth)) {
    if (!(depth >= 1) || depth > 9.0e18) ctx.fail("depth must be positive, got {}", depth);
    d = Dim(static_cast<int64_t>(depth));
  }
  Shape out = in;
  out.insert(out.begin() + axis, d);
  ctx.set_output(0, dt, std::move(out));
}

// ---- Pad / CenterCropPad ----

void pad_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  auto r = static_cast<int64_t>(in.size());
  std::string mode = ctx.attr_s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("mode must be constant, reflect, edge or wrap, got '{}'", mode);
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
  } else if (!ctx.input_ints(1, pads) || (ctx.has_input(3) && !ctx.input_ints(3, axes))) {
    ctx.set_output(0, dt, fresh_shape(ctx, in.size()));
    return;
  }
  if (axes.empty() && !(ctx.opset() >= 18 && ctx.has_input(3)))
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  axes = normalize_axes(ctx, axes, r);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads {} must have 2 * {} entries", dims_str(pads), axes.size());
  Shape out = in;
  size_t n = axes.size();
  for (size_t k = 0; k < n; ++k) {
    auto a = static_cast<size_t>(axes[k]);
    if (!in[a].known()) {
      if (pads[k] != 0 || pads[k + n] != 0) out[a] = ctx.fresh_dim();
      continue;
    }
    int64_t v = checked_add(ctx, checked_add(ctx, in[a].value, pads[k], "a padded axis"),
                            pads[k + n], "a padded axis");
    if (v < 0) ctx.fail("pads {} make axis {} (size {}) negative", dims_str(pads), a, in[a].value);
    if (mode != "constant" && in[a].value == 0 && v > 0)
      ctx.fail("cannot pad empty axis {} in mode '{}'", a, mode);
    out[a] = Dim(v);
  }
  ctx.set_output(0, dt, std::move(out));
}

void center_crop_pad_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  auto r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (!ctx.has_attr("axes"))
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  axes = normalize_axes(ctx, axes, r);
  std::vector<int64_t> target;
  Shape out = in;
  if (!ctx.input_ints(1, target)) {
    for (int64_t a : axes) out[static_cast<size_t>(a)] = ctx.fresh_dim();
  } else {
    if (target.size() != axes.size())
      ctx.fail("shape {} has {} entries for {} axes", dims_str(target), target.size(), axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      if (target[k] < 0) ctx.fail("shape {} has a negative value", dims_str(target));
      out[static_cast<size_t>(axes[k])] = Dim(target[k]);
    }
  }
  ctx.set_output(0, dt, std::move(out));
}

// ---- data-dependent: NonZero / Compress / Unique ----

void non_zero_shape(InferContext& ctx) {
  const ir::TypeInfo& t = ctx.input_type(0);
  Dim rank = t.has_shape ? Dim(static_cast<int64_t>(t.shape.size())) : ctx.fresh_dim();
  Dim count = ctx.fresh_dim();
  if (const Tensor* v = ctx.input_value(0)) {
    std::vector<uint8_t> m = kernels::nonzero_mask(*v);
    count = Dim(static_cast<int64_t>(std::count(m.begin(), m.end(), uint8_t{1})));
  }
  ctx.set_output(0, DType::kInt64, {rank, count});
}

void compress_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != DType::kBool)
    ctx.fail("condition must be bool, got {}", dtype_name(ctx.input_dtype(1)));
  if (ctx.has_shape(1) && ctx.input_rank(1) != 1)
    ctx.fail("condition must be 1-D, got {}", ir::shape_str(ctx.input_shape(1)));
  bool has_axis = ctx.has_attr("axis");
  if (!ctx.has_shape(0)) {
    if (has_axis) ctx.set_output_unranked(0, dt);
    else ctx.set_output(0, dt, {ctx.fresh_dim()});
    return;
  }
  const Shape& in = ctx.input_shape(0);
  Shape out = has_axis ? in : Shape{dims_product(in, 0, in.size())};
  size_t axis = 0;
  if (has_axis) axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(in.size())));
  const Tensor* cond = ctx.input_value(1);
  if (!cond || !out[axis].known()) {
    out[axis] = ctx.fresh_dim();
  } else {
    // Entries past the axis length are ignored (numpy.compress truncates the same way).
    int64_t n = std::min(cond->numel(), out[axis].value), count = 0;
    for (int64_t k = 0; k < n; ++k) count += cond->data<uint8_t>()[k] != 0;
    out[axis] = Dim(count);
  }
  ctx.set_output(0, dt, std::move(out));
}

void unique_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  bool has_axis = ctx.has_attr("axis");
  int64_t axis = -1;
  if (has_axis && ctx.has_shape(0))
    axis = normalize_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(ctx.input_rank(0)));
  Dim u = ctx.fresh_dim();
  Dim rows = ctx.fresh_dim();
  if (const Tensor* v = ctx.input_value(0)) {
    kernels::UniqueGroups g = kernels::unique_of(*v, axis, ctx.attr_i("sorted", 1) != 0);
    u = Dim(static_cast<int64_t>(g.first.size()));
    rows = Dim(static_cast<int64_t>(g.inverse.size()));
  } else if (ctx.has_shape(0)) {
    const Shape& in = ctx.input_shape(0);
    rows = has_axis ? in[static_cast<size_t>(axis)] : dims_product(in, 0, in.size());
  }
  if (!has_axis) {
    ctx.set_output(0, dt, {u});
  } else if (ctx.has_shape(0)) {
    Shape out = ctx.input_shape(0);
    out[static_cast<size_t>(axis)] = u;
    ctx.set_output(0, dt, std::move(out));
  } else {
    ctx.set_output_unranked(0, dt);
  }
  ctx.set_output(1, DType::kInt64, {u});
  ctx.set_output(2, DType::kInt64, {rows});
  ctx.set_output(3, DType::kInt64, {u});
}

void reverse_sequence_shape(InferContext& ctx) {
  if (ctx.has_shape(0)) {
    auto r = static_cast<int64_t>(ctx.input_rank(0));
    if (r < 2) ctx.fail("input must have rank >= 2, got {}", r);
    int64_t b = normalize_axis(ctx, ctx.attr_i("batch_axis", 1), r);
    int64_t t = normalize_axis(ctx, ctx.attr_i("time_axis", 0), r);
    if (b == t) ctx.fail("batch_axis and time_axis are both {}", b);
    const Dim& bd = ctx.input_shape(0)[static_cast<size_t>(b)];
    if (ctx.has_shape(1)) {
      const Shape& ls = ctx.input_shape(1);
      if (ls.size() != 1) ctx.fail("sequence_lens must be 1-D, got {}", ir::shape_str(ls));
      if (ls[0].known() && bd.known() && ls[0].value != bd.value)
        ctx.fail("sequence_lens has {} entries, batch size is {}", ls[0].value, bd.value);
    }
  }
  propagate(ctx);
}

}  // namespace

void register_tensor_shapes(ShapeRegistry& r) {
  r.add("", "Constant", constant_shape);
  r.add("", "Identity", identity_shape);
  r.add("", "Dropout", dropout_shape);
  r.add("", "Reshape", reshape_shape);
  r.add("", "Flatten", flatten_shape);
  r.add("", "Squeeze", squeeze_shape);
  r.add("", "Unsqueeze", unsqueeze_shape);
  r.add("", "Transpose", transpose_shape);
  r.add("", "Concat", concat_shape);
  r.add("", "Split", split_shape);
  r.add("", "Slice", slice_shape);
  r.add("", "Shape", shape_shape);
  r.add("", "Size", size_shape);
  r.add("", "Expand", expand_shape);
  r.add("", "Tile", tile_shape);
  r.add("", "ConstantOfShape", constant_of_shape_shape);
  r.add("", "Range", range_shape);
  r.add("", "DepthToSpace", depth_to_space_shape);
  r.add("", "SpaceToDepth", space_to_depth_shape);
  r.add("", "Trilu", trilu_shape);
  r.add("", "EyeLike", eye_like_shape);
  r.add("", "OneHot", one_hot_shape);
  r.add("", "Pad", pad_shape);
  r.add("", "CenterCropPad", center_crop_pad_shape);
  r.add("", "NonZero", non_zero_shape);
  r.add("", "Compress", compress_shape);
  r.add("", "Unique", unique_shape);
  r.add("", "ReverseSequence", reverse_sequence_shape);
}

}  // namespace onyx::shape
