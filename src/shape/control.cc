// Shape functions of the control family: If, Loop, Scan.
//
// Their outputs come from running a subgraph, so the best static type is built from the
// subgraph's declared output types. Named dims in those types belong to the subgraph's
// scope (a body's "N" is not the outer graph's "N"), so they become fresh symbols here.
#include <memory>

#include "shape/infer.h"

namespace onyx::shape {

namespace flow {

ir::TypeInfo scope_type(InferContext& ctx, const ir::TypeInfo& t) {
  ir::TypeInfo r = t;
  for (ir::Dim& d : r.shape)
    if (!d.known() && !d.param.empty()) d = ctx.fresh_dim();
  if (r.inner) r.inner = std::make_shared<ir::TypeInfo>(scope_type(ctx, *r.inner));
  return r;
}

ir::TypeInfo merge_types(InferContext& ctx, const ir::TypeInfo& a, const ir::TypeInfo& b) {
  using K = ir::TypeInfo::Kind;
  if (a.kind == K::kUnknown) return b;
  if (b.kind == K::kUnknown || a.kind != b.kind) return a;
  ir::TypeInfo t = a;
  if (a.kind == K::kSequence || a.kind == K::kOptional) {
    if (!a.inner) return b;
    if (!b.inner) return a;
    t.inner = std::make_shared<ir::TypeInfo>(merge_types(ctx, *a.inner, *b.inner));
    return t;
  }
  if (t.elem == DType::kUndefined) t.elem = b.elem;
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) {
    t.has_shape = false;
    t.shape.clear();
    return t;
  }
  for (size_t k = 0; k < t.shape.size(); ++k)
    if (!(a.shape[k] == b.shape[k])) t.shape[k] = ctx.fresh_dim();
  return t;
}

}  // namespace flow

