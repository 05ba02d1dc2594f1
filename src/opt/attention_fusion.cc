// Pass fuse_attention: scaled dot-product attention as PyTorch exports it (nn.MultiheadAttention
// and nn.TransformerEncoderLayer in torch 1.13, hand-written BERT-style layers):
//   Y = MatMul(Softmax(Add?(Scale(MatMul(Scale(Q), Scale(Kt))), mask), last axis), V)
// where each Scale is zero or more Mul / Div by scalar constants (on Q, on K^T, or on the
// scores; their product is the scale) and Kt is K^T: a Transpose(X, P) gives
// K = Transpose(X, P with its last two entries swapped) (or X itself when that is the
// identity); any other Kt gives K = Transpose(Kt, swap of the last two axes).
// -> ai.onyx Attention(Q, K, V, mask) with attribute scale. Conditions: Q, K^T and V of
// known rank >= 2 and one float dtype; the Softmax over the last axis (opset < 13: axis =
// rank - 1); a float mask of the scores' dtype; every intermediate (scaled Q and K^T, the
// scores, the Softmax output) read only inside the pattern. The leading axes broadcast
// in Attention as in the MatMuls it replaces; a mask that would widen the scores' last two
// axes (possible only when they have extent 1) is refused by the Attention kernel at run time.
#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

bool float_type(DType dt) {
  return dt == DType::kFloat || dt == DType::kDouble || dt == DType::kFloat16 ||
         dt == DType::kBFloat16;
}

/// Follows Mul/Div-by-scalar producers of `v` (each read only by the next step, the
/// first by `reader`): returns the unscaled value, multiplies `scale`, adds the nodes.
std::string peel_scales(const PassContext& ctx, std::string v, size_t reader, double& scale,
                        std::vector<size_t>& nodes) {
  for (;;) {
    const int p = ctx.producer(v);
    if (p < 0 || sole_user(ctx, v) != static_cast<int>(reader)) return v;
    const ir::Node& n = ctx.node(p);
    if (!n.domain.empty() || n.inputs.size() != 2 || given_outputs(n) != 1) return v;
    if (n.op_type == "Div") {
      auto c = ctx.scalar(n.inputs[1]);
      if (!c || *c == 0) return v;
      scale /= *c;
      v = n.inputs[0];
    } else if (n.op_type == "Mul") {
      auto c1 = ctx.scalar(n.inputs[1]), c0 = ctx.scalar(n.inputs[0]);
      if (c1) {
        scale *= *c1;
        v = n.inputs[0];
      } else if (c0) {
        scale *= *c0;
        v = n.inputs[1];
      } else {
        return v;
      }
    } else {
      return v;
    }
    nodes.push_back(static_cast<size_t>(p));
    reader = static_cast<size_t>(p);
  }
}

bool softmax_on_last_axis(const PassContext& ctx, const ir::Node& sm) {
  const int64_t r = ctx.rank(sm.inputs[0]);
  if (r < 2) return false;
  const int64_t axis = sm.attr_i("axis", sm.opset >= 13 ? -1 : 1);
  return axis == -1 || axis == r - 1;
}

}  // namespace

