// Reference kernels of the sequence family: Sequence*, SplitToSequence,
// ConcatFromSequence, SequenceMap and the Optional ops.
//
// A sequence holds its own copies of the tensors put into it: an input tensor may live
// in memory the executor reuses once the node has run, while the sequence lives on.
// An optional is the contained value itself, or Value::none() when empty.
#include <cstring>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace seqflow {

/// Copies `count` elements of `src` from `src_off` to `dst` at `dst_off` (same dtype;
/// the caller guarantees both ranges are in bounds).
void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off,
                   int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::kString) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t k = 0; k < count; ++k) d[k] = s[k];
    return;
  }
  size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + static_cast<size_t>(dst_off) * es,
              static_cast<const char*>(src.raw()) + static_cast<size_t>(src_off) * es,
              static_cast<size_t>(count) * es);
}

}  // namespace seqflow

namespace {

using seqflow::copy_elements;

const Value& seq_input(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_value(i);
  if (!v || v->is_none()) ctx.fail("input {} (a sequence) is required but not given", i);
  if (!v->is_sequence()) ctx.fail("input {} must be a sequence, got a tensor", i);
  return *v;
}

DType seq_dtype(const Value& v) {
  if (v.seq_dtype() != DType::kUndefined || v.seq().empty()) return v.seq_dtype();
  return v.seq()[0].dtype();
}

int64_t scalar_position(const KernelContext& ctx, size_t i) {
  std::vector<int64_t> p = ctx.input_ints(i);
  if (p.size() != 1) ctx.fail("position must be a scalar, got {} values", p.size());
  return p[0];
}

// Product of dims[from, to).
int64_t span(const Dims& d, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n = checked_mul(n, d[k], "a product of dims");
  return n;
}

void sequence_construct(KernelContext& ctx) {
  std::vector<Tensor> items;
  DType dt = DType::kUndefined;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (i == 0) dt = t.dtype();
    else if (t.dtype() != dt)
      ctx.fail("all inputs must share one dtype: input 0 is {}, input {} is {}", dtype_name(dt), i,
               dtype_name(t.dtype()));
    items.push_back(t.clone());
  }
  ctx.set_output(0, Value::sequence(dt, std::move(items)));
}

void sequence_empty(KernelContext& ctx) {
  int64_t dt = ctx.attr_i("dtype", static_cast<int64_t>(DType::kFloat));
  if (dt != static_cast<int32_t>(dt) || !dtype_valid(static_cast<int32_t>(dt)))
    ctx.fail("attribute dtype {} is not a valid tensor element type", dt);
  ctx.set_output(0, Value::sequence(static_cast<DType>(dt), {}));
}

void sequence_at(KernelContext& ctx) {
  const auto& items = seq_input(ctx, 0).seq();
  int64_t n = static_cast<int64_t>(items.size());
  int64_t p = scalar_position(ctx, 1);
  if (p < -n || p >= n) ctx.fail("position {} is out of range for a sequence of {} tensors", p, n);
  if (p < 0) p += n;
  ctx.set_output(0, Value(items[static_cast<size_t>(p)].clone()));
}

void sequence_insert(KernelContext& ctx) {
  const Value& s = seq_input(ctx, 0);
  const Tensor& t = ctx.input(1);
  DType dt = seq_dtype(s);
  if (dt != DType::kUndefined && t.dtype() != dt)
    ctx.fail("cannot insert a {} tensor into a sequence of {}", dtype_name(t.dtype()),
             dtype_name(dt));
  int64_t n = static_cast<int64_t>(s.seq().size());
  int64_t p = ctx.has_input(2) ? scalar_position(ctx, 2) : n;
  if (p < -n || p > n) ctx.fail("position {} is out of range [-{}, {}]", p, n, n);
  if (p < 0) p += n;
  std::vector<Tensor> items = s.seq();
  items.insert(items.begin() + p, t.clone());
  ctx.set_output(0, Value::sequence(t.dtype(), std::move(items)));
}

void sequence_erase(KernelContext& ctx) {
  const Value& s = seq_input(ctx, 0);
  int64_t n = static_cast<int64_t>(s.seq().size());
  int64_t p = ctx.has_input(1) ? scalar_position(ctx, 1) : -1;
  if (p < -n || p >= n) ctx.fail("position {} is out of range for a sequence of {} tensors", p, n);
  if (p < 0) p += n;
  std::vector<Tensor> items = s.seq();
  items.erase(items.begin() + p);
  ctx.set_output(0, Value::sequence(seq_dtype(s), std::move(items)));
}

