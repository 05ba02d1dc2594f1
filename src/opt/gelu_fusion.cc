// Pass fuse_gelu: the two GELU forms PyTorch exports below opset 20.
//   erf:  0.5 * x * (1 + Erf(x / sqrt(2)))           (Div by sqrt 2 or Mul by 1/sqrt 2)
//   tanh: 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//         (x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x))
// with the outer product in any association: (x * c) * 0.5, (x * 0.5) * c, x * (c * 0.5),
// and every binary op in either operand order. The constants must match to 1e-5
// (relative). -> Gelu(x, approximate "none" | "tanh"): the ONNX op when the model imports
// opset >= 20 (kBasic), else the ai.onyx op (kAll). Every intermediate must be read only
// inside the pattern; x may have other readers.
#include <cmath>

#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

constexpr double kRel = 1e-5;

/// For a binary node reading `v`, the other operand when it is a scalar constant near
/// `want`; checks nothing else.
bool other_is(const PassContext& ctx, const ir::Node& n, const std::string& v, double want) {
  if (n.inputs.size() != 2) return false;
  const std::string& o = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
  auto s = ctx.scalar(o);
  return s && near(*s, want, kRel);
}

/// The other input of binary node `n` besides `v`.
const std::string& other(const ir::Node& n, const std::string& v) {
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
}

/// The sole reader of `v` when it is a default-domain `op`, else -1.
int next_op(const PassContext& ctx, const std::string& v, std::string_view op) {
  const int u = sole_user(ctx, v);
  return u >= 0 && is_op(ctx.node(u), op) && ctx.node(u).inputs.size() == 2 ? u : -1;
}

/// Matches the tail x * (1 + f) * 0.5 from f = the Erf/Tanh output. Adds the nodes to
/// `nodes` (the last one is the output node) and returns true.
bool match_tail(const PassContext& ctx, const std::string& f, const std::string& x,
                std::vector<size_t>& nodes) {
  const int add1 = next_op(ctx, f, "Add");
  if (add1 < 0 || !other_is(ctx, ctx.node(add1), f, 1.0)) return false;
  nodes.push_back(add1);
  const std::string c = ctx.node(add1).outputs[0];
  const int u = next_op(ctx, c, "Mul");
  if (u < 0) return false;
  const ir::Node& un = ctx.node(u);
  const std::string& o = other(un, c);
  if (o == x) {  // (x * c) * 0.5
    const int half = next_op(ctx, un.outputs[0], "Mul");
    if (half < 0 || !other_is(ctx, ctx.node(half), un.outputs[0], 0.5)) return false;
    nodes.insert(nodes.end(), {static_cast<size_t>(u), static_cast<size_t>(half)});
    return true;
  }
  if (other_is(ctx, un, c, 0.5)) {  // x * (c * 0.5)
    const int xm = next_op(ctx, un.outputs[0], "Mul");
    if (xm < 0 || other(ctx.node(xm), un.outputs[0]) != x) return false;
    nodes.insert(nodes.end(), {static_cast<size_t>(u), static_cast<size_t>(xm)});
    return true;
  }
  const int h = producer_of(ctx, o, "Mul");  // (x * 0.5) * c
  if (h < 0 || sole_user(ctx, o) != u) return false;
  const ir::Node& hn = ctx.node(h);
  if (!((hn.inputs[0] == x || hn.inputs[1] == x) && other_is(ctx, hn, x, 0.5))) return false;
  nodes.insert(nodes.end(), {static_cast<size_t>(h), static_cast<size_t>(u)});
  return true;
}

/// Erf(x / sqrt 2): returns x, adding the Div/Mul node.
std::optional<std::string> match_erf_input(const PassContext& ctx, const std::string& a, size_t erf,
                                           std::vector<size_t>& nodes) {
  const int p = ctx.producer(a);
  if (p < 0 || sole_user(ctx, a) != static_cast<int>(erf)) return std::nullopt;
  const ir::Node& n = ctx.node(p);
  if (!n.domain.empty() || n.inputs.size() != 2) return std::nullopt;
  if (n.op_type == "Div") {
    auto s = ctx.scalar(n.inputs[1]);
    if (!s || !near(*s, std::sqrt(2.0), kRel)) return std::nullopt;
  } else if (n.op_type == "Mul") {
    const std::string& x = ctx.scalar(n.inputs[1]) ? n.inputs[0] : n.inputs[1];
    if (!other_is(ctx, n, x, 1.0 / std::sqrt(2.0))) return std::nullopt;
    nodes.push_back(p);
    return x;
  } else {
    return std::nullopt;
  }
  nodes.push_back(p);
  return n.inputs[0];
}