int64_t fuse_attention(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& sm = ctx.node(i);
    if (!is_op(sm, "Softmax") || sm.inputs.empty() || given_outputs(sm) != 1 ||
        !softmax_on_last_axis(ctx, sm))
      continue;
    // Softmax -> MatMul(., V)
    const int out_mm = sole_user(ctx, sm.outputs[0]);
    if (out_mm < 0 || !is_op(ctx.node(out_mm), "MatMul") ||
        ctx.node(out_mm).inputs[0] != sm.outputs[0] || ctx.node(out_mm).inputs[1] == sm.outputs[0])
      continue;
    const std::string v = ctx.node(out_mm).inputs[1];
    // Softmax input: Add(scores, mask) or the scores.
    std::vector<size_t> nodes = {i};
    std::string s_in = sm.inputs[0], mask;
    std::string scores = s_in;
    const int add = ctx.producer(s_in);
    if (add >= 0 && is_op(ctx.node(add), "Add") && sole_user(ctx, s_in) == static_cast<int>(i) &&
        ctx.node(add).inputs.size() == 2) {
      // The operand that comes (through scales) from a MatMul is the scores.
      for (int side = 0; side < 2; ++side) {
        double tmp = 1.0;
        std::vector<size_t> tmp_nodes;
        const std::string base =
            peel_scales(ctx, ctx.node(add).inputs[side], static_cast<size_t>(add), tmp, tmp_nodes);
        const int mm = ctx.producer(base);
        if (mm >= 0 && is_op(ctx.node(mm), "MatMul")) {
          scores = ctx.node(add).inputs[side];
          mask = ctx.node(add).inputs[1 - side];
          break;
        }
      }
      if (mask.empty()) continue;
      nodes.push_back(static_cast<size_t>(add));
    }
    // Scores: scales over MatMul(Q', Kt).
    double scale = 1.0;
    const size_t scores_reader = mask.empty() ? i : static_cast<size_t>(add);
    const std::string raw = peel_scales(ctx, scores, scores_reader, scale, nodes);
    const int mm = ctx.producer(raw);
    const size_t raw_reader = nodes.back();
    if (mm < 0 || !is_op(ctx.node(mm), "MatMul") ||
        sole_user(ctx, raw) != static_cast<int>(raw_reader))
      continue;
    nodes.push_back(static_cast<size_t>(mm));
    const ir::Node& qk = ctx.node(mm);
    if (qk.inputs.size() != 2 || qk.inputs[0] == qk.inputs[1]) continue;
    const std::string q = peel_scales(ctx, qk.inputs[0], static_cast<size_t>(mm), scale, nodes);
    std::string kt = peel_scales(ctx, qk.inputs[1], static_cast<size_t>(mm), scale, nodes);
    const int64_t rq = ctx.rank(q), rkt = ctx.rank(kt), rv = ctx.rank(v);
    const DType dt = ctx.dtype(q);
    if (rq < 2 || rkt < 2 || rv < 2 || !float_type(dt) || ctx.dtype(kt) != dt || ctx.dtype(v) != dt)
      continue;
    if (!mask.empty() && ctx.dtype(mask) != dt) continue;
    // K from K^T.
    std::vector<int64_t> swap(static_cast<size_t>(rkt));
    for (int64_t k = 0; k < rkt; ++k) swap[k] = k;
    std::swap(swap[rkt - 1], swap[rkt - 2]);
    std::string k_name;
    int reuse = -1;  // a Transpose node of the pattern that becomes K's Transpose
    std::vector<int64_t> k_perm;
    const int tp = producer_of(ctx, kt, "Transpose");
    if (tp >= 0 && ctx.node(tp).attr("perm") &&
        ctx.node(tp).attr("perm")->ints.size() == static_cast<size_t>(rkt)) {
      std::vector<int64_t> p = ctx.node(tp).attr("perm")->ints;
      std::swap(p[rkt - 1], p[rkt - 2]);
      bool identity = true;
      for (int64_t k = 0; k < rkt; ++k) identity = identity && p[k] == k;
      const std::string x = ctx.node(tp).inputs[0];
      const bool sole = !ctx.pinned(kt) && ctx.uses(kt).size() == 1;
      if (identity) {
        k_name = x;
        if (sole) nodes.push_back(static_cast<size_t>(tp));
      } else {
        k_perm = p;
        if (sole) reuse = tp;
        k_name = x;
      }
    } else {
      k_perm = swap;
      k_name = kt;
    }
    // Build.
    const std::string out = ctx.node(out_mm).outputs[0];
    const std::string node_name = ctx.node(out_mm).name;
    std::string k_in = k_name;
    if (!k_perm.empty()) {
      k_in = ctx.fresh_name(k_name + "_k");
      ir::Node t =
          make_node("Transpose", {k_name}, {k_in}, node_name + "/K", ctx.options().default_opset);
      t.opset = reuse >= 0 ? ctx.node(reuse).opset : t.opset;
      t.attrs = {make_attr_ints("perm", k_perm)};
      if (reuse >= 0) {
        ctx.replace(static_cast<size_t>(reuse), std::move(t));
      } else {
        if (t.opset <= 0) t.opset = 13;
        ctx.add(std::move(t));
      }
    }
    ir::Node att = make_node("Attention", {q, k_in, v}, {out}, node_name, 1,
                             std::string(kernels::kOnyxDomain));
    if (!mask.empty()) att.inputs.push_back(mask);
    att.attrs = {make_attr_f("scale", static_cast<float>(scale))};
    for (size_t n : nodes) ctx.remove(n);
    ctx.replace(static_cast<size_t>(out_mm), std::move(att));
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
