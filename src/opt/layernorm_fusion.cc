// Pass fuse_layer_norm: the layer normalization PyTorch exports below opset 17 (and that
// hand-written models spell out),
//   m = ReduceMean(x, axes)        d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), axes)
//   n = Div(d, Sqrt(Add(v, eps)))  | Mul(d, Reciprocal(Sqrt(Add(v, eps))))
//   y = Add(Mul(n, gamma), beta)   (the Mul and the Add optional, either operand order)
// -> LayerNormalization(x, gamma, beta, axis, epsilon): the ONNX op when the model imports
// opset >= 17 (kBasic), else the ai.onyx op of the same definition (kAll).
// Conditions: both ReduceMeans over the same trailing axes with keepdims; eps, the
// exponent 2, gamma and beta constants; gamma and beta hold one value per normalized
// element (shape = the normalized dims, leading 1s allowed; absent gamma becomes ones,
// needing known dims); every intermediate read only inside the pattern; float, float16 or
// bfloat16 (LayerNormalization computes in float: stash_type 1).
#include <algorithm>

#include "base/half.h"
#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

/// The axis a ReduceMean with keepdims reduces from when its axes are the trailing
/// ones; nullopt otherwise. Negative (from the end) when the rank is not known.
std::optional<int64_t> tail_axis(const PassContext& ctx, const ir::Node& rm) {
  if (rm.attr_i("keepdims", 1) != 1) return std::nullopt;
  bool present = false;
  auto axes = node_axes(ctx, rm, present);
  if (!axes || axes->empty()) return std::nullopt;
  const int64_t r = ctx.rank(rm.inputs[0]);
  std::vector<int64_t> a = *axes;
  for (int64_t& x : a) {
    if (x >= 0) {
      if (r < 0) return std::nullopt;
      x -= r;  // as negative
    }
  }
  std::sort(a.begin(), a.end());
  const int64_t k = static_cast<int64_t>(a.size());
  for (int64_t i = 0; i < k; ++i)
    if (a[i] != -k + i) return std::nullopt;
  if (r >= 0 && k > r) return std::nullopt;
  return -k;
}

/// A constant of `want` elements whose dims are the normalized dims (leading 1s
/// dropped), reshaped to them; nullopt otherwise.
std::optional<Tensor> per_element(const Tensor& t, const Dims& norm, DType dt) {
  if (t.dtype() != dt) return std::nullopt;
  const Dims& d = t.dims();
  if (d.size() < norm.size()) return std::nullopt;  // broadcast along normalized axes
  const size_t lead = d.size() - norm.size();
  for (size_t k = 0; k < lead; ++k)
    if (d[k] != 1) return std::nullopt;
  for (size_t k = 0; k < norm.size(); ++k)
    if (d[lead + k] != norm[k]) return std::nullopt;
  return t.reshaped(norm);
}

Tensor ones(DType dt, const Dims& d) {
  Tensor t(dt, d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::kFloat)
      t.data<float>()[i] = 1.0f;
    else if (dt == DType::kFloat16)
      t.data<Float16>()[i] = Float16(1.0f);
    else
      t.data<BFloat16>()[i] = BFloat16(1.0f);
  }
  return t;
}

/// The other input of a binary node whose input `v` is one of them.
std::string other_input(const ir::Node& n, const std::string& v) {
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
}

