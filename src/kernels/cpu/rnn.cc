// Optimized float RNN, GRU and LSTM, twins of src/kernels/reference/rnn.cc (which works
// in double). Per node, at planning: the attributes parsed, W and R packed into GEMM
// panels and the biases combined once when they are constants (at run time otherwise).
// Per run: the input projections of every time step and both directions are one GEMM
// (X[S*B x I] * [W_fwd; W_bwd]^T); then each direction, and each chunk of batch rows when
// the batch is large, runs its recurrence as an independent task on the pool (they share
// nothing), one small GEMM h * R^T per step followed by one fused gate pass per row
// (src/simd/rnn_cell.h). Declined at planning: other dtypes, activation names or counts
// the reference rejects; at run time, shapes or sequence_lens the reference rejects go to
// the reference, which reports them.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"
#include "simd/gemm.h"
#include "simd/rnn_cell.h"
#include "simd/small_gemm.h"

namespace onyx::kernels::cpu {
namespace {

enum class Cell { kRnn, kGru, kLstm };

using simd::RnnAct;
using simd::RnnActivation;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The activations of the node, num_dirs * defaults.size() of them, with alpha and beta
/// consumed as the reference consumes them; false when the reference would reject them.
bool parse_activations(const ir::Node& node, const std::vector<std::string>& defaults, int64_t nd,
                       std::vector<RnnActivation>& out) {
  std::vector<std::string> names = node.attr_strings("activations");
  const size_t per_dir = defaults.size();
  if (names.empty()) {
    for (int64_t d = 0; d < nd; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && nd == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  } else if (names.size() != per_dir * static_cast<size_t>(nd)) {
    return false;
  }
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto take = [](const std::vector<float>& v, size_t& i, float def) {
    return i < v.size() ? v[i++] : def;
  };
  for (const std::string& raw : names) {
    const std::string n = lower(raw);
    RnnActivation a;
    if (n == "relu") {
      a.kind = RnnAct::kRelu;
    } else if (n == "tanh") {
      a.kind = RnnAct::kTanh;
    } else if (n == "sigmoid") {
      a.kind = RnnAct::kSigmoid;
    } else if (n == "affine") {
      a.kind = RnnAct::kAffine;
      a.alpha = take(alphas, ai, 1.0f);
      a.beta = take(betas, bi, 0.0f);
    } else if (n == "leakyrelu") {
      a.kind = RnnAct::kLeakyRelu;
      a.alpha = take(alphas, ai, 0.01f);
    } else if (n == "thresholdedrelu") {
      a.kind = RnnAct::kThresholdedRelu;
      a.alpha = take(alphas, ai, 1.0f);
    } else if (n == "scaledtanh") {
      a.kind = RnnAct::kScaledTanh;
      a.alpha = take(alphas, ai, 1.0f);
      a.beta = take(betas, bi, 1.0f);
    } else if (n == "hardsigmoid") {
      a.kind = RnnAct::kHardSigmoid;
      a.alpha = take(alphas, ai, 0.2f);
      a.beta = take(betas, bi, 0.5f);
    } else if (n == "elu") {
      a.kind = RnnAct::kElu;
      a.alpha = take(alphas, ai, 1.0f);
    } else if (n == "softsign") {
      a.kind = RnnAct::kSoftsign;
    } else if (n == "softplus") {
      a.kind = RnnAct::kSoftplus;
    } else {
      return false;
    }
    out.push_back(a);
  }
  return true;
}

int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

/// Weights in the layouts the loops read: packed GEMM panels and combined biases, each
/// padded by cell_lanes() floats for the gate passes.
struct Weights {
  std::vector<float> w;                ///< X * W^T panels: K = I, N = nd * G
  std::vector<std::vector<float>> r;   ///< per direction: h * R^T panels (GRU without
                                       ///< linear_before_reset: the z and r rows only)
  std::vector<std::vector<float>> rh;  ///< per direction (GRU without lbr): Rh panels
  std::vector<float> bias;             ///< nd x G, the biases added outside R (or empty)
  std::vector<float> rbh;              ///< nd x H, GRU lbr: Rbh, added inside r (.) (...)
  std::vector<float> peep;             ///< nd x 3H (LSTM peepholes, or empty)
};

/// The weights one call uses: those prepacked at planning, the others made for the call.
struct WeightsView {
  const std::vector<float>* w = nullptr;
  const std::vector<std::vector<float>>* r = nullptr;
  const std::vector<std::vector<float>>* rh = nullptr;
  const float* bias = nullptr;
  const float* rbh = nullptr;
  const float* peep = nullptr;
};

// Larger hidden sizes (an attribute, or the last dim of an empty R) are left to the
// reference: gates * H and 2 * gates * H must fit in int64 (fuzz finding 20: hidden_size
// 2^62 overflowed 4 * H while planning).
constexpr int64_t kMaxHidden = std::numeric_limits<int64_t>::max() / 16;

class RecurrentKernel final : public Kernel {
 public:
  RecurrentKernel(Cell cell, const KernelInit& init, std::vector<RnnActivation> acts)
      : cell_(cell), reference_(init.reference), acts_(std::move(acts)) {
    const ir::Node& n = init.node;
    gates_ = cell == Cell::kRnn ? 1 : (cell == Cell::kGru ? 3 : 4);
    const std::string dir = n.attr_s("direction", "forward");
    nd_ = dir == "bidirectional" ? 2 : 1;
    reverse_ = dir == "reverse";
    layout_ = n.attr_i("layout", 0);
    hidden_attr_ = n.has_attr("hidden_size") ? n.attr_i("hidden_size", 0) : -1;
    clip_ = n.has_attr("clip") ? n.attr_f("clip", 0.0f) : 0.0f;
    input_forget_ = cell == Cell::kLstm && n.attr_i("input_forget", 0) != 0;
    lbr_ = cell == Cell::kGru && n.attr_i("linear_before_reset", 0) != 0;
    pad_ = simd::cell_lanes();
    // Constant weights: packed now, when their dims agree with each other.
    const Tensor* W = init.is_constant(1) ? init.constants[1] : nullptr;
    const Tensor* R = init.is_constant(2) ? init.constants[2] : nullptr;
    const int64_t H = R && R->rank() == 3 ? R->dim(2) : hidden_attr_;
    if (H <= 0 || H > kMaxHidden || (hidden_attr_ > 0 && H != hidden_attr_)) return;
    const int64_t G = gates_ * H;
    if (W && W->dtype() == DType::kFloat && W->rank() == 3 && W->dim(0) == nd_ && W->dim(1) == G) {
      pack_w(*W, planned_);
      w_dims_ = W->dims();
    }
    if (R && R->dtype() == DType::kFloat && R->dims() == Dims{nd_, G, H}) {
      pack_r(*R, H, planned_);
      r_dims_ = R->dims();
    }
    if (init.is_constant(3) && init.constants[3]->dtype() == DType::kFloat &&
        init.constants[3]->dims() == Dims{nd_, 2 * G}) {
      make_bias(*init.constants[3], H, planned_);
      bias_ready_ = true;
    }
    if (cell == Cell::kLstm && init.is_constant(7) && init.constants[7]->dtype() == DType::kFloat &&
        init.constants[7]->dims() == Dims{nd_, 3 * H}) {
      make_peep(*init.constants[7], H, planned_);
      peep_ready_ = true;
    }
  }

  std::string_view name() const override {
    return cell_ == Cell::kRnn ? "cpu.rnn" : (cell_ == Cell::kGru ? "cpu.gru" : "cpu.lstm");
  }
  bool overwrites_outputs() const override { return true; }

  void run(KernelContext& ctx) const override {
    if (!runnable(ctx)) {
      reference_(ctx);
      return;
    }
    const Tensor& X = ctx.input(0);
    const Tensor& R = ctx.input(2);
    const int64_t S = layout_ == 0 ? X.dim(0) : X.dim(1);
    const int64_t B = layout_ == 0 ? X.dim(1) : X.dim(0);
    const int64_t I = X.dim(2), H = R.dim(2), G = gates_ * H;
    std::vector<int64_t> lens(static_cast<size_t>(B), S);
    if (ctx.has_input(4)) lens = ctx.input_ints(4);

    // Weights not prepacked at planning are prepared for this call.
    Weights local;
    const WeightsView w = weights_for(ctx, H, local);

    // xw row r: the input projections of X row r (r = t * B + b, or b * S + t in layout 1)
    // for every direction, nd * G wide.
    const int64_t NG = nd_ * G;
    std::vector<float> xw(static_cast<size_t>(S * B * NG + pad_));
    if (S * B > 0 && I > 0)  // I == 0: the projections are the zeros xw starts as
      simd::sgemm_panels(false, S * B, NG, I, 1.0f, X.data<float>(), I, w.w->data(), 0.0f,
                         xw.data(), NG, ctx.pool());

    Out out;
    out.y = ctx.has_output(0) ? ctx.output(0).data<float>() : nullptr;
    out.yh = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
    out.yc = cell_ == Cell::kLstm && ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
    out.h0 = ctx.has_input(5) ? ctx.input(5).data<float>() : nullptr;
    out.c0 = cell_ == Cell::kLstm && ctx.has_input(6) ? ctx.input(6).data<float>() : nullptr;

    // Tasks: direction x chunk of batch rows, enough for the pool when the work is large.
    ThreadPool* pool = ctx.pool();
    const int64_t threads = pool ? pool->size() : 1;
    int64_t chunks = 1;
    if (threads > nd_ && S * B * G * H >= (1 << 17))
      chunks = std::max<int64_t>(1, std::min(B, (threads + nd_ - 1) / nd_));
    const int64_t per = (B + chunks - 1) / chunks;
    const Shape shape{S, B, H, G, NG};
    auto task = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t d = t / chunks, b0 = (t % chunks) * per, b1 = std::min(B, b0 + per);
        if (b0 < b1) recur(shape, d, b0, b1, lens, xw.data(), w, out);
      }
    };
    const int64_t tasks = nd_ * chunks;
    if (tasks > 1 && threads > 1)
      pool->parallel_for(tasks, task);
    else
      task(0, tasks);
  }

