// Reference kernels of the control family: If, Loop, Scan (opset 8 and 9+).
//
// Each runs a graph attribute through ctx.run_subgraph and sets its outputs itself,
// since their shapes are known only once the subgraph has run.
#include <limits>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace seqflow {
// Defined in sequence.cc.
void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off,
                   int64_t count);
}  // namespace seqflow

namespace {

using seqflow::copy_elements;

const ir::Graph& graph_attr(const KernelContext& ctx, const char* name) {
  const ir::Graph* g = ctx.node().attr_g(name);
  if (!g) ctx.fail("graph attribute '{}' is required", name);
  return *g;
}

bool read_bool(const KernelContext& ctx, const Value& v, const char* what) {
  if (!v.is_tensor()) ctx.fail("{} must be a tensor", what);
  const Tensor& t = v.tensor();
  if (t.dtype() != DType::kBool) ctx.fail("{} must be bool, got {}", what, dtype_name(t.dtype()));
  if (t.numel() != 1) ctx.fail("{} must hold one element, got shape {}", what, dims_str(t.dims()));
  return *t.data<uint8_t>() != 0;
}

// Product of dims[from, to).
int64_t span(const Dims& d, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n = checked_mul(n, d[k], "a product of dims");
  return n;
}

// Element dims and dtype a scan output would have, from the body's declared type; used
// when no iteration ran. Unknown extents become 0 (the result is empty either way).
Dims declared_dims(const ir::TypeInfo& t) {
  Dims d;
  if (t.kind == ir::TypeInfo::Kind::kTensor && t.has_shape)
    for (const ir::Dim& x : t.shape) d.push_back(x.known() ? x.value : 0);
  return d;
}
DType declared_dtype(const ir::TypeInfo& t) {
  return t.kind == ir::TypeInfo::Kind::kTensor && t.elem != DType::kUndefined ? t.elem
                                                                              : DType::kFloat;
}

// Per-output accumulation of the tensors each iteration produces; all must agree in
// dtype and shape.
struct Collector {
  std::vector<Tensor> parts;
  void add(const KernelContext& ctx, const Value& v, size_t k) {
    if (!v.is_tensor()) ctx.fail("scan output {} must be a tensor", k);
    const Tensor& t = v.tensor();
    if (!parts.empty() && (t.dtype() != parts[0].dtype() || t.dims() != parts[0].dims()))
      ctx.fail("scan output {} changed from {} {} to {} {} across iterations", k,
               dtype_name(parts[0].dtype()), dims_str(parts[0].dims()), dtype_name(t.dtype()),
               dims_str(t.dims()));
    parts.push_back(t);
  }
};

// Stacks the collected parts along a new axis `axis` (an axis of the result, which may
// be negative); `reverse` puts the last part first. `decl` types an empty result.
Tensor stack(const KernelContext& ctx, const std::vector<Tensor>& parts, int64_t axis,
             bool reverse, const ir::TypeInfo& decl) {
  Dims elem = parts.empty() ? declared_dims(decl) : parts[0].dims();
  DType dt = parts.empty() ? declared_dtype(decl) : parts[0].dtype();
  int64_t r = static_cast<int64_t>(elem.size()) + 1;
  if (axis < -r || axis >= r) ctx.fail("scan output axis {} is out of range for rank {}", axis, r);
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  int64_t n = static_cast<int64_t>(parts.size());
  Dims out = elem;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(a), n);
  Tensor y = ctx.new_tensor(dt, out);
  if (n == 0) return y;  // the declared element dims of an empty result may be anything
  int64_t outer = span(elem, 0, a);
  int64_t inner = span(elem, a, elem.size());
  for (int64_t t = 0; t < n; ++t) {
    const Tensor& p = parts[static_cast<size_t>(reverse ? n - 1 - t : t)];
    for (int64_t o = 0; o < outer; ++o) copy_elements(p, o * inner, y, (o * n + t) * inner, inner);
  }
  return y;
}

// x indexed at `idx` along `axis` (rank one less).
Tensor take(const Tensor& x, size_t axis, int64_t idx) {
  Dims d = x.dims();
  int64_t len = d[axis];
  d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
  Tensor e(x.dtype(), d);
  int64_t outer = span(x.dims(), 0, axis);
  int64_t inner = span(x.dims(), axis + 1, x.rank());
  for (int64_t o = 0; o < outer; ++o) copy_elements(x, (o * len + idx) * inner, e, o * inner, inner);
  return e;
}

