// Reference kernels of the rnn family: RNN, GRU, LSTM (every direction, both layouts,
// sequence_lens, initial states, custom activations, clip, peepholes).
// All arithmetic is done in double and rounded to the output dtype once.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

enum class Act {
  kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh,
  kHardSigmoid, kElu, kSoftsign, kSoftplus
};

struct Activation {
  Act kind = Act::kSigmoid;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case Act::kRelu: return x > 0 ? x : 0;
      case Act::kTanh: return std::tanh(x);
      case Act::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
      case Act::kAffine: return alpha * x + beta;
      case Act::kLeakyRelu: return x >= 0 ? x : alpha * x;
      case Act::kThresholdedRelu: return x > alpha ? x : 0;
      case Act::kScaledTanh: return alpha * std::tanh(beta * x);
      case Act::kHardSigmoid: return std::min(1.0, std::max(0.0, alpha * x + beta));
      case Act::kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case Act::kSoftsign: return x / (1 + std::fabs(x));
      case Act::kSoftplus: return x > 30 ? x : std::log1p(std::exp(x));
    }
    return x;
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses the `activations` attribute into num_dirs * per_dir functions. alpha and beta
// values are consumed in order, each only by the functions that take one (as
// onnxruntime does); a function whose value runs out gets the ONNX op's default.
std::vector<Activation> parse_activations(const KernelContext& ctx, const std::vector<std::string>& defaults,
                                          int num_dirs) {
  std::vector<std::string> names = ctx.node().attr_strings("activations");
  const size_t per_dir = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < num_dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && num_dirs == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  } else if (names.size() != per_dir * static_cast<size_t>(num_dirs)) {
    ctx.fail("activations has {} entries, expected {}", names.size(), per_dir * num_dirs);
  }
  std::vector<float> alphas = ctx.attr_floats("activation_alpha");
  std::vector<float> betas = ctx.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto take = [](const std::vector<float>& v, size_t& i, double def) {
    return i < v.size() ? static_cast<double>(v[i++]) : def;
  };
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    std::string n = lower(raw);
    Activation a;
    if (n == "relu") a.kind = Act::kRelu;
    else if (n == "tanh") a.kind = Act::kTanh;
    else if (n == "sigmoid") a.kind = Act::kSigmoid;
    else if (n == "affine") {
      a.kind = Act::kAffine;
      a.alpha = take(alphas, ai, 1.0);
      a.beta = take(betas, bi, 0.0);
    } else if (n == "leakyrelu") {
      a.kind = Act::kLeakyRelu;
      a.alpha = take(alphas, ai, 0.01);
    } else if (n == "thresholdedrelu") {
      a.kind = Act::kThresholdedRelu;
      a.alpha = take(alphas, ai, 1.0);
    } else if (n == "scaledtanh") {
      a.kind = Act::kScaledTanh;
      a.alpha = take(alphas, ai, 1.0);
      a.beta = take(betas, bi, 1.0);
    } else if (n == "hardsigmoid") {
      a.kind = Act::kHardSigmoid;
      a.alpha = take(alphas, ai, 0.2);
      a.beta = take(betas, bi, 0.5);
    } else if (n == "elu") {
      a.kind = Act::kElu;
      a.alpha = take(alphas, ai, 1.0);
    } else if (n == "softsign") a.kind = Act::kSoftsign;
    else if (n == "softplus") a.kind = Act::kSoftplus;
    else
      ctx.fail("unsupported activation '{}' (expected Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
               "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus)", raw);
    out.push_back(a);
  }
  return out;
}

// Reads any float tensor into doubles.
std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<acc_t<T>>(p[i]));
  }, "RNN/GRU/LSTM");
  return v;
}

void store(Tensor& t, const std::vector<double>& v) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = T(static_cast<acc_t<T>>(v[i]));
  }, "RNN/GRU/LSTM");
}

enum class Cell { kRnn, kGru, kLstm };

// Checks the dims of an optional input against what the op needs.
void check_dims(const KernelContext& ctx, size_t i, const char* name, const Dims& want) {
  if (!ctx.has_input(i)) return;
  if (ctx.input(i).dims() != want)
    ctx.fail("{} has shape {}, expected {}", name, dims_str(ctx.input(i).dims()), dims_str(want));
}