 private:
  struct Shape {
    int64_t S, B, H, G, NG;
  };
  struct Out {
    float* y = nullptr;
    float* yh = nullptr;
    float* yc = nullptr;
    const float* h0 = nullptr;
    const float* c0 = nullptr;
  };

  /// True when the inputs have the dtypes and dims this kernel takes (the reference
  /// takes the rest, or reports them).
  bool runnable(const KernelContext& ctx) const {
    for (size_t i : {0, 1, 2})
      if (!ctx.has_input(i)) return false;
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor& R = ctx.input(2);
    if (X.dtype() != DType::kFloat || W.dtype() != DType::kFloat || R.dtype() != DType::kFloat)
      return false;
    if (X.rank() != 3 || R.rank() != 3 || (layout_ != 0 && layout_ != 1)) return false;
    const int64_t S = layout_ == 0 ? X.dim(0) : X.dim(1);
    const int64_t B = layout_ == 0 ? X.dim(1) : X.dim(0);
    const int64_t H = R.dim(2);
    if (H <= 0 || H > kMaxHidden || (hidden_attr_ >= 0 && H != hidden_attr_)) return false;
    const int64_t G = gates_ * H;
    if (W.dims() != Dims{nd_, G, X.dim(2)} || R.dims() != Dims{nd_, G, H}) return false;
    if (!w_dims_.empty() && W.dims() != w_dims_) return false;
    if (!r_dims_.empty() && R.dims() != r_dims_) return false;
    auto fits = [&](size_t i, const Dims& want) {
      return !ctx.has_input(i) ||
             (ctx.input(i).dtype() == DType::kFloat && ctx.input(i).dims() == want);
    };
    const Dims state = layout_ == 0 ? Dims{nd_, B, H} : Dims{B, nd_, H};
    if (!fits(3, {nd_, 2 * G}) || !fits(5, state)) return false;
    if (cell_ == Cell::kLstm && (!fits(6, state) || !fits(7, {nd_, 3 * H}))) return false;
    if (ctx.has_input(4)) {
      const Tensor& L = ctx.input(4);
      if (L.dims() != Dims{B} || (L.dtype() != DType::kInt32 && L.dtype() != DType::kInt64))
        return false;
      for (int64_t l : ctx.input_ints(4))
        if (l < 0 || l > S) return false;
    }
    if (clip_ < 0 || (ctx.node().has_attr("clip") && !(clip_ > 0))) return false;
    return true;
  }