void if_op(KernelContext& ctx) {
  bool cond = read_bool(ctx, Value(ctx.input(0)), "cond");
  std::vector<Value> outs = ctx.run_subgraph(cond ? "then_branch" : "else_branch", {});
  if (outs.size() < ctx.num_outputs())
    ctx.fail("{} returned {} values but the node has {} outputs",
             cond ? "then_branch" : "else_branch", outs.size(), ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(outs[i]));
}

void loop_op(KernelContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  if (ctx.num_inputs() < 2) ctx.fail("Loop needs inputs M and cond (either may be empty)");
  size_t n_carried = ctx.num_inputs() - 2;
  if (body.outputs.size() < 1 + n_carried)
    ctx.fail("body has {} outputs, expected at least {}", body.outputs.size(), 1 + n_carried);
  size_t n_scan = body.outputs.size() - 1 - n_carried;
  if (ctx.num_outputs() > n_carried + n_scan)
    ctx.fail("node has {} outputs but the loop produces {}", ctx.num_outputs(), n_carried + n_scan);

  bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  int64_t m = std::numeric_limits<int64_t>::max();
  if (has_m) {
    std::vector<int64_t> v = ctx.input_ints(0);
    if (v.size() != 1) ctx.fail("M must hold one element, got {}", v.size());
    m = v[0];
  }
  bool cond = has_cond ? read_bool(ctx, Value(ctx.input(1)), "cond") : true;
  // The spec ignores the body's condition when only M is given. With neither M nor cond
  // the loop would never end; like other runtimes, the body's condition ends it then.
  bool use_body_cond = has_cond || !has_m;
  // Without a condition the trip count is exact: refuse one past the limit up front.
  if (!use_body_cond) ctx.check_iterations(m);

  std::vector<Value> carried(n_carried);
  for (size_t i = 0; i < n_carried; ++i) {
    const Value* v = ctx.input_value(2 + i);
    carried[i] = v ? *v : Value::none();
  }
  std::vector<Collector> scans(n_scan);
  for (int64_t it = 0; it < m && cond; ++it) {
    std::vector<Value> args;
    args.reserve(2 + n_carried);
    args.emplace_back(Tensor::scalar<int64_t>(DType::kInt64, it));
    args.emplace_back(Tensor::scalar<uint8_t>(DType::kBool, cond ? 1 : 0));
    for (const Value& v : carried) args.push_back(v);
    std::vector<Value> res = ctx.run_subgraph("body", std::move(args));
    if (res.size() != 1 + n_carried + n_scan)
      ctx.fail("body returned {} values, expected {}", res.size(), 1 + n_carried + n_scan);
    if (use_body_cond) cond = read_bool(ctx, res[0], "the body's condition output");
    for (size_t i = 0; i < n_carried; ++i) carried[i] = std::move(res[1 + i]);
    for (size_t k = 0; k < n_scan; ++k) scans[k].add(ctx, res[1 + n_carried + k], k);
  }
  for (size_t i = 0; i < n_carried && i < ctx.num_outputs(); ++i)
    ctx.set_output(i, std::move(carried[i]));
  for (size_t k = 0; k < n_scan && n_carried + k < ctx.num_outputs(); ++k) {
    if (!ctx.has_output(n_carried + k)) continue;
    ctx.set_output(n_carried + k,
                   stack(ctx, scans[k].parts, 0, false, body.outputs[1 + n_carried + k].type));
  }
}

std::vector<int64_t> flags(const KernelContext& ctx, const char* name, size_t count) {
  std::vector<int64_t> v = ctx.attr_ints(name);
  if (v.empty()) v.assign(count, 0);
  if (v.size() != count) ctx.fail("attribute {} has {} entries, expected {}", name, v.size(), count);
  return v;
}

void check_directions(const KernelContext& ctx, const char* name, const std::vector<int64_t>& v) {
  for (int64_t d : v)
    if (d != 0 && d != 1) ctx.fail("attribute {} entries must be 0 or 1, got {}", name, d);
}

