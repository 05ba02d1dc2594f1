// Pass fold_batch_norm: folds an inference-mode BatchNormalization into the Conv,
// ConvTranspose, Gemm or MatMul that feeds it. With s = scale / sqrt(var + epsilon) and
// t = B - mean * s per channel (BatchNormalization's axis 1):
//   Conv           W[m, ...] *= s[m]                   bias' = bias * s + t
//   ConvTranspose  W[c, j, ...] *= s[group(c) * M/group + j]   bias' = bias * s + t
//   Gemm           op(B)[:, n] *= s[n] (rows of B when transB)  C' = beta * C * s + t, beta 1
//   MatMul         2-D A and B only (axis 1 is then the last): B[:, n] *= s[n], and the
//                  MatMul becomes Gemm(A, B', t) (opset >= 7)
// The weights and biases must be constants (float or double, BatchNormalization's dtype),
// the producer's output read by the BatchNormalization only, the BatchNormalization in
// inference mode (training_mode 0, one output; spatial before opset 9; opset >= 7). New
// weights get new names (the old ones may be shared); the fused node takes the
// BatchNormalization's output name. With fused ops allowed, a BatchNormalization that no
// producer absorbs and whose only reader is an activation becomes a 1x1 depthwise Conv
// (weights s, bias t), which fuse_activation then joins with that activation.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "opt/pass.h"

namespace onyx::opt {
namespace {

template <typename T>
std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  return v;
}

std::vector<double> to_doubles(const Tensor& t) {
  return t.dtype() == DType::kFloat ? doubles<float>(t) : doubles<double>(t);
}

Tensor from_doubles(DType dt, const Dims& dims, const std::vector<double>& v) {
  Tensor t(dt, dims);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::kFloat)
      t.data<float>()[i] = static_cast<float>(v[i]);
    else
      t.data<double>()[i] = v[i];
  }
  return t;
}

bool inference_mode(const ir::Node& bn) {
  if (bn.opset < 7) return false;
  if (bn.opset < 9 && bn.attr_i("spatial", 1) != 1) return false;
  if (bn.opset >= 14 && bn.attr_i("training_mode", 0) != 0) return false;
  return given_outputs(bn) == 1 && given_inputs(bn) == 5;
}

struct Stats {
  std::vector<double> s, t;
};

/// s and t of a BatchNormalization whose parameters are constants of one float dtype.
std::optional<Stats> bn_stats(const PassContext& ctx, const ir::Node& bn, DType& dt) {
  const Tensor* p[4];
  for (int k = 0; k < 4; ++k) {
    p[k] = ctx.constant(bn.inputs[k + 1]);
    if (!p[k] || p[k]->rank() != 1) return std::nullopt;
  }
  dt = p[0]->dtype();
  if (dt != DType::kFloat && dt != DType::kDouble) return std::nullopt;
  const int64_t c = p[0]->numel();
  for (int k = 1; k < 4; ++k)
    if (p[k]->dtype() != dt || p[k]->numel() != c) return std::nullopt;
  const double eps = bn.attr_f("epsilon", 1e-5f);
  std::vector<double> scale = to_doubles(*p[0]), b = to_doubles(*p[1]), mean = to_doubles(*p[2]),
                      var = to_doubles(*p[3]);
  Stats st;
  st.s.resize(static_cast<size_t>(c));
  st.t.resize(static_cast<size_t>(c));
  for (size_t i = 0; i < st.s.size(); ++i) {
    const double d = var[i] + eps;
    if (!(d > 0)) return std::nullopt;  // the unfused graph gives NaN or inf there: keep it
    st.s[i] = scale[i] / std::sqrt(d);
    st.t[i] = b[i] - mean[i] * st.s[i];
  }
  return st;
}

/// The bias after folding: (old bias or 0) * s + t.
Tensor folded_bias(const Tensor* bias, const Stats& st, DType dt) {
  std::vector<double> b = bias ? to_doubles(*bias) : std::vector<double>(st.s.size(), 0.0);
  for (size_t i = 0; i < b.size(); ++i) b[i] = b[i] * st.s[i] + st.t[i];
  return from_doubles(dt, {static_cast<int64_t>(b.size())}, b);
}

/// Rewires: the producer reads new weights / bias and takes over the BN's output.
void finish(PassContext& ctx, size_t prod, size_t bn) {
  const std::string out = ctx.node(bn).outputs[0];
  ctx.remove(bn);
  ctx.set_output(prod, 0, out);
}