  /// The prepacked weights, completed by `local` with those that were not constants.
  WeightsView weights_for(const KernelContext& ctx, int64_t H, Weights& local) const {
    WeightsView v;
    if (w_dims_.empty()) pack_w(ctx.input(1), local);
    v.w = w_dims_.empty() ? &local.w : &planned_.w;
    if (r_dims_.empty()) pack_r(ctx.input(2), H, local);
    const Weights& r = r_dims_.empty() ? local : planned_;
    v.r = &r.r;
    v.rh = &r.rh;
    if (!bias_ready_ && ctx.has_input(3)) make_bias(ctx.input(3), H, local);
    const Weights& b = bias_ready_ ? planned_ : local;
    v.bias = b.bias.empty() ? nullptr : b.bias.data();
    v.rbh = b.rbh.empty() ? nullptr : b.rbh.data();
    if (cell_ == Cell::kLstm && !peep_ready_ && ctx.has_input(7)) make_peep(ctx.input(7), H, local);
    const Weights& pp = peep_ready_ ? planned_ : local;
    v.peep = pp.peep.empty() ? nullptr : pp.peep.data();
    return v;
  }

  void pack_w(const Tensor& W, Weights& out) const {
    const int64_t NG = W.dim(0) * W.dim(1), I = W.dim(2);
    out.w.assign(simd::panels_size(I, NG), 0.0f);
    simd::pack_panels(true, I, NG, W.data<float>(), I, out.w.data());
  }