void scan9(KernelContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  size_t n_in = ctx.num_inputs();
  int64_t m_attr = ctx.attr_i("num_scan_inputs", -1);
  if (m_attr < 1 || m_attr > static_cast<int64_t>(n_in))
    ctx.fail("attribute num_scan_inputs must be in [1, {}], got {}", n_in, m_attr);
  size_t n_scan_in = static_cast<size_t>(m_attr);
  size_t n_state = n_in - n_scan_in;
  if (body.outputs.size() < n_state) ctx.fail("body has fewer outputs than the {} states", n_state);
  size_t n_scan_out = body.outputs.size() - n_state;
  auto in_axes = flags(ctx, "scan_input_axes", n_scan_in);
  auto in_dirs = flags(ctx, "scan_input_directions", n_scan_in);
  auto out_axes = flags(ctx, "scan_output_axes", n_scan_out);
  auto out_dirs = flags(ctx, "scan_output_directions", n_scan_out);
  check_directions(ctx, "scan_input_directions", in_dirs);
  check_directions(ctx, "scan_output_directions", out_dirs);

  std::vector<Value> states(n_state);
  for (size_t i = 0; i < n_state; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v) ctx.fail("state input {} is required", i);
    states[i] = *v;
  }
  std::vector<size_t> axes(n_scan_in);
  int64_t len = -1;
  for (size_t j = 0; j < n_scan_in; ++j) {
    const Tensor& x = ctx.input(n_state + j);
    int64_t r = static_cast<int64_t>(x.rank());
    if (in_axes[j] < -r || in_axes[j] >= r)
      ctx.fail("scan_input_axes[{}] = {} is out of range for scan input {} of rank {}", j,
               in_axes[j], j, r);
    axes[j] = static_cast<size_t>(in_axes[j] < 0 ? in_axes[j] + r : in_axes[j]);
    int64_t l = x.dim(axes[j]);
    if (len >= 0 && l != len)
      ctx.fail("scan inputs have different sequence lengths ({} and {})", len, l);
    len = l;
  }

  std::vector<Collector> scans(n_scan_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> args = states;
    for (size_t j = 0; j < n_scan_in; ++j)
      args.emplace_back(take(ctx.input(n_state + j), axes[j], in_dirs[j] ? len - 1 - t : t));
    std::vector<Value> res = ctx.run_subgraph("body", std::move(args));
    if (res.size() != n_state + n_scan_out)
      ctx.fail("body returned {} values, expected {}", res.size(), n_state + n_scan_out);
    for (size_t i = 0; i < n_state; ++i) states[i] = std::move(res[i]);
    for (size_t k = 0; k < n_scan_out; ++k) scans[k].add(ctx, res[n_state + k], k);
  }
  for (size_t i = 0; i < n_state && i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(states[i]));
  for (size_t k = 0; k < n_scan_out && n_state + k < ctx.num_outputs(); ++k) {
    if (!ctx.has_output(n_state + k)) continue;
    ctx.set_output(n_state + k, stack(ctx, scans[k].parts, out_axes[k], out_dirs[k] != 0,
                                      body.outputs[n_state + k].type));
  }
}