namespace {

using flow::merge_types;
using flow::scope_type;

const ir::Graph& graph_attr(const InferContext& ctx, const char* name) {
  const ir::Graph* g = ctx.node().attr_g(name);
  if (!g) ctx.fail("graph attribute '{}' is required", name);
  return *g;
}

// The declared type of output `i` of `g`, scoped; unknown when not declared.
ir::TypeInfo body_output(InferContext& ctx, const ir::Graph& g, size_t i) {
  return scope_type(ctx, g.outputs[i].type);
}

// A loop-carried / state value's type when the body says nothing about it: the initial
// value's dtype and rank, with extents unknown since they may change across iterations.
ir::TypeInfo loose_type(InferContext& ctx, const ir::TypeInfo& t) {
  ir::TypeInfo r = t;
  for (ir::Dim& d : r.shape) d = ctx.fresh_dim();
  if (r.inner) r.inner = std::make_shared<ir::TypeInfo>(loose_type(ctx, *r.inner));
  return r;
}

ir::TypeInfo with_leading(InferContext& ctx, const ir::TypeInfo& elem, std::vector<ir::Dim> lead,
                          int64_t axis = 0) {
  if (elem.kind != ir::TypeInfo::Kind::kTensor) {
    if (elem.kind == ir::TypeInfo::Kind::kUnknown) return ir::TypeInfo{};
    ctx.fail("scan output must be a tensor, the body declares {}", elem.str());
  }
  if (!elem.has_shape) return ir::TypeInfo::tensor_unranked(elem.elem);
  ir::Shape s = elem.shape;
  s.insert(s.begin() + axis, lead.begin(), lead.end());
  return ir::TypeInfo::tensor(elem.elem, std::move(s));
}

void infer_if(InferContext& ctx) {
  const ir::Graph& then_g = graph_attr(ctx, "then_branch");
  const ir::Graph& else_g = graph_attr(ctx, "else_branch");
  if (ctx.has_shape(0) && ir::shape_known(ctx.input_shape(0))) {
    for (const ir::Dim& d : ctx.input_shape(0))
      if (d.value != 1) ctx.fail("cond must hold a single element, got shape {}", ir::shape_str(ctx.input_shape(0)));
  }
  if (ctx.has_input(0) && ctx.input_dtype(0) != DType::kBool &&
      ctx.input_dtype(0) != DType::kUndefined)
    ctx.fail("cond must be bool, got {}", dtype_name(ctx.input_dtype(0)));
  size_t n_out = ctx.num_outputs();
  if (then_g.outputs.size() != else_g.outputs.size())
    ctx.fail("then_branch has {} outputs but else_branch has {}", then_g.outputs.size(),
             else_g.outputs.size());
  if (n_out > then_g.outputs.size())
    ctx.fail("node has {} outputs but the branches produce {}", n_out, then_g.outputs.size());
  // A known condition selects one branch's types exactly.
  const Tensor* cond = ctx.input_value(0);
  int which = -1;
  if (cond && cond->numel() == 1 && cond->dtype() == DType::kBool)
    which = *cond->data<uint8_t>() ? 1 : 0;
  for (size_t i = 0; i < n_out; ++i) {
    ir::TypeInfo t = body_output(ctx, then_g, i);
    ir::TypeInfo e = body_output(ctx, else_g, i);
    if (t.kind == ir::TypeInfo::Kind::kTensor && e.kind == ir::TypeInfo::Kind::kTensor &&
        t.elem != DType::kUndefined && e.elem != DType::kUndefined && t.elem != e.elem)
      ctx.fail("output {} is {} in then_branch but {} in else_branch", i, dtype_name(t.elem),
               dtype_name(e.elem));
    if (which == 1 && t.kind != ir::TypeInfo::Kind::kUnknown) ctx.set_output(i, std::move(t));
    else if (which == 0 && e.kind != ir::TypeInfo::Kind::kUnknown) ctx.set_output(i, std::move(e));
    else ctx.set_output(i, merge_types(ctx, t, e));
  }
}

void infer_loop(InferContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  if (ctx.num_inputs() < 2) ctx.fail("Loop needs inputs M and cond (either may be empty)");
  size_t n_carried = ctx.num_inputs() - 2;
  if (body.inputs.size() != n_carried + 2)
    ctx.fail("body has {} inputs, expected {} (iteration number, condition and {} loop-carried "
             "values)", body.inputs.size(), n_carried + 2, n_carried);
  if (body.outputs.size() < n_carried + 1)
    ctx.fail("body has {} outputs, expected at least {} (condition and {} loop-carried values)",
             body.outputs.size(), n_carried + 1, n_carried);
  size_t n_scan = body.outputs.size() - 1 - n_carried;
  if (ctx.num_outputs() > n_carried + n_scan)
    ctx.fail("node has {} outputs but the loop produces {}", ctx.num_outputs(),
             n_carried + n_scan);
  std::vector<int64_t> m;
  if (ctx.has_input(0) && ctx.input_ints(0, m) && m.size() != 1)
    ctx.fail("M must hold a single element, got {}", m.size());

  for (size_t i = 0; i < n_carried; ++i) {
    ir::TypeInfo b = body_output(ctx, body, 1 + i);
    if (!ctx.has_input(2 + i)) {
      ctx.set_output(i, std::move(b));
      continue;
    }
    const ir::TypeInfo& in = ctx.input_type(2 + i);
    if (b.kind == ir::TypeInfo::Kind::kUnknown) ctx.set_output(i, loose_type(ctx, in));
    else ctx.set_output(i, merge_types(ctx, b, in));
  }
  // Without a cond input the trip count alone decides the number of iterations.
  ir::Dim trips = ctx.fresh_dim();
  if (m.size() == 1 && (!ctx.has_input(1) || m[0] <= 0)) trips = ir::Dim(m[0] > 0 ? m[0] : 0);
  for (size_t k = 0; k < n_scan; ++k)
    ctx.set_output(n_carried + k, with_leading(ctx, body_output(ctx, body, 1 + n_carried + k), {trips}));
}

// Scan-8: input 0 is sequence_lens, then states, then scan inputs [batch, seq, ...].
void infer_scan8(InferContext& ctx) {
  const ir::Graph& body = graph_attr(ctx, "body");
  int64_t n_scan_in = ctx.attr_i("num_scan_inputs", -1);
  if (n_scan_in < 1) ctx.fail("attribute num_scan_inputs must be >= 1");
  if (static_cast<int64_t>(ctx.num_inputs()) < 1 + n_scan_in)
    ctx.fail("Scan-8 needs sequence_lens (may be empty) and {} scan inputs", n_scan_in);
  size_t n_state = ctx.num_inputs() - 1 - static_cast<size_t>(n_scan_in);
  if (body.inputs.size() != ctx.num_inputs() - 1)
    ctx.fail("body has {} inputs, expected {}", body.inputs.size(), ctx.num_inputs() - 1);
  if (body.outputs.size() < n_state) ctx.fail("body has fewer outputs than states");
  size_t n_scan_out = body.outputs.size() - n_state;
  auto dirs = ctx.attr_ints("directions");
  if (!dirs.empty() && static_cast<int64_t>(dirs.size()) != n_scan_in)
    ctx.fail("directions has {} entries, expected {}", dirs.size(), n_scan_in);
  for (int64_t d : dirs)
    if (d != 0 && d != 1) ctx.fail("directions entries must be 0 or 1, got {}", d);
  ir::Dim batch = ctx.fresh_dim(), seq = ctx.fresh_dim();
  for (size_t j = 0; j < static_cast<size_t>(n_scan_in); ++j) {
    size_t in = 1 + n_state + j;
    if (!ctx.has_shape(in)) continue;
    const ir::Shape& s = ctx.input_shape(in);
    if (s.size() < 2) ctx.fail("scan input {} must have rank >= 2 (batch, sequence)", j);
    if (s[0].known()) batch = s[0];
    if (s[1].known()) seq = s[1];
  }
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, ctx.input_type(1 + i));
  for (size_t k = 0; k < n_scan_out; ++k)
    ctx.set_output(n_state + k, with_leading(ctx, body_output(ctx, body, n_state + k), {batch, seq}));
}

