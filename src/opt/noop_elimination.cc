// Pass eliminate_noops: removes nodes whose output equals their input.
//   Identity; Dropout in inference (before opset 12 always; from 12 when training_mode is
//   absent or a constant false, or ratio a constant 0), when its mask output is unused;
//   Cast / CastLike to the type the input already has; Reshape to the shape the input
//   already has (a constant shape whose every entry is the input's dim, 0 copying it, or
//   one -1); Transpose with the identity permutation; Expand to a constant shape the input
//   already covers; Concat of a single input.
// Readers of the output read the input instead (bypass() in pass.cc says what happens
// when the output is a graph output).
#include "opt/pass.h"

namespace onyx::opt {
namespace {

bool dropout_is_identity(const PassContext& ctx, const ir::Node& n) {
  if (n.outputs.size() > 1 && !n.outputs[1].empty() &&
      (ctx.pinned(n.outputs[1]) || ctx.use_count(n.outputs[1]) > 0))
    return false;
  if (n.opset < 12) return true;
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    auto r = ctx.scalar(n.inputs[1]);
    if (r && *r == 0.0) return true;
  }
  if (n.inputs.size() < 3 || n.inputs[2].empty()) return true;
  const Tensor* t = ctx.constant(n.inputs[2]);
  return t && t->dtype() == DType::kBool && t->numel() == 1 && t->data<uint8_t>()[0] == 0;
}

bool reshape_is_identity(const PassContext& ctx, const ir::Node& n) {
  if (n.inputs.size() < 2) return false;
  const ir::Shape* in = ctx.shape(n.inputs[0]);
  auto s = const_ints(ctx, n.inputs[1]);
  if (!in || !s || s->size() != in->size()) return false;
  const bool allowzero = n.attr_i("allowzero", 0) != 0 && n.opset >= 14;
  int minus_one = 0;
  for (size_t k = 0; k < s->size(); ++k) {
    const int64_t v = (*s)[k];
    if (v == -1) {
      ++minus_one;
      continue;
    }
    if (v == 0 && !allowzero) continue;
    if (!(*in)[k].known() || (*in)[k].value != v) return false;
  }
  return minus_one <= 1;
}

bool transpose_is_identity(const PassContext& ctx, const ir::Node& n) {
  const ir::Attribute* p = n.attr("perm");
  if (!p) return ctx.rank(n.inputs[0]) >= 0 && ctx.rank(n.inputs[0]) <= 1;  // reversing 0 or 1 axes
  for (size_t k = 0; k < p->ints.size(); ++k)
    if (p->ints[k] != static_cast<int64_t>(k)) return false;
  return true;
}

bool expand_is_identity(const PassContext& ctx, const ir::Node& n) {
  if (n.inputs.size() < 2) return false;
  const ir::Shape* in = ctx.shape(n.inputs[0]);
  auto s = const_ints(ctx, n.inputs[1]);
  if (!in || !s || s->size() > in->size()) return false;
  const size_t off = in->size() - s->size();
  for (size_t k = 0; k < s->size(); ++k) {
    const ir::Dim& d = (*in)[off + k];
    if ((*s)[k] == 1) continue;
    if (!d.known() || d.value != (*s)[k]) return false;
  }
  return true;
}

bool is_noop(const PassContext& ctx, const ir::Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.inputs[0].empty() || given_outputs(n) < 1 ||
      n.outputs[0].empty())
    return false;
  const std::string& op = n.op_type;
  if (op == "Identity") return true;
  if (op == "Dropout") return dropout_is_identity(ctx, n);
  if (op == "Cast") {
    DType in = ctx.dtype(n.inputs[0]);
    return in != DType::kUndefined && static_cast<int64_t>(in) == n.attr_i("to", 0);
  }
  if (op == "CastLike") {
    DType in = ctx.dtype(n.inputs[0]);
    return n.inputs.size() > 1 && in != DType::kUndefined && in == ctx.dtype(n.inputs[1]);
  }
  if (op == "Reshape") return reshape_is_identity(ctx, n);
  if (op == "Transpose") return transpose_is_identity(ctx, n);
  if (op == "Expand") return expand_is_identity(ctx, n);
  if (op == "Concat") return given_inputs(n) == 1;
  return false;
}

}  // namespace

int64_t eliminate_noops(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& n = ctx.node(i);
    if (!is_noop(ctx, n)) continue;
    const std::string in = n.inputs[0], out = n.outputs[0];
    if (bypass(ctx, i, in, out)) ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