/// sqrt(2/pi) * (x + 0.044715 * x^3): returns x, adding the nodes.
std::optional<std::string> match_tanh_input(const PassContext& ctx, const std::string& a,
                                            size_t tanh, std::vector<size_t>& nodes) {
  const int k = producer_of(ctx, a, "Mul");
  if (k < 0 || sole_user(ctx, a) != static_cast<int>(tanh)) return std::nullopt;
  const ir::Node& kn = ctx.node(k);
  const std::string& s = ctx.scalar(kn.inputs[0]) ? kn.inputs[1] : kn.inputs[0];
  if (!other_is(ctx, kn, s, 0.7978845608028654)) return std::nullopt;
  const int add = producer_of(ctx, s, "Add");
  if (add < 0 || sole_user(ctx, s) != k) return std::nullopt;
  const ir::Node& an = ctx.node(add);
  // One operand is x, the other 0.044715 * x^3.
  for (int side = 0; side < 2; ++side) {
    const std::string& x = an.inputs[side];
    const std::string& m3 = an.inputs[1 - side];
    const int c = producer_of(ctx, m3, "Mul");
    if (c < 0 || sole_user(ctx, m3) != add) continue;
    const ir::Node& cn = ctx.node(c);
    const std::string& cube = ctx.scalar(cn.inputs[0]) ? cn.inputs[1] : cn.inputs[0];
    if (!other_is(ctx, cn, cube, 0.044715)) continue;
    std::vector<size_t> got;
    const int q = ctx.producer(cube);
    if (q < 0 || sole_user(ctx, cube) != c) continue;
    const ir::Node& qn = ctx.node(q);
    if (is_op(qn, "Pow")) {
      auto e = ctx.scalar(qn.inputs[1]);
      if (!e || *e != 3.0 || qn.inputs[0] != x) continue;
      got.push_back(q);
    } else if (is_op(qn, "Mul") && qn.inputs.size() == 2) {
      // x * (x * x) or (x * x) * x
      const std::string& sq = qn.inputs[0] == x ? qn.inputs[1] : qn.inputs[0];
      if (other(qn, sq) != x) continue;
      const int r = producer_of(ctx, sq, "Mul");
      if (r < 0 || sole_user(ctx, sq) != q || ctx.node(r).inputs[0] != x ||
          ctx.node(r).inputs[1] != x)
        continue;
      got.insert(got.end(), {static_cast<size_t>(r), static_cast<size_t>(q)});
    } else {
      continue;
    }
    nodes.insert(nodes.end(), got.begin(), got.end());
    nodes.insert(nodes.end(),
                 {static_cast<size_t>(c), static_cast<size_t>(add), static_cast<size_t>(k)});
    return x;
  }
  return std::nullopt;
}

}  // namespace

int64_t fuse_gelu(PassContext& ctx) {
  const bool onnx = ctx.options().default_opset >= 20;
  if (!onnx && !ctx.fused_allowed()) return 0;
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& n = ctx.node(i);
    const bool erf = is_op(n, "Erf"), tanh = is_op(n, "Tanh");
    if ((!erf && !tanh) || n.inputs.empty() || given_outputs(n) != 1) continue;
    std::vector<size_t> nodes;
    auto x = erf ? match_erf_input(ctx, n.inputs[0], i, nodes)
                 : match_tanh_input(ctx, n.inputs[0], i, nodes);
    if (!x) continue;
    const DType dt = ctx.dtype(*x);
    if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kFloat16 &&
        dt != DType::kBFloat16)
      continue;
    nodes.push_back(i);
    if (!match_tail(ctx, n.outputs[0], *x, nodes)) continue;
    const size_t last = nodes.back();
    nodes.pop_back();
    const ir::Node& out_node = ctx.node(last);
    ir::Node g =
        make_node("Gelu", {*x}, {out_node.outputs[0]}, out_node.name, ctx.options().default_opset,
                  onnx ? "" : std::string(kernels::kOnyxDomain));
    g.attrs = {make_attr_s("approximate", erf ? "none" : "tanh")};
    for (size_t k : nodes) ctx.remove(k);
    ctx.replace(last, std::move(g));
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