  void pack_r(const Tensor& R, int64_t H, Weights& out) const {
    const int64_t G = gates_ * H;
    // GRU without linear_before_reset multiplies Rh by r (.) h, a second product.
    const int64_t main = cell_ == Cell::kGru && !lbr_ ? 2 * H : G;
    out.r.assign(static_cast<size_t>(nd_), {});
    out.rh.assign(static_cast<size_t>(nd_), {});
    for (int64_t d = 0; d < nd_; ++d) {
      const float* Rd = R.data<float>() + d * G * H;
      auto& r = out.r[static_cast<size_t>(d)];
      r.assign(simd::panels_size(H, main), 0.0f);
      simd::pack_panels(true, H, main, Rd, H, r.data());
      if (main != G) {
        auto& rh = out.rh[static_cast<size_t>(d)];
        rh.assign(simd::panels_size(H, H), 0.0f);
        simd::pack_panels(true, H, H, Rd + 2 * H * H, H, rh.data());
      }
    }
  }

  void make_bias(const Tensor& Bt, int64_t H, Weights& out) const {
    const int64_t G = gates_ * H;
    const float* b = Bt.data<float>();
    out.bias.assign(static_cast<size_t>(nd_ * G + pad_), 0.0f);
    if (lbr_) out.rbh.assign(static_cast<size_t>(nd_ * H + pad_), 0.0f);
    for (int64_t d = 0; d < nd_; ++d) {
      const float* wb = b + d * 2 * G;
      const float* rb = wb + G;
      float* o = out.bias.data() + d * G;
      for (int64_t g = 0; g < G; ++g) o[g] = wb[g] + (lbr_ && g >= 2 * H ? 0.0f : rb[g]);
      if (lbr_) std::copy(rb + 2 * H, rb + 3 * H, out.rbh.data() + d * H);
    }
  }