bool fold_conv(PassContext& ctx, size_t pi, size_t bi, const Stats& st, DType dt) {
  ir::Node& p = ctx.node(pi);
  const bool transpose = p.op_type == "ConvTranspose";
  const Tensor* wp = ctx.constant(p.inputs[1]);
  if (!wp || wp->dtype() != dt || wp->rank() < 3) return false;
  const Tensor w = *wp;
  const Tensor* bp =
      p.inputs.size() > 2 && !p.inputs[2].empty() ? ctx.constant(p.inputs[2]) : nullptr;
  if (p.inputs.size() > 2 && !p.inputs[2].empty() &&
      (!bp || bp->dtype() != dt || bp->numel() != (int64_t)st.s.size()))
    return false;
  const int64_t group = p.attr_i("group", 1);
  const int64_t c = static_cast<int64_t>(st.s.size());
  const int64_t maps = transpose ? w.dim(1) * group : w.dim(0);
  if (maps != c || group < 1 || (transpose && w.dim(0) % group != 0)) return false;
  std::vector<double> wv = to_doubles(w);
  const int64_t inner = w.numel() / (w.dim(0) * w.dim(1));
  for (int64_t a = 0; a < w.dim(0); ++a)
    for (int64_t b = 0; b < w.dim(1); ++b) {
      const int64_t ch = transpose ? (a / (w.dim(0) / group)) * w.dim(1) + b : a;
      for (int64_t k = 0; k < inner; ++k)
        wv[static_cast<size_t>((a * w.dim(1) + b) * inner + k)] *= st.s[ch];
    }
  const Tensor bias = folded_bias(bp, st, dt);
  const std::string wn = ctx.add_constant(p.inputs[1], from_doubles(dt, w.dims(), wv));
  const std::string bias_name = ctx.add_constant(
      p.inputs.size() > 2 && !p.inputs[2].empty() ? p.inputs[2] : p.outputs[0] + "_bias", bias);
  ctx.set_input(pi, 1, wn);
  ctx.set_input(pi, 2, bias_name);
  finish(ctx, pi, bi);
  return true;
}

/// Scales the columns n of op(B) (rows of B when transposed) by s[n].
std::optional<Tensor> scaled_b(const Tensor& b, bool trans, const Stats& st, DType dt) {
  if (b.rank() != 2 || b.dtype() != dt) return std::nullopt;
  const int64_t n = trans ? b.dim(0) : b.dim(1);
  if (n != static_cast<int64_t>(st.s.size())) return std::nullopt;
  std::vector<double> v = to_doubles(b);
  for (int64_t r = 0; r < b.dim(0); ++r)
    for (int64_t q = 0; q < b.dim(1); ++q)
      v[static_cast<size_t>(r * b.dim(1) + q)] *= st.s[trans ? r : q];
  return from_doubles(dt, b.dims(), v);
}