void run_recurrent(KernelContext& ctx, Cell cell) {
  const int64_t gates = cell == Cell::kRnn ? 1 : (cell == Cell::kGru ? 3 : 4);
  const Tensor& X = ctx.input(0);
  const Tensor& Wt = ctx.input(1);
  const Tensor& Rt = ctx.input(2);
  const std::string dir = ctx.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.fail("direction must be forward, reverse or bidirectional, got '{}'", dir);
  const int64_t nd = dir == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attr_i("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, got {}", layout);
  if (X.rank() != 3 || Wt.rank() != 3 || Rt.rank() != 3)
    ctx.fail("X, W and R must have rank 3, got {}, {}, {}", dims_str(X.dims()), dims_str(Wt.dims()),
             dims_str(Rt.dims()));
  const int64_t S = layout == 0 ? X.dim(0) : X.dim(1);
  const int64_t B = layout == 0 ? X.dim(1) : X.dim(0);
  const int64_t I = X.dim(2);
  const int64_t H = ctx.has_attr("hidden_size") ? ctx.attr_i("hidden_size", 0) : Rt.dim(2);
  if (H <= 0) ctx.fail("hidden_size must be positive, got {}", H);
  const int64_t G = checked_mul(gates, H, "hidden_size times the gate count");
  check_dims(ctx, 1, "W", {nd, G, I});
  check_dims(ctx, 2, "R", {nd, G, H});
  check_dims(ctx, 3, "B", {nd, 2 * G});
  check_dims(ctx, 4, "sequence_lens", {B});
  const Dims state_dims = layout == 0 ? Dims{nd, B, H} : Dims{B, nd, H};
  check_dims(ctx, 5, "initial_h", state_dims);
  if (cell == Cell::kLstm) {
    check_dims(ctx, 6, "initial_c", state_dims);
    check_dims(ctx, 7, "P", {nd, 3 * H});
  }

  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (ctx.has_input(4)) {
    lens = ctx.input_ints(4);
    for (int64_t l : lens)
      if (l < 0 || l > S) ctx.fail("sequence_lens value {} is outside [0, {}]", l, S);
  }

  const std::vector<double> x = to_doubles(X), w = to_doubles(Wt), r = to_doubles(Rt);
  // B (batch) comes from X, which may be empty (input_size 0) and so bounds nothing.
  const size_t state_size =
      checked_count({nd, B, H}, "the state (num_directions * batch * hidden_size)");
  std::vector<double> bias(static_cast<size_t>(nd * 2 * G), 0.0);
  if (ctx.has_input(3)) bias = to_doubles(ctx.input(3));
  std::vector<double> h0(state_size, 0.0), c0 = h0;
  if (ctx.has_input(5)) h0 = to_doubles(ctx.input(5));
  if (cell == Cell::kLstm && ctx.has_input(6)) c0 = to_doubles(ctx.input(6));
  std::vector<double> peep(static_cast<size_t>(nd * 3 * H), 0.0);
  if (cell == Cell::kLstm && ctx.has_input(7)) peep = to_doubles(ctx.input(7));

  const std::vector<std::string> defaults =
      cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<Activation> acts = parse_activations(ctx, defaults, static_cast<int>(nd));
  const size_t per_dir = defaults.size();
  const bool has_clip = ctx.has_attr("clip");
  const double clip = ctx.attr_f("clip", 0.f);
  if (has_clip && !(clip > 0)) ctx.fail("clip must be positive, got {}", clip);
  const bool lbr = ctx.attr_i("linear_before_reset", 0) != 0;
  const bool input_forget = ctx.attr_i("input_forget", 0) != 0;
  auto clipped = [&](double v) { return has_clip ? std::min(clip, std::max(-clip, v)) : v; };

  auto x_at = [&](int64_t t, int64_t b) {
    return x.data() + (layout == 0 ? t * B + b : b * S + t) * I;
  };
  auto state_off = [&](int64_t d, int64_t b) {
    return static_cast<size_t>((layout == 0 ? d * B + b : b * nd + d) * H);
  };
  auto y_off = [&](int64_t t, int64_t d, int64_t b) {
    return static_cast<size_t>((layout == 0 ? (t * nd + d) * B + b : (b * S + t) * nd + d) * H);
  };

  std::vector<double> Y(ctx.has_output(0) ? checked_count({S, nd, B, H}, "the output Y") : 0, 0.0);
  std::vector<double> Yh(state_size, 0.0), Yc = Yh;
  std::vector<double> xw(static_cast<size_t>(G)), hr(static_cast<size_t>(G));
  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), hn(static_cast<size_t>(H));

  for (int64_t d = 0; d < nd; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    // data() + offset: W may be empty when input_size is 0.
    const double* Wd = w.data() + d * G * I;
    const double* Rd = r.data() + d * G * H;
    const double* Wb = bias.data() + d * 2 * G;
    const double* Rb = Wb + G;
    const double* Pd = peep.data() + d * 3 * H;
    const Activation* f = &acts[static_cast<size_t>(d) * per_dir];
    for (int64_t b = 0; b < B; ++b) {
      const size_t so = state_off(d, b);
      std::copy(h0.begin() + so, h0.begin() + so + H, h.begin());
      std::copy(c0.begin() + so, c0.begin() + so + H, c.begin());
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t step = 0; step < len; ++step) {
        poll_cancel();
        const int64_t t = reverse ? len - 1 - step : step;
        const double* xt = x_at(t, b);
        for (int64_t g = 0; g < G; ++g) {
          double s = Wb[g];
          const double* wr = Wd + g * I;
          for (int64_t k = 0; k < I; ++k) s += wr[k] * xt[k];
          xw[static_cast<size_t>(g)] = s;
          double q = Rb[g];
          const double* rr = Rd + g * H;
          // GRU without linear_before_reset applies R_h to (r (.) H) below instead.
          if (!(cell == Cell::kGru && !lbr && g >= 2 * H))
            for (int64_t k = 0; k < H; ++k) q += rr[k] * h[static_cast<size_t>(k)];
          hr[static_cast<size_t>(g)] = q;
        }
        if (cell == Cell::kRnn) {
          for (int64_t j = 0; j < H; ++j) hn[j] = f[0](clipped(xw[j] + hr[j]));
        } else if (cell == Cell::kGru) {
          std::vector<double> rg(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) rg[j] = f[0](clipped(xw[H + j] + hr[H + j]));
          for (int64_t j = 0; j < H; ++j) {
            const double z = f[0](clipped(xw[j] + hr[j]));
            double pre;
            if (lbr) {
              pre = xw[2 * H + j] + rg[j] * hr[2 * H + j];
            } else {
              double q = hr[2 * H + j];  // Rbh only so far
              const double* rr = Rd + (2 * H + j) * H;
              for (int64_t k = 0; k < H; ++k) q += rr[k] * rg[k] * h[k];
              pre = xw[2 * H + j] + q;
            }
            const double cand = f[1](clipped(pre));
            hn[j] = (1 - z) * cand + z * h[j];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double i = f[0](clipped(xw[j] + hr[j] + Pd[j] * c[j]));
            const double fg = input_forget ? 1 - i
                                           : f[0](clipped(xw[2 * H + j] + hr[2 * H + j] + Pd[2 * H + j] * c[j]));
            const double cand = f[1](clipped(xw[3 * H + j] + hr[3 * H + j]));
            const double cn = fg * c[j] + i * cand;
            const double o = f[0](clipped(xw[H + j] + hr[H + j] + Pd[H + j] * cn));
            hn[j] = o * f[2](clipped(cn));
            c[j] = cn;
          }
        }
        h = hn;
        if (!Y.empty()) std::copy(h.begin(), h.end(), Y.begin() + y_off(t, d, b));
      }
      std::copy(h.begin(), h.end(), Yh.begin() + so);
      std::copy(c.begin(), c.end(), Yc.begin() + so);
    }
  }
  if (ctx.has_output(0)) store(ctx.output(0), Y);
  if (ctx.has_output(1)) store(ctx.output(1), Yh);
  if (cell == Cell::kLstm && ctx.has_output(2)) store(ctx.output(2), Yc);
}

void rnn_kernel(KernelContext& ctx) { run_recurrent(ctx, Cell::kRnn); }
void gru_kernel(KernelContext& ctx) { run_recurrent(ctx, Cell::kGru); }
void lstm_kernel(KernelContext& ctx) { run_recurrent(ctx, Cell::kLstm); }

}  // namespace

void register_rnn(Registry& r) {
  r.add("", "RNN", 1, 1000, float_types(), rnn_kernel);
  r.add("", "GRU", 1, 1000, float_types(), gru_kernel);
  r.add("", "LSTM", 1, 1000, float_types(), lstm_kernel);
}

}  // namespace onyx::kernels