  void make_peep(const Tensor& P, int64_t H, Weights& out) const {
    out.peep.assign(static_cast<size_t>(nd_ * 3 * H + pad_), 0.0f);
    std::copy(P.data<float>(), P.data<float>() + nd_ * 3 * H, out.peep.data());
  }

  /// Batch rows [b0, b1) of direction d, over their whole sequences.
  void recur(const Shape& s, int64_t d, int64_t b0, int64_t b1, const std::vector<int64_t>& lens,
             const float* xw, const WeightsView& w, const Out& out) const {
    const int64_t S = s.S, B = s.B, H = s.H, G = s.G, mc = b1 - b0;
    const bool reverse = reverse_ || d == 1;
    const int64_t Hp = round_up(H, pad_);
    const int64_t rw = cell_ == Cell::kGru && !lbr_ ? 2 * H : G;  // width of h * R^T
    // State rows are Hp apart, so a gate pass may write whole vectors.
    std::vector<float> h(static_cast<size_t>(mc * Hp), 0.0f), c(h.size(), 0.0f);
    std::vector<float> hr(static_cast<size_t>(mc * rw + pad_), 0.0f);
    std::vector<float> z, rh, rn;
    if (cell_ == Cell::kGru && !lbr_) {
      z.assign(h.size(), 0.0f);
      rh.assign(h.size(), 0.0f);
      rn.assign(static_cast<size_t>(mc * H + pad_), 0.0f);
    }
    auto state_off = [&](int64_t b) { return (layout_ == 0 ? d * B + b : b * nd_ + d) * H; };
    auto y_off = [&](int64_t t, int64_t b) {
      return (layout_ == 0 ? (t * nd_ + d) * B + b : (b * S + t) * nd_ + d) * H;
    };
    int64_t steps = 0;
    for (int64_t b = b0; b < b1; ++b) {
      if (out.h0) std::memcpy(&h[(b - b0) * Hp], out.h0 + state_off(b), H * sizeof(float));
      if (out.c0) std::memcpy(&c[(b - b0) * Hp], out.c0 + state_off(b), H * sizeof(float));
      steps = std::max(steps, lens[static_cast<size_t>(b)]);
    }
    const float* R = (*w.r)[static_cast<size_t>(d)].data();
    const float* bias = w.bias ? w.bias + d * G : nullptr;
    const float* rbh = w.rbh ? w.rbh + d * H : nullptr;
    const float* peep = w.peep ? w.peep + d * 3 * H : nullptr;
    simd::CellParams p;
    p.hidden = H;
    p.clip = clip_;
    const size_t per_dir = cell_ == Cell::kRnn ? 1 : (cell_ == Cell::kGru ? 2 : 3);
    const RnnActivation* act = acts_.data() + static_cast<size_t>(d) * per_dir;
    p.f = act[0];
    if (per_dir > 1) p.g = act[1];
    if (per_dir > 2) p.h = act[2];

    CancelPoll poll;  // base/cancel.h
    for (int64_t step = 0; step < steps; ++step) {
      poll(mc * rw * H);
      product(mc, rw, H, h.data(), Hp, R, hr.data(), rw);
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)], k = b - b0;
        if (step >= len) continue;
        const int64_t t = reverse ? len - 1 - step : step;
        const float* x = xw + (layout_ == 0 ? t * B + b : b * S + t) * s.NG + d * G;
        const float* q = hr.data() + k * rw;
        float* hk = h.data() + k * Hp;
        switch (cell_) {
          case Cell::kRnn:
            simd::rnn_cell(p, x, q, bias, hk);
            break;
          case Cell::kLstm:
            simd::lstm_cell(p, input_forget_, x, q, bias, peep, c.data() + k * Hp, hk);
            break;
          case Cell::kGru:
            if (lbr_)
              simd::gru_cell_lbr(p, x, q, bias, rbh, hk);
            else
              simd::gru_cell_gates(p, x, q, bias, hk, z.data() + k * Hp, rh.data() + k * Hp);
            break;
        }
      }
      if (cell_ == Cell::kGru && !lbr_) {
        product(mc, H, H, rh.data(), Hp, (*w.rh)[static_cast<size_t>(d)].data(), rn.data(), H);
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)], k = b - b0;
          if (step >= len) continue;
          const int64_t t = reverse ? len - 1 - step : step;
          const float* x = xw + (layout_ == 0 ? t * B + b : b * S + t) * s.NG + d * G;
          simd::gru_cell_update(p, x, rn.data() + k * H, bias, z.data() + k * Hp,
                                h.data() + k * Hp);
        }
      }
      if (out.y)
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)];
          if (step >= len) continue;
          const int64_t t = reverse ? len - 1 - step : step;
          std::memcpy(out.y + y_off(t, b), &h[(b - b0) * Hp], H * sizeof(float));
        }
    }
    for (int64_t b = b0; b < b1; ++b) {
      if (out.y)
        for (int64_t t = lens[static_cast<size_t>(b)]; t < S; ++t)
          std::fill(out.y + y_off(t, b), out.y + y_off(t, b) + H, 0.0f);
      if (out.yh) std::memcpy(out.yh + state_off(b), &h[(b - b0) * Hp], H * sizeof(float));
      if (out.yc) std::memcpy(out.yc + state_off(b), &c[(b - b0) * Hp], H * sizeof(float));
    }
  }

  /// C[M x N] = A * B for the panels B (K x N): the few-row kernel for small batches.
  static void product(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                      const float* panels, float* C, int64_t ldc) {
    if (M <= 4)
      simd::small_gemm(M, N, K, A, lda, panels, C, ldc);
    else
      simd::sgemm_panels(false, M, N, K, 1.0f, A, lda, panels, 0.0f, C, ldc, nullptr);
  }

  Cell cell_;
  KernelFn reference_;
  std::vector<RnnActivation> acts_;
  int64_t gates_ = 1, nd_ = 1, layout_ = 0, hidden_attr_ = -1, pad_ = 16;
  bool reverse_ = false, input_forget_ = false, lbr_ = false;
  float clip_ = 0;
  Weights planned_;
  Dims w_dims_, r_dims_;  ///< dims of the prepacked W and R (empty: not constants)
  bool bias_ready_ = false, peep_ready_ = false;
};