bool fold_gemm(PassContext& ctx, size_t pi, size_t bi, const Stats& st, DType dt) {
  ir::Node& p = ctx.node(pi);
  const Tensor* bp = ctx.constant(p.inputs[1]);
  if (!bp || p.opset < 7) return false;
  auto nb = scaled_b(*bp, p.attr_i("transB", 0) != 0, st, dt);
  if (!nb) return false;
  const int64_t n = static_cast<int64_t>(st.s.size());
  const bool has_c = p.inputs.size() > 2 && !p.inputs[2].empty();
  const double beta = p.attr_f("beta", 1.0f);
  Tensor c;
  if (!has_c) {
    c = folded_bias(nullptr, st, dt);
  } else {
    const Tensor* cp = ctx.constant(p.inputs[2]);
    if (!cp || cp->dtype() != dt || cp->rank() > 2) return false;
    const int64_t cm = cp->rank() == 2 ? cp->dim(0) : 1,
                  cn = cp->rank() >= 1 ? cp->dim(cp->rank() - 1) : 1;
    if (cn != 1 && cn != n) return false;
    std::vector<double> cv = to_doubles(*cp), out(static_cast<size_t>(cm * n));
    for (int64_t i = 0; i < cm; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[static_cast<size_t>(i * n + j)] =
            beta * cv[static_cast<size_t>(i * cn + (cn == 1 ? 0 : j))] * st.s[j] + st.t[j];
    c = from_doubles(dt, cp->rank() == 2 ? Dims{cm, n} : Dims{n}, out);
  }
  const std::string bname = ctx.add_constant(p.inputs[1], *nb);
  const std::string cname = ctx.add_constant(has_c ? p.inputs[2] : p.outputs[0] + "_bias", c);
  ctx.set_input(pi, 1, bname);
  ctx.set_input(pi, 2, cname);
  set_attr(ctx.node(pi), make_attr_f("beta", 1.0f));
  finish(ctx, pi, bi);
  return true;
}

bool fold_matmul(PassContext& ctx, size_t pi, size_t bi, const Stats& st, DType dt) {
  ir::Node& p = ctx.node(pi);
  const Tensor* bp = ctx.constant(p.inputs[1]);
  if (!bp || ctx.rank(p.inputs[0]) != 2 || p.opset < 7) return false;
  auto nb = scaled_b(*bp, false, st, dt);
  if (!nb) return false;
  const std::string bname = ctx.add_constant(p.inputs[1], *nb);
  const std::string cname = ctx.add_constant(p.outputs[0] + "_bias", folded_bias(nullptr, st, dt));
  ctx.set_input(pi, 1, bname);
  ctx.set_input(pi, 2, cname);
  ctx.node(pi).op_type = "Gemm";
  ctx.count_created(ctx.node(pi));
  finish(ctx, pi, bi);
  return true;
}

/// A BatchNormalization no producer absorbs, whose output only an activation that
/// fuse_activation joins to a Conv reads (DenseNet's BN -> ReLU -> Conv after each
/// Concat), becomes the 1x1 depthwise Conv y = s[c] x + t[c], and the activation then
/// joins it: one pass over the tensor instead of two (DenseNet-121: 62 BatchNormalization
/// and 62 Relu nodes). Only when fused ops are allowed (the fusion is what pays), for float
/// 4-D inputs.
bool to_depthwise(PassContext& ctx, size_t bi, const Stats& st, DType dt) {
  if (!ctx.fused_allowed() || dt != DType::kFloat) return false;
  const ir::Node& bn = ctx.node(bi);
  if (ctx.rank(bn.inputs[0]) != 4 || ctx.pinned(bn.outputs[0])) return false;
  const std::vector<Use>& uses = ctx.uses(bn.outputs[0]);
  if (uses.size() != 1) return false;
  const ir::Node& a = ctx.node(uses[0].node);
  static const char* const kActs[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Clip"};
  if (!a.domain.empty() || std::none_of(std::begin(kActs), std::end(kActs),
                                        [&](const char* op) { return a.op_type == op; }))
    return false;
  const int64_t c = static_cast<int64_t>(st.s.size());
  ir::Node conv;
  conv.name = bn.name;
  conv.op_type = "Conv";
  conv.opset = bn.opset;
  conv.outputs = bn.outputs;
  const std::string w = ctx.add_constant(bn.outputs[0] + "_scale", from_doubles(dt, {c, 1, 1, 1}, st.s));
  const std::string b = ctx.add_constant(bn.outputs[0] + "_shift", from_doubles(dt, {c}, st.t));
  conv.inputs = {bn.inputs[0], w, b};
  conv.attrs = {make_attr_i("group", c), make_attr_ints("kernel_shape", {1, 1})};
  ctx.replace(bi, std::move(conv));
  ctx.count_created(ctx.node(bi));
  return true;
}

}  // namespace

int64_t fold_batch_norm(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& bn = ctx.node(i);
    if (!is_op(bn, "BatchNormalization") || !inference_mode(bn)) continue;
    DType dt = DType::kUndefined;
    auto st = bn_stats(ctx, bn, dt);
    if (!st) continue;
    bool done = false;
    const int pi = ctx.producer(bn.inputs[0]);
    if (pi >= 0 && ctx.only_used_by(bn.inputs[0], i)) {
      const ir::Node& p = ctx.node(pi);
      if (p.domain.empty() && given_outputs(p) == 1) {
        if (p.op_type == "Conv" || p.op_type == "ConvTranspose")
          done = fold_conv(ctx, pi, i, *st, dt);
        else if (p.op_type == "Gemm")
          done = fold_gemm(ctx, pi, i, *st, dt);
        else if (p.op_type == "MatMul")
          done = fold_matmul(ctx, pi, i, *st, dt);
      }
    }
    if (!done) done = to_depthwise(ctx, i, *st, dt);
    if (done) ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