void infer_scan(InferContext& ctx) {
  if (ctx.opset() < 9) return infer_scan8(ctx);
  const ir::Graph& body = graph_attr(ctx, "body");
  int64_t n_scan_in = ctx.attr_i("num_scan_inputs", -1);
  if (n_scan_in < 1 || n_scan_in > static_cast<int64_t>(ctx.num_inputs()))
    ctx.fail("attribute num_scan_inputs must be in [1, {}], got {}", ctx.num_inputs(), n_scan_in);
  size_t n_state = ctx.num_inputs() - static_cast<size_t>(n_scan_in);
  if (body.inputs.size() != ctx.num_inputs())
    ctx.fail("body has {} inputs, expected {}", body.inputs.size(), ctx.num_inputs());
  if (body.outputs.size() < n_state) ctx.fail("body has fewer outputs than states");
  size_t n_scan_out = body.outputs.size() - n_state;
  if (ctx.num_outputs() > body.outputs.size())
    ctx.fail("node has {} outputs but the body produces {}", ctx.num_outputs(), body.outputs.size());
  auto in_axes = ctx.attr_ints("scan_input_axes");
  auto in_dirs = ctx.attr_ints("scan_input_directions");
  auto out_axes = ctx.attr_ints("scan_output_axes");
  auto out_dirs = ctx.attr_ints("scan_output_directions");
  if (!in_axes.empty() && static_cast<int64_t>(in_axes.size()) != n_scan_in)
    ctx.fail("scan_input_axes has {} entries, expected {}", in_axes.size(), n_scan_in);
  if (!in_dirs.empty() && static_cast<int64_t>(in_dirs.size()) != n_scan_in)
    ctx.fail("scan_input_directions has {} entries, expected {}", in_dirs.size(), n_scan_in);
  if (!out_axes.empty() && out_axes.size() != n_scan_out)
    ctx.fail("scan_output_axes has {} entries, expected {}", out_axes.size(), n_scan_out);
  if (!out_dirs.empty() && out_dirs.size() != n_scan_out)
    ctx.fail("scan_output_directions has {} entries, expected {}", out_dirs.size(), n_scan_out);
  for (int64_t d : in_dirs)
    if (d != 0 && d != 1) ctx.fail("scan_input_directions entries must be 0 or 1, got {}", d);
  for (int64_t d : out_dirs)
    if (d != 0 && d != 1) ctx.fail("scan_output_directions entries must be 0 or 1, got {}", d);

  ir::Dim seq = ctx.fresh_dim();
  for (size_t j = 0; j < static_cast<size_t>(n_scan_in); ++j) {
    size_t in = n_state + j;
    if (!ctx.has_shape(in)) continue;
    const ir::Shape& s = ctx.input_shape(in);
    if (s.empty()) ctx.fail("scan input {} is a scalar; it needs an axis to scan", j);
    int64_t ax = normalize_axis(ctx, in_axes.empty() ? 0 : in_axes[j], static_cast<int64_t>(s.size()));
    const ir::Dim& d = s[static_cast<size_t>(ax)];
    if (d.known() && seq.known() && d.value != seq.value)
      ctx.fail("scan inputs have different sequence lengths ({} and {})", seq.value, d.value);
    if (d.known()) seq = d;
  }
  for (size_t i = 0; i < n_state; ++i) {
    const ir::TypeInfo& in = ctx.input_type(i);
    if (in.kind == ir::TypeInfo::Kind::kUnknown) ctx.set_output(i, body_output(ctx, body, i));
    else ctx.set_output(i, in);
  }
  for (size_t k = 0; k < n_scan_out; ++k) {
    ir::TypeInfo e = body_output(ctx, body, n_state + k);
    int64_t ax = out_axes.empty() ? 0 : out_axes[k];
    if (e.kind == ir::TypeInfo::Kind::kTensor && e.has_shape)
      ax = normalize_axis(ctx, ax, static_cast<int64_t>(e.shape.size()) + 1);
    else
      ax = 0;
    ctx.set_output(n_state + k, with_leading(ctx, e, {seq}, ax));
  }
}

}  // namespace

void register_control_shapes(ShapeRegistry& r) {
  r.add("", "If", infer_if);
  r.add("", "Loop", infer_loop);
  r.add("", "Scan", infer_scan);
}

}  // namespace onyx::shape