template <Cell C>
std::unique_ptr<Kernel> make_recurrent(const KernelInit& init) {
  const ir::Node& n = init.node;
  const ir::TypeInfo* xt = init.input_type(0);
  if (xt && xt->elem != DType::kUndefined && xt->elem != DType::kFloat) return nullptr;
  const std::string dir = n.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return nullptr;
  const int64_t layout = n.attr_i("layout", 0);
  if (layout != 0 && layout != 1) return nullptr;
  if (n.has_attr("clip") && !(n.attr_f("clip", 0.0f) > 0)) return nullptr;
  const std::vector<std::string> defaults =
      C == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
      : C == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                        : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<RnnActivation> acts;
  if (!parse_activations(n, defaults, dir == "bidirectional" ? 2 : 1, acts)) return nullptr;
  return std::make_unique<RecurrentKernel>(C, init, std::move(acts));
}

}  // namespace

void register_rnn(Registry& r) {
  r.add_optimized("", "RNN", 1, 1000, {DType::kFloat}, make_recurrent<Cell::kRnn>);
  r.add_optimized("", "GRU", 1, 1000, {DType::kFloat}, make_recurrent<Cell::kGru>);
  r.add_optimized("", "LSTM", 1, 1000, {DType::kFloat}, make_recurrent<Cell::kLstm>);
}

}  // namespace onyx::kernels::cpu