void sequence_length(KernelContext& ctx) {
  const Value& s = seq_input(ctx, 0);
  *ctx.alloc_output(0, DType::kInt64, {}).data<int64_t>() = static_cast<int64_t>(s.seq().size());
}

void split_to_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = static_cast<int64_t>(x.rank());
  if (r == 0) ctx.fail("input must have rank >= 1 to be split");
  int64_t axis = ctx.attr_i("axis", 0);
  if (axis < -r || axis >= r) ctx.fail("axis {} is out of range for rank {}", axis, r);
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  int64_t dim = x.dim(a);
  bool keep = true;
  std::vector<int64_t> lens;
  if (ctx.has_input(1)) {
    const Tensor& st = ctx.input(1);
    std::vector<int64_t> split = ctx.input_ints(1);
    if (st.rank() > 1) ctx.fail("split must be a scalar or 1-D, got shape {}", dims_str(st.dims()));
    if (st.rank() == 0) {
      if (split[0] <= 0) ctx.fail("a scalar split must be > 0, got {}", split[0]);
      const int64_t parts = dim / split[0] + (dim % split[0] != 0);
      if (x.numel() == 0 && parts > kMaxEmptySlices)
        ctx.fail(
            "splitting the empty input {} along axis {} would make a sequence of {} empty tensors "
            "(onyx allows at most {})",
            dims_str(x.dims()), a, parts, kMaxEmptySlices);
      for (int64_t left = dim; left > 0; left -= split[0]) lens.push_back(std::min(left, split[0]));
    } else {
      int64_t sum = 0;
      for (int64_t v : split) {
        if (v < 0) ctx.fail("split values must be >= 0, got {}", v);
        if (v > dim - sum) {
          sum = -1;
          break;
        }
        sum += v;
      }
      if (sum != dim)
        ctx.fail("split values {} do not sum to the size {} of axis {}", dims_str(split), dim, a);
      lens = split;
    }
  } else {
    keep = ctx.attr_i("keepdims", 1) != 0;
    if (x.numel() == 0 && dim > kMaxEmptySlices)
      ctx.fail(
          "splitting the empty input {} along axis {} would make a sequence of {} empty tensors "
          "(onyx allows at most {})",
          dims_str(x.dims()), a, dim, kMaxEmptySlices);
    lens.assign(static_cast<size_t>(dim), 1);
  }
  int64_t outer = span(x.dims(), 0, a);
  int64_t inner = span(x.dims(), a + 1, x.rank());
  std::vector<Tensor> items;
  items.reserve(lens.size());
  int64_t start = 0;
  for (int64_t len : lens) {
    Dims d = x.dims();
    d[a] = len;
    Tensor part = ctx.new_tensor(x.dtype(), d);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(x, (o * dim + start) * inner, part, o * len * inner, len * inner);
    if (!keep) d.erase(d.begin() + static_cast<std::ptrdiff_t>(a));
    items.push_back(keep ? part : part.reshaped(d));
    start += len;
  }
  ctx.set_output(0, Value::sequence(x.dtype(), std::move(items)));
}

void concat_from_sequence(KernelContext& ctx) {
  const auto& items = seq_input(ctx, 0).seq();
  if (!ctx.has_attr("axis")) ctx.fail("attribute axis is required");
  int64_t axis = ctx.attr_i("axis", 0);
  int64_t new_axis = ctx.attr_i("new_axis", 0);
  if (new_axis != 0 && new_axis != 1) ctx.fail("attribute new_axis must be 0 or 1, got {}", new_axis);
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
  const Tensor& first = items[0];
  int64_t r = static_cast<int64_t>(first.rank());
  int64_t out_r = r + new_axis;
  if (axis < -out_r || axis >= out_r)
    ctx.fail("axis {} is out of range [{}, {}] for tensors of rank {}{}", axis, -out_r, out_r - 1,
             r, new_axis ? " with new_axis=1" : "");
  size_t a = static_cast<size_t>(axis < 0 ? axis + out_r : axis);
  Dims out = first.dims();
  if (new_axis) out.insert(out.begin() + static_cast<std::ptrdiff_t>(a), 0);
  else out[a] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i];
    if (t.dtype() != first.dtype())
      ctx.fail("sequence holds tensors of dtypes {} and {}", dtype_name(first.dtype()),
               dtype_name(t.dtype()));
    bool ok = t.rank() == first.rank();
    for (size_t k = 0; ok && k < t.rank(); ++k)
      ok = t.dim(k) == first.dim(k) || (!new_axis && k == a);
    if (!ok)
      ctx.fail("tensor {} of shape {} does not match tensor 0 of shape {} (axis {})", i,
               dims_str(t.dims()), dims_str(first.dims()), a);
    out[a] = checked_add(out[a], new_axis ? 1 : t.dim(a), "the concatenated axis");
  }
  Tensor& y = ctx.alloc_output(0, first.dtype(), out);
  if (y.numel() == 0) return;
  // Each item is an [outer, len, rest] block; len is 1 for a new axis.
  int64_t outer = span(first.dims(), 0, a);
  int64_t rest = span(first.dims(), new_axis ? a : a + 1, first.rank());
  int64_t row = out[a] * rest;
  int64_t at = 0;
  for (const Tensor& t : items) {
    int64_t len = new_axis ? 1 : t.dim(a);
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(t, o * len * rest, y, o * row + at, len * rest);
    at += len * rest;
  }
}

