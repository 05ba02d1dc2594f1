// Pass cancel_transpose_reshape: shortens chains of layout ops.
//   Transpose(Transpose(x, p1), p2) -> Transpose(x, p) with p[i] = p1[p2[i]], or x itself
//     when p is the identity (an Identity when the output must keep its name and x is
//     a graph input);
//   Reshape(R(x), s) -> Reshape(x, s) where R is a Reshape, Flatten, Squeeze or Unsqueeze
//     (all keep the element order) and s is a constant without 0 entries (0 would copy a
//     dim of R's output, which x may not have) or allowzero is set;
//   Squeeze(Unsqueeze(x, a), a) -> x and Unsqueeze(Squeeze(x, a), a) -> x (same axes,
//     normalized; Squeeze only removes dims of size 1, which Unsqueeze puts back).
// The inner node stays when something else reads it (eliminate_dead_nodes removes it
// otherwise). Reshape-like ops already run as views of their input
// (src/kernels/cpu/views.cc); this pass only saves the steps.
#include <algorithm>

#include "opt/pass.h"

namespace onyx::opt {
namespace {

/// The permutation of a Transpose node (absent attribute: reversed axes, needing the rank).
std::optional<std::vector<int64_t>> perm_of(const PassContext& ctx, const ir::Node& n) {
  if (const ir::Attribute* a = n.attr("perm")) return a->ints;
  int64_t r = ctx.rank(n.inputs[0]);
  if (r < 0) return std::nullopt;
  std::vector<int64_t> p(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k) p[k] = r - 1 - k;
  return p;
}

bool valid_perm(const std::vector<int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t v : p) {
    if (v < 0 || v >= static_cast<int64_t>(p.size()) || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

/// Node `i` computes `x` again: its readers read x, or, when its output must keep its
/// name (a graph output fed by a graph input, say), it becomes Identity(x).
int64_t collapse(PassContext& ctx, size_t i, const std::string& x) {
  const std::string out = ctx.node(i).outputs[0];
  if (bypass(ctx, i, x, out)) return 1;
  ir::Node id = make_node("Identity", {x}, {out}, ctx.node(i).name, ctx.node(i).opset);
  ctx.replace(i, std::move(id));
  return 1;
}

int64_t transpose_pair(PassContext& ctx, size_t i) {
  ir::Node& n = ctx.node(i);
  const int p = ctx.producer(n.inputs[0]);
  if (p < 0 || !is_op(ctx.node(p), "Transpose")) return 0;
  const ir::Node& inner = ctx.node(p);
  auto p1 = perm_of(ctx, inner), p2 = perm_of(ctx, n);
  if (!p1 || !p2 || p1->size() != p2->size() || !valid_perm(*p1) || !valid_perm(*p2)) return 0;
  std::vector<int64_t> perm(p2->size());
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) {
    perm[k] = (*p1)[static_cast<size_t>((*p2)[k])];
    if (perm[k] != static_cast<int64_t>(k)) identity = false;
  }
  const std::string x = inner.inputs[0];
  if (identity) return collapse(ctx, i, x);
  ctx.set_input(i, 0, x);
  set_attr(ctx.node(i), make_attr_ints("perm", perm));
  return 1;
}

int64_t reshape_chain(PassContext& ctx, size_t i) {
  const ir::Node& n = ctx.node(i);
  if (n.inputs.size() < 2) return 0;
  const int p = ctx.producer(n.inputs[0]);
  if (p < 0) return 0;
  const ir::Node& inner = ctx.node(p);
  if (!(is_op(inner, "Reshape") || is_op(inner, "Flatten") || is_op(inner, "Squeeze") ||
        is_op(inner, "Unsqueeze")))
    return 0;
  auto s = const_ints(ctx, n.inputs[1]);
  if (!s) return 0;
  const bool allowzero = n.opset >= 14 && n.attr_i("allowzero", 0) != 0;
  if (!allowzero && std::find(s->begin(), s->end(), 0) != s->end()) return 0;
  ctx.set_input(i, 0, inner.inputs[0]);
  return 1;
}

int64_t squeeze_pair(PassContext& ctx, size_t i) {
  const ir::Node& n = ctx.node(i);
  const bool squeeze = n.op_type == "Squeeze";
  const int p = ctx.producer(n.inputs[0]);
  if (p < 0 || !is_op(ctx.node(p), squeeze ? "Unsqueeze" : "Squeeze")) return 0;
  const ir::Node& inner = ctx.node(p);
  bool outer_given = false, inner_given = false;
  auto a = node_axes(ctx, n, outer_given), b = node_axes(ctx, inner, inner_given);
  if (!a || !b || !outer_given || !inner_given || a->size() != b->size()) return 0;
  // Both sets of axes index the rank of the larger tensor: the Unsqueeze output / the
  // Squeeze input.
  const int64_t r = squeeze ? ctx.rank(n.inputs[0]) : ctx.rank(inner.inputs[0]);
  auto norm = [&](std::vector<int64_t> v) -> std::optional<std::vector<int64_t>> {
    for (int64_t& x : v) {
      if (x < 0) {
        if (r < 0) return std::nullopt;
        x += r;
      }
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  auto na = norm(*a), nb = norm(*b);
  if (!na || !nb || *na != *nb) return 0;
  return collapse(ctx, i, inner.inputs[0]);
}

}  // namespace

int64_t cancel_transpose_reshape(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& n = ctx.node(i);
    if (!n.domain.empty() || n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty()) continue;
    if (n.op_type == "Transpose")
      rewrites += transpose_pair(ctx, i);
    else if (n.op_type == "Reshape")
      rewrites += reshape_chain(ctx, i);
    else if (n.op_type == "Squeeze" || n.op_type == "Unsqueeze")
      rewrites += squeeze_pair(ctx, i);
  }
  return rewrites;
}

}  // namespace onyx::opt