bool try_fuse(PassContext& ctx, size_t div_i, int64_t& rewrites) {
  const ir::Node& div = ctx.node(div_i);
  std::vector<size_t> pattern;  // every node of the match but the last
  std::string d, s;
  if (is_op(div, "Div")) {
    d = div.inputs[0];
    s = div.inputs[1];
  } else if (is_op(div, "Mul")) {  // Mul(d, Reciprocal(s))
    for (int side = 0; side < 2 && s.empty(); ++side) {
      const int r = producer_of(ctx, div.inputs[side], "Reciprocal");
      if (r < 0 || sole_user(ctx, div.inputs[side]) != static_cast<int>(div_i)) continue;
      d = div.inputs[1 - side];
      s = ctx.node(r).inputs[0];
      pattern.push_back(static_cast<size_t>(r));
    }
    if (s.empty()) return false;
  } else {
    return false;
  }
  const size_t s_reader = pattern.empty() ? div_i : pattern.back();
  const int sq = producer_of(ctx, s, "Sqrt");
  if (sq < 0 || sole_user(ctx, s) != static_cast<int>(s_reader)) return false;
  const std::string e = ctx.node(sq).inputs[0];
  const int add_eps = producer_of(ctx, e, "Add");
  if (add_eps < 0 || sole_user(ctx, e) != sq) return false;
  const ir::Node& ae = ctx.node(add_eps);
  std::string v;
  std::optional<double> eps;
  for (int side = 0; side < 2 && !eps; ++side)
    if ((eps = ctx.scalar(ae.inputs[side]))) v = ae.inputs[1 - side];
  if (!eps || !(*eps >= 0)) return false;
  const int rm2 = producer_of(ctx, v, "ReduceMean");
  if (rm2 < 0 || sole_user(ctx, v) != add_eps) return false;
  const std::string p = ctx.node(rm2).inputs[0];
  int sq2 = producer_of(ctx, p, "Pow");
  bool mul_form = false;
  if (sq2 >= 0) {
    auto ex = ctx.scalar(ctx.node(sq2).inputs[1]);
    if (!ex || *ex != 2.0 || ctx.node(sq2).inputs[0] != d) return false;
  } else {
    sq2 = producer_of(ctx, p, "Mul");
    if (sq2 < 0 || ctx.node(sq2).inputs[0] != d || ctx.node(sq2).inputs[1] != d) return false;
    mul_form = true;
  }
  if (sole_user(ctx, p) != rm2) return false;
  const int sub = producer_of(ctx, d, "Sub");
  if (sub < 0 || ctx.pinned(d)) return false;
  // d is read by the square (once or twice) and the division only.
  const size_t d_uses = mul_form ? 3 : 2;
  if (ctx.use_count(d) != d_uses) return false;
  for (const Use& u : ctx.uses(d))
    if (u.node != static_cast<size_t>(sq2) && u.node != div_i) return false;
  const std::string x = ctx.node(sub).inputs[0], m = ctx.node(sub).inputs[1];
  const int rm1 = producer_of(ctx, m, "ReduceMean");
  if (rm1 < 0 || ctx.node(rm1).inputs[0] != x || sole_user(ctx, m) != sub) return false;
  auto a1 = tail_axis(ctx, ctx.node(rm1)), a2 = tail_axis(ctx, ctx.node(rm2));
  if (!a1 || !a2 || *a1 != *a2) return false;
  const DType dt = ctx.dtype(x);
  if (dt != DType::kFloat && dt != DType::kFloat16 && dt != DType::kBFloat16) return false;

  // The normalized dims, when known (needed to check gamma / beta).
  const ir::Shape* xs = ctx.shape(x);
  std::optional<Dims> norm;
  if (xs && static_cast<int64_t>(xs->size()) >= -*a1) {
    Dims nd;
    for (size_t k = xs->size() + *a1; k < xs->size(); ++k) {
      if (!(*xs)[k].known()) break;
      nd.push_back((*xs)[k].value);
    }
    if (static_cast<int64_t>(nd.size()) == -*a1) norm = nd;
  }

  pattern.insert(pattern.end(),
                 {static_cast<size_t>(sq), static_cast<size_t>(add_eps), static_cast<size_t>(rm2),
                  static_cast<size_t>(sq2), static_cast<size_t>(sub), static_cast<size_t>(rm1)});
  size_t last = div_i;
  std::string out = div.outputs[0];
  std::string gamma, beta;
  // Optional Mul(gamma), then optional Add(beta).
  const int mul = sole_user(ctx, out);
  if (mul >= 0 && is_op(ctx.node(mul), "Mul") && norm) {
    const std::string g = other_input(ctx.node(mul), out);
    const Tensor* gt = ctx.constant(g);
    if (gt && g != out) {
      if (auto t = per_element(*gt, *norm, dt)) {
        gamma = t->dims() == gt->dims() ? g : ctx.add_constant(g, *t);
        pattern.push_back(last);
        last = static_cast<size_t>(mul);
        out = ctx.node(mul).outputs[0];
      }
    }
  }
  const int add = sole_user(ctx, out);
  if (add >= 0 && is_op(ctx.node(add), "Add") && norm) {
    const std::string b = other_input(ctx.node(add), out);
    const Tensor* bt = ctx.constant(b);
    if (bt && b != out) {
      if (auto t = per_element(*bt, *norm, dt)) {
        beta = t->dims() == bt->dims() ? b : ctx.add_constant(b, *t);
        pattern.push_back(last);
        last = static_cast<size_t>(add);
        out = ctx.node(add).outputs[0];
      }
    }
  }
  if (gamma.empty()) {
    if (!norm) return false;
    gamma = ctx.add_constant(out + "_scale", ones(dt, *norm));
  }
  const bool onnx = ctx.options().default_opset >= 17;
  if (!onnx && !ctx.fused_allowed()) return false;
  ir::Node ln =
      make_node("LayerNormalization", {x, gamma}, {out}, ctx.node(last).name,
                ctx.options().default_opset, onnx ? "" : std::string(kernels::kOnyxDomain));
  if (!beta.empty()) ln.inputs.push_back(beta);
  ln.attrs = {make_attr_i("axis", *a1), make_attr_f("epsilon", static_cast<float>(*eps))};
  for (size_t n : pattern) ctx.remove(n);
  ctx.replace(last, std::move(ln));
  ++rewrites;
  return true;
}

}  // namespace

int64_t fuse_layer_norm(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& n = ctx.node(i);
    if ((is_op(n, "Div") || is_op(n, "Mul")) && n.inputs.size() == 2) try_fuse(ctx, i, rewrites);
  }
  return rewrites;
}

}  // namespace onyx::opt