void sequence_map(KernelContext& ctx) {
  const auto& first = seq_input(ctx, 0).seq();
  size_t n = first.size();
  std::vector<const Value*> ins;
  for (size_t j = 0; j < ctx.num_inputs(); ++j) {
    const Value* v = ctx.input_value(j);
    if (!v || v->is_none()) ctx.fail("input {} is required but not given", j);
    if (v->is_sequence() && v->seq().size() != n)
      ctx.fail("input {} holds {} tensors but input 0 holds {}", j, v->seq().size(), n);
    ins.push_back(v);
  }
  const ir::Graph* body = ctx.node().attr_g("body");
  if (!body) ctx.fail("graph attribute 'body' is required");
  size_t n_out = ctx.num_outputs();
  if (body->outputs.size() != n_out)
    ctx.fail("body has {} outputs but the node has {}", body->outputs.size(), n_out);
  std::vector<std::vector<Tensor>> outs(n_out);
  std::vector<DType> dts(n_out);
  for (size_t k = 0; k < n_out; ++k) dts[k] = body->outputs[k].type.elem;
  for (size_t i = 0; i < n; ++i) {
    std::vector<Value> args;
    args.reserve(ins.size());
    for (const Value* v : ins) args.push_back(v->is_sequence() ? Value(v->seq()[i]) : *v);
    std::vector<Value> res = ctx.run_subgraph("body", std::move(args));
    if (res.size() < n_out) ctx.fail("body returned {} values, expected {}", res.size(), n_out);
    for (size_t k = 0; k < n_out; ++k) {
      if (!res[k].is_tensor()) ctx.fail("body output {} must be a tensor", k);
      const Tensor& t = res[k].tensor();
      if (outs[k].empty()) dts[k] = t.dtype();
      else if (t.dtype() != dts[k])
        ctx.fail("body output {} changed dtype from {} to {}", k, dtype_name(dts[k]),
                 dtype_name(t.dtype()));
      outs[k].push_back(t);
    }
  }
  for (size_t k = 0; k < n_out; ++k) ctx.set_output(k, Value::sequence(dts[k], std::move(outs[k])));
}

void optional_op(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  ctx.set_output(0, v ? *v : Value::none());
}

void optional_has_element(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  *ctx.alloc_output(0, DType::kBool, {}).data<uint8_t>() = (v && !v->is_none()) ? 1 : 0;
}

void optional_get_element(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  if (!v || v->is_none()) ctx.fail("the optional input is empty");
  ctx.set_output(0, *v);
}

}  // namespace

void register_sequence(Registry& r) {
  auto add = [&](const char* op, int since, KernelFn fn) { r.add("", op, since, 1000, {}, fn, -1); };
  add("SequenceConstruct", 11, sequence_construct);
  add("SequenceEmpty", 11, sequence_empty);
  add("SequenceAt", 11, sequence_at);
  add("SequenceInsert", 11, sequence_insert);
  add("SequenceErase", 11, sequence_erase);
  add("SequenceLength", 11, sequence_length);
  add("SplitToSequence", 11, split_to_sequence);
  add("ConcatFromSequence", 11, concat_from_sequence);
  add("SequenceMap", 17, sequence_map);
  add("Optional", 15, optional_op);
  add("OptionalHasElement", 15, optional_has_element);
  add("OptionalGetElement", 15, optional_get_element);
}

}  // namespace onyx::kernels
