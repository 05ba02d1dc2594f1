// Optimized float LSTM. Per direction, the input projections of every time step are one
// GEMM (X[S*B x I] * W^T + Wb + Rb), and each step multiplies the hidden states of the
// whole batch by R^T, packed once, before the gate arithmetic in float (SIMD sigmoid/tanh).
// The twin is run_recurrent in src/kernels/reference/rnn.cc (double arithmetic); this path
// declines what it does not cover (other dtypes, non-default activations, bad shapes) and
// the reference takes it.
#include "kernels/cpu/rnn.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "simd/activations.h"
#include "simd/gemm.h"

namespace onyx::kernels::cpu {

namespace {

bool dims_are(const KernelContext& ctx, size_t i, const Dims& want) {
  return !ctx.has_input(i) ||
         (ctx.input(i).dtype() == DType::kFloat && ctx.input(i).dims() == want);
}

/// True when the activations are the LSTM defaults (Sigmoid, Tanh, Tanh per direction).
bool default_activations(const KernelContext& ctx, int64_t nd) {
  if (ctx.has_attr("activation_alpha") || ctx.has_attr("activation_beta")) return false;
  std::vector<std::string> names = ctx.node().attr_strings("activations");
  if (names.empty()) return true;
  if (names.size() != 3 * static_cast<size_t>(nd) && names.size() != 3) return false;
  for (size_t k = 0; k < names.size(); ++k) {
    std::string n = names[k];
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n != (k % 3 == 0 ? "sigmoid" : "tanh")) return false;
  }
  return true;
}

}  // namespace