// Scan-8: batched. Input 0 is sequence_lens, states are [batch, ...], scan inputs
// [batch, seq, ...]; each batch entry runs its own loop, and scan outputs are padded
// with zeros past that entry's length.
void scan8(KernelContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  size_t n_in = ctx.num_inputs();
  int64_t m_attr = ctx.attr_i("num_scan_inputs", -1);
  if (m_attr < 1 || m_attr + 1 > static_cast<int64_t>(n_in))
    ctx.fail("attribute num_scan_inputs must be in [1, {}], got {}", n_in - 1, m_attr);
  size_t n_scan_in = static_cast<size_t>(m_attr);
  size_t n_state = n_in - 1 - n_scan_in;
  if (body.outputs.size() < n_state) ctx.fail("body has fewer outputs than the {} states", n_state);
  size_t n_scan_out = body.outputs.size() - n_state;
  auto dirs = flags(ctx, "directions", n_scan_in);
  check_directions(ctx, "directions", dirs);

  int64_t batch = -1, max_len = -1;
  for (size_t j = 0; j < n_scan_in; ++j) {
    const Tensor& x = ctx.input(1 + n_state + j);
    if (x.rank() < 2) ctx.fail("scan input {} must have rank >= 2 (batch, sequence, ...)", j);
    if (batch >= 0 && (x.dim(0) != batch || x.dim(1) != max_len))
      ctx.fail("scan inputs disagree on batch size or sequence length: {} vs [{}, {}, ...]",
               dims_str(x.dims()), batch, max_len);
    batch = x.dim(0);
    max_len = x.dim(1);
  }
  for (size_t i = 0; i < n_state; ++i) {
    const Tensor& s = ctx.input(1 + i);
    if (s.rank() < 1 || s.dim(0) != batch)
      ctx.fail("state {} of shape {} must have the batch size {} as its first dim", i,
               dims_str(s.dims()), batch);
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (ctx.has_input(0)) {
    lens = ctx.input_ints(0);
    if (static_cast<int64_t>(lens.size()) != batch)
      ctx.fail("sequence_lens has {} entries but the batch size is {}", lens.size(), batch);
    for (int64_t l : lens)
      if (l < 0 || l > max_len)
        ctx.fail("sequence_lens entry {} is outside [0, {}]", l, max_len);
  }

  // final[i][b]: state i after batch entry b; elems[k][b]: scan output k per step of b.
  std::vector<std::vector<Tensor>> final_states(n_state);
  std::vector<std::vector<Collector>> elems(n_scan_out, std::vector<Collector>(static_cast<size_t>(batch)));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> states;
    for (size_t i = 0; i < n_state; ++i) states.emplace_back(take(ctx.input(1 + i), 0, b));
    int64_t n = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < n; ++t) {
      std::vector<Value> args = states;
      for (size_t j = 0; j < n_scan_in; ++j) {
        const Tensor& x = ctx.input(1 + n_state + j);
        Dims d(x.dims().begin() + 2, x.dims().end());
        Tensor e(x.dtype(), d);
        int64_t idx = dirs[j] ? n - 1 - t : t;
        copy_elements(x, (b * max_len + idx) * e.numel(), e, 0, e.numel());
        args.emplace_back(std::move(e));
      }
      std::vector<Value> res = ctx.run_subgraph("body", std::move(args));
      if (res.size() != n_state + n_scan_out)
        ctx.fail("body returned {} values, expected {}", res.size(), n_state + n_scan_out);
      for (size_t i = 0; i < n_state; ++i) states[i] = std::move(res[i]);
      for (size_t k = 0; k < n_scan_out; ++k) elems[k][static_cast<size_t>(b)].add(ctx, res[n_state + k], k);
    }
    for (size_t i = 0; i < n_state; ++i) {
      if (!states[i].is_tensor()) ctx.fail("state {} must stay a tensor", i);
      final_states[i].push_back(states[i].tensor());
    }
  }

  for (size_t i = 0; i < n_state && i < ctx.num_outputs(); ++i) {
    if (batch == 0) {
      ctx.set_output(i, Value(ctx.input(1 + i)));
      continue;
    }
    const Tensor& f0 = final_states[i][0];
    Dims d = f0.dims();
    d.insert(d.begin(), batch);
    Tensor& y = ctx.alloc_output(i, f0.dtype(), d);
    for (int64_t b = 0; b < batch; ++b) {
      const Tensor& f = final_states[i][static_cast<size_t>(b)];
      if (f.dims() != f0.dims() || f.dtype() != f0.dtype())
        ctx.fail("state {} differs in shape across batch entries", i);
      copy_elements(f, 0, y, b * f.numel(), f.numel());
    }
  }
  for (size_t k = 0; k < n_scan_out && n_state + k < ctx.num_outputs(); ++k) {
    const Tensor* any = nullptr;
    for (const Collector& c : elems[k])
      if (!c.parts.empty()) {
        any = &c.parts[0];
        break;
      }
    const ir::TypeInfo& decl = body.outputs[n_state + k].type;
    Dims d = any ? any->dims() : declared_dims(decl);
    DType dt = any ? any->dtype() : declared_dtype(decl);
    int64_t per = dims_numel(d);
    d.insert(d.begin(), {batch, max_len});
    Tensor& y = ctx.alloc_output(n_state + k, dt, d);
    for (int64_t b = 0; b < batch; ++b) {
      const auto& parts = elems[k][static_cast<size_t>(b)].parts;
      if (!parts.empty() && (parts[0].dims() != any->dims() || parts[0].dtype() != dt))
        ctx.fail("scan output {} differs in shape across batch entries", k);
      for (size_t t = 0; t < parts.size(); ++t)
        copy_elements(parts[t], 0, y, (b * max_len + static_cast<int64_t>(t)) * per, per);
    }
  }
}

}  // namespace

void register_control(Registry& r) {
  r.add("", "If", 1, 1000, {}, if_op, -1);
  r.add("", "Loop", 1, 1000, {}, loop_op, -1);
  r.add("", "Scan", 8, 8, {}, scan8, -1);
  r.add("", "Scan", 9, 1000, {}, scan9, -1);
}

}  // namespace onyx::kernels
