// Pass fuse_activation: an activation applied to the output of a Conv, Gemm or MatMul
// (or of a FusedConv / FusedGemm / FusedMatMul without one) joins it as its epilogue:
//   Conv -> ai.onyx FusedConv, Gemm -> FusedGemm (opset >= 7), MatMul -> FusedMatMul,
// with attribute activation (and activation_params) from
//   Relu; Clip with constant (or absent) min / max, e.g. Relu6 (Clip-1/6: attributes);
//   Sigmoid; Tanh; LeakyRelu (alpha); HardSigmoid (alpha, beta); HardSwish, and
//   y * HardSigmoid(y) with alpha 1/6, beta 1/2; SiLU: y * Sigmoid(y), and Swish with
//   alpha 1; Gelu (ONNX or ai.onyx) with approximate "none" (Gelu) or "tanh" (GeluTanh).
// The producer's output must be read by the activation only (for the y * f(y) forms: by f
// and the Mul only), float types only. The fused node takes the activation's output name.
#include <cmath>
#include <limits>

#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

using kernels::FusedActivation;

struct Match {
  FusedActivation kind = FusedActivation::kNone;
  std::vector<float> params;
  std::vector<size_t> nodes;  ///< the activation's nodes; the last one gives the output
};

bool float_type(DType dt) {
  return dt == DType::kFloat || dt == DType::kDouble || dt == DType::kFloat16 ||
         dt == DType::kBFloat16;
}

/// The unary activation node `a` reading `y`, or kNone.
Match unary(const PassContext& ctx, const ir::Node& a, size_t ai, DType dt) {
  Match m;
  m.nodes = {ai};
  const bool onyx = a.domain == kernels::kOnyxDomain;
  if (!a.domain.empty() && !onyx) return {};
  const std::string& op = a.op_type;
  if (onyx && op != "Gelu") return {};
  if (op == "Relu") {
    m.kind = FusedActivation::kRelu;
  } else if (op == "Sigmoid") {
    m.kind = FusedActivation::kSigmoid;
  } else if (op == "Tanh") {
    m.kind = FusedActivation::kTanh;
  } else if (op == "HardSwish") {
    m.kind = FusedActivation::kHardSwish;
  } else if (op == "LeakyRelu") {
    m.kind = FusedActivation::kLeakyRelu;
    m.params = {a.attr_f("alpha", 0.01f)};
  } else if (op == "HardSigmoid") {
    m.kind = FusedActivation::kHardSigmoid;
    m.params = {a.attr_f("alpha", 0.2f), a.attr_f("beta", 0.5f)};
  } else if (op == "Swish") {
    if (a.attr_f("alpha", 1.0f) != 1.0f) return {};
    m.kind = FusedActivation::kSiLU;
  } else if (op == "Gelu") {
    const std::string ap = a.attr_s("approximate", "none");
    if (ap != "none" && ap != "tanh") return {};
    m.kind = ap == "none" ? FusedActivation::kGelu : FusedActivation::kGeluTanh;
  } else if (op == "Clip") {
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    bool bounded = true;
    if (a.opset < 11) {
      lo = a.attr_f("min", lo);
      hi = a.attr_f("max", hi);
      bounded = a.has_attr("min") && a.has_attr("max");
    } else {
      for (size_t k = 1; k <= 2; ++k) {
        if (a.inputs.size() <= k || a.inputs[k].empty()) {
          bounded = false;
          continue;
        }
        auto v = ctx.scalar(a.inputs[k]);
        if (!v || ctx.dtype(a.inputs[k]) != dt) return {};
        (k == 1 ? lo : hi) = static_cast<float>(*v);
        if (static_cast<double>(k == 1 ? lo : hi) != *v) return {};  // not a float value
      }
    }
    if (!bounded && dt == DType::kDouble) return {};  // float's range is not "unbounded" there
    m.kind = FusedActivation::kClip;
    m.params = {lo, hi};
  } else {
    return {};
  }
  return m;
}

/// y * f(y) with f Sigmoid (SiLU) or HardSigmoid(1/6, 1/2) (HardSwish): `f` is the node
/// reading y, the Mul its sole reader, and y read by exactly those two.
Match gated(const PassContext& ctx, const std::string& y, DType dt) {
  const auto& uses = ctx.uses(y);
  if (ctx.pinned(y) || uses.size() != 2 || uses[0].node == uses[1].node) return {};
  for (int k = 0; k < 2; ++k) {
    const size_t fi = uses[k].node, mi = uses[1 - k].node;
    const ir::Node& f = ctx.node(fi);
    const ir::Node& mul = ctx.node(mi);
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || given_outputs(f) != 1) continue;
    if (sole_user(ctx, f.outputs[0]) != static_cast<int>(mi)) continue;
    const std::string& o = mul.inputs[0] == y ? mul.inputs[1] : mul.inputs[0];
    if (o != f.outputs[0]) continue;
    Match m;
    m.nodes = {fi, mi};
    if (is_op(f, "Sigmoid")) {
      m.kind = FusedActivation::kSiLU;
      return m;
    }
    if (is_op(f, "HardSigmoid") && near(f.attr_f("alpha", 0.2f), 1.0 / 6.0, 1e-5) &&
        near(f.attr_f("beta", 0.5f), 0.5, 1e-6)) {
      m.kind = FusedActivation::kHardSwish;
      return m;
    }
  }
  (void)dt;
  return {};
}

/// The fused op a producer becomes, or "" when it cannot take an activation.
std::string fused_op(const ir::Node& p) {
  if (p.domain.empty()) {
    if (p.op_type == "Conv") return "FusedConv";
    if (p.op_type == "Gemm" && p.opset >= 7) return "FusedGemm";
    if (p.op_type == "MatMul") return "FusedMatMul";
    return "";
  }
  if (p.domain == kernels::kOnyxDomain &&
      (p.op_type == "FusedConv" || p.op_type == "FusedGemm" || p.op_type == "FusedMatMul") &&
      p.attr_s("activation", "").empty())
    return p.op_type;
  return "";
}

}  // namespace

int64_t fuse_activation(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& p = ctx.node(i);
    const std::string op = fused_op(p);
    if (op.empty() || given_outputs(p) != 1 || p.outputs.size() != 1) continue;
    const std::string y = p.outputs[0];
    const DType dt = ctx.dtype(y);
    if (!float_type(dt)) continue;
    Match m;
    const int u = sole_user(ctx, y);
    if (u >= 0) {
      const ir::Node& a = ctx.node(u);
      if (given_inputs(a) >= 1 && a.inputs[0] == y && given_outputs(a) == 1 &&
          a.outputs.size() == 1)
        m = unary(ctx, a, static_cast<size_t>(u), dt);
    } else {
      m = gated(ctx, y, dt);
    }
    if (m.kind == FusedActivation::kNone) continue;
    const std::string out = ctx.node(m.nodes.back()).outputs[0];
    for (size_t k : m.nodes) ctx.remove(k);
    ir::Node f = ctx.node(i);
    f.op_type = op;
    f.domain = std::string(kernels::kOnyxDomain);
    f.opset = 1;
    f.outputs = {out};
    set_attr(f, make_attr_s("activation", std::string(kernels::activation_name(m.kind))));
    if (!m.params.empty()) set_attr(f, make_attr_floats("activation_params", m.params));
    ctx.replace(i, std::move(f));
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