bool lstm_f32(KernelContext& ctx) {
  if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    return false;
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(1);
  const Tensor& Rt = ctx.input(2);
  if (X.dtype() != DType::kFloat || Wt.dtype() != DType::kFloat || Rt.dtype() != DType::kFloat)
    return false;
  if (X.rank() != 3 || Wt.rank() != 3 || Rt.rank() != 3) return false;
  const std::string dir = ctx.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return false;
  const int64_t nd = dir == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attr_i("layout", 0);
  if (layout != 0 && layout != 1) return false;
  const int64_t S = layout == 0 ? X.dim(0) : X.dim(1);
  const int64_t B = layout == 0 ? X.dim(1) : X.dim(0);
  const int64_t I = X.dim(2);
  const int64_t H = ctx.has_attr("hidden_size") ? ctx.attr_i("hidden_size", 0) : Rt.dim(2);
  if (H <= 0) return false;
  const int64_t G = 4 * H;
  const Dims state_dims = layout == 0 ? Dims{nd, B, H} : Dims{B, nd, H};
  if (Wt.dims() != Dims{nd, G, I} || Rt.dims() != Dims{nd, G, H} ||
      !dims_are(ctx, 3, {nd, 2 * G}) || !dims_are(ctx, 5, state_dims) ||
      !dims_are(ctx, 6, state_dims) || !dims_are(ctx, 7, {nd, 3 * H}))
    return false;
  if (!default_activations(ctx, nd)) return false;
  const bool has_clip = ctx.has_attr("clip");
  const float clip = ctx.attr_f("clip", 0.f);
  if (has_clip && !(clip > 0)) return false;
  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (ctx.has_input(4)) {
    if (ctx.input(4).dims() != Dims{B}) return false;
    lens = ctx.input_ints(4);
    for (int64_t l : lens)
      if (l < 0 || l > S) return false;
  }
  const bool input_forget = ctx.attr_i("input_forget", 0) != 0;
  auto clipped = [&](float v) { return has_clip ? std::min(clip, std::max(-clip, v)) : v; };

  const float* x = X.data<float>();
  const float* bias = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  const float* h0 = ctx.has_input(5) ? ctx.input(5).data<float>() : nullptr;
  const float* c0 = ctx.has_input(6) ? ctx.input(6).data<float>() : nullptr;
  const float* peep = ctx.has_input(7) ? ctx.input(7).data<float>() : nullptr;
  auto state_off = [&](int64_t d, int64_t b) { return (layout == 0 ? d * B + b : b * nd + d) * H; };
  auto y_off = [&](int64_t t, int64_t d, int64_t b) {
    return (layout == 0 ? (t * nd + d) * B + b : (b * S + t) * nd + d) * H;
  };
  float* Y = ctx.has_output(0) ? ctx.output(0).data<float>() : nullptr;
  if (Y) std::fill(Y, Y + S * nd * B * H, 0.0f);
  float* Yh = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
  float* Yc = ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;

  // xw row r holds the input projection (plus both biases) of X row r: r = t * B + b
  // (layout 0) or b * S + t (layout 1).
  std::vector<float> xw(static_cast<size_t>(S * B * G)), hr(static_cast<size_t>(B * G));
  std::vector<float> h(static_cast<size_t>(B * H)), c(static_cast<size_t>(B * H)),
      pre(static_cast<size_t>(G));
  for (int64_t d = 0; d < nd; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    const float* Wd = Wt.data<float>() + d * G * I;
    const float* Rd = Rt.data<float>() + d * G * H;
    const float* Pd = peep ? peep + d * 3 * H : nullptr;
    for (int64_t r = 0; r < S * B; ++r) {
      float* row = xw.data() + r * G;
      if (bias)
        for (int64_t g = 0; g < G; ++g) row[g] = bias[d * 2 * G + g] + bias[d * 2 * G + G + g];
      else
        std::fill(row, row + G, 0.0f);
    }
    simd::sgemm(false, true, S * B, G, I, 1.0f, x, I, Wd, I, 1.0f, xw.data(), G, ctx.pool());
    const simd::PackedB rpack = simd::pack_b(true, H, G, Rd, H, ctx.pool());
    for (int64_t b = 0; b < B; ++b) {
      const int64_t so = state_off(d, b);
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = h0 ? h0[so + j] : 0.0f;
        c[b * H + j] = c0 ? c0[so + j] : 0.0f;
      }
    }
    const int64_t steps = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
    for (int64_t step = 0; step < steps; ++step) {
      simd::sgemm_packed(false, B, 1.0f, h.data(), H, rpack, 0.0f, hr.data(), G, nullptr);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)];
        if (step >= len) continue;
        const int64_t t = reverse ? len - 1 - step : step;
        const float* xr = xw.data() + (layout == 0 ? t * B + b : b * S + t) * G;
        const float* q = hr.data() + b * G;
        float* hb = h.data() + b * H;
        float* cb = c.data() + b * H;
        // Pre-activations in iofc order, then the activations a whole gate at a time.
        float* gi = pre.data();
        float* go = gi + H;
        float* gf = gi + 2 * H;
        float* gc = gi + 3 * H;
        for (int64_t k = 0; k < G; ++k) gi[k] = xr[k] + q[k];
        if (Pd)
          for (int64_t j = 0; j < H; ++j) {
            gi[j] += Pd[j] * cb[j];
            gf[j] += Pd[2 * H + j] * cb[j];
          }
        if (has_clip) {  // the output gate is clipped below, after its peephole term
          for (int64_t j = 0; j < H; ++j) gi[j] = clipped(gi[j]);
          for (int64_t k = 2 * H; k < G; ++k) gi[k] = clipped(gi[k]);
        }
        simd::sigmoid_inplace(gi, H);
        if (input_forget)
          for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
        else
          simd::sigmoid_inplace(gf, H);
        simd::tanh_inplace(gc, H);
        for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
        if (Pd)
          for (int64_t j = 0; j < H; ++j) go[j] += Pd[H + j] * cb[j];
        if (has_clip)
          for (int64_t j = 0; j < H; ++j) go[j] = clipped(go[j]);
        simd::sigmoid_inplace(go, H);
        for (int64_t j = 0; j < H; ++j) hb[j] = clipped(cb[j]);
        simd::tanh_inplace(hb, H);
        for (int64_t j = 0; j < H; ++j) hb[j] *= go[j];
        if (Y) std::copy(hb, hb + H, Y + y_off(t, d, b));
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t so = state_off(d, b);
      if (Yh) std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, Yh + so);
      if (Yc) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, Yc + so);
    }
  }
  return true;
}

}  // namespace onyx::kernels::cpu
