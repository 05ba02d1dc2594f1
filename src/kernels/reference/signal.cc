// Reference kernels of the signal family: DFT, STFT, HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix. Transforms are direct O(N^2) sums in double with
// exact twiddle angles (k*n reduced mod N before scaling).
#include <cmath>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/doubles.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<double> load(const Tensor& t) {
  return load_doubles(t, "signal kernels");
}

/// Writes doubles into a numeric tensor (integers truncate toward zero, as a C cast).
void store(Tensor& t, const std::vector<double>& v) {
  store_doubles(t, v, "signal kernels");
}

/// A scalar int32/int64 input.
int64_t scalar_input(const KernelContext& ctx, size_t i, const char* what) {
  std::vector<int64_t> v = ctx.input_ints(i);
  if (v.size() != 1) ctx.fail("{} (input {}) must hold one value, got {}", what, i, v.size());
  return v[0];
}

/// cos/sin of 2*pi*m/n for m in [0, n).
struct Twiddles {
  std::vector<double> c, s;
  explicit Twiddles(int64_t n) : c(static_cast<size_t>(n)), s(static_cast<size_t>(n)) {
    for (int64_t m = 0; m < n; ++m) {
      double a = 2.0 * kPi * static_cast<double>(m) / static_cast<double>(n);
      c[static_cast<size_t>(m)] = std::cos(a);
      s[static_cast<size_t>(m)] = std::sin(a);
    }
  }
};

/// out[k] = sum_m in[m] * exp(sign * 2*pi*i*k*m/n) for k < n_out, over in[0..n_in).
/// Complex values are interleaved (re, im).
void dft_line(const Twiddles& tw, int64_t n, const double* in, int64_t n_in, double* out,
              int64_t n_out, double sign) {
  CancelPoll poll;  // O(n^2): a million points is hours
  for (int64_t k = 0; k < n_out; ++k) {
    poll(n_in);
    double re = 0, im = 0;
    for (int64_t m = 0; m < n_in; ++m) {
      const size_t idx = static_cast<size_t>((k * m) % n);
      const double c = tw.c[idx], s = sign * tw.s[idx];
      const double xr = in[2 * m], xi = in[2 * m + 1];
      re += xr * c - xi * s;
      im += xr * s + xi * c;
    }
    out[2 * k] = re;
    out[2 * k + 1] = im;
  }
}

// ---- DFT ----

void dft(KernelContext& ctx) {
  const Tensor& xt = ctx.input(0);
  const int64_t r = static_cast<int64_t>(xt.rank());
  if (r < 2) ctx.fail("input must have rank >= 2, got {}", dims_str(xt.dims()));
  const int64_t comp = xt.dims().back();
  if (comp != 1 && comp != 2)
    ctx.fail("the last dim must be 1 (real) or 2 (complex), got {}", comp);
  const bool onesided = ctx.attr_i("onesided", 0) != 0;
  const bool inverse = ctx.attr_i("inverse", 0) != 0;
  const bool irfft = onesided && inverse;
  if (irfft && comp != 2) ctx.fail("an inverse one-sided DFT (IRFFT) needs complex input");
  int64_t axis = ctx.opset() < 20 ? ctx.attr_i("axis", 1) : -2;
  if (ctx.opset() >= 20 && ctx.has_input(2)) axis = scalar_input(ctx, 2, "axis");
  if (axis < -r || axis > r - 2 || axis == -1)
    ctx.fail("axis {} is out of range [{}, -2] U [0, {}] for rank {}", axis, -r, r - 2, r);
  if (axis < 0) axis += r;
  const int64_t n_axis = xt.dim(static_cast<size_t>(axis));
  int64_t n = irfft ? checked_mul(2, n_axis - 1, "the IRFFT length 2 * (bins - 1)") : n_axis;
  if (ctx.has_input(1)) n = scalar_input(ctx, 1, "dft_length");
  if (n <= 0) ctx.fail("the DFT length must be positive, got {}", n);
  const int64_t n_out = onesided && !inverse ? n / 2 + 1 : n;

  Tensor& yt = ctx.output(0);
  // dft_length is data: with an empty output it must not size the tables below.
  if (yt.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= xt.dim(static_cast<size_t>(i));
  for (int64_t i = axis + 1; i < r - 1; ++i) inner *= xt.dim(static_cast<size_t>(i));
  const int64_t out_comp = irfft ? 1 : 2;
  if (static_cast<size_t>(yt.numel()) !=
      checked_count({outer, n_out, inner, out_comp}, "the DFT output"))
    ctx.fail("output {} does not match the DFT of {}", dims_str(yt.dims()), dims_str(xt.dims()));

  const std::vector<double> x = load(xt);
  std::vector<double> y(static_cast<size_t>(yt.numel()));
  const Twiddles tw(n);
  // Input samples used: the first n (zero-padded); for IRFFT the first n/2 + 1 bins.
  const int64_t n_in = std::min(n_axis, irfft ? n / 2 + 1 : n);
  std::vector<double> line(static_cast<size_t>(2 * n), 0.0), res(static_cast<size_t>(2 * n));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::fill(line.begin(), line.end(), 0.0);
      for (int64_t m = 0; m < n_in; ++m) {
        const size_t src = static_cast<size_t>(((o * n_axis + m) * inner + in) * comp);
        line[static_cast<size_t>(2 * m)] = x[src];
        line[static_cast<size_t>(2 * m + 1)] = comp == 2 ? x[src + 1] : 0.0;
      }
      if (irfft)  // Hermitian completion of the spectrum
        for (int64_t m = n / 2 + 1; m < n; ++m) {
          line[static_cast<size_t>(2 * m)] = line[static_cast<size_t>(2 * (n - m))];
          line[static_cast<size_t>(2 * m + 1)] = -line[static_cast<size_t>(2 * (n - m) + 1)];
        }
      dft_line(tw, n, line.data(), irfft ? n : std::min(n_axis, n), res.data(), n_out, sign);
      const double norm = inverse ? 1.0 / static_cast<double>(n) : 1.0;
      for (int64_t k = 0; k < n_out; ++k) {
        const size_t dst = static_cast<size_t>(((o * n_out + k) * inner + in) * out_comp);
        y[dst] = res[static_cast<size_t>(2 * k)] * norm;
        if (!irfft) y[dst + 1] = res[static_cast<size_t>(2 * k + 1)] * norm;
      }
    }
  store(yt, y);
}

// ---- STFT ----

void stft(KernelContext& ctx) {
  const Tensor& st = ctx.input(0);
  if (st.rank() != 3 || (st.dim(2) != 1 && st.dim(2) != 2))
    ctx.fail("signal must be [batch][length][1 or 2], got {}", dims_str(st.dims()));
  const int64_t batch = st.dim(0), len = st.dim(1), comp = st.dim(2);
  const bool onesided = ctx.attr_i("onesided", 1) != 0;
  if (onesided && comp == 2) ctx.fail("onesided output is not possible for a complex signal");
  const int64_t step = scalar_input(ctx, 1, "frame_step");
  if (step <= 0) ctx.fail("frame_step must be positive, got {}", step);
  std::vector<double> window;
  int64_t fl = -1;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1) ctx.fail("window must be 1-D, got {}", dims_str(w.dims()));
    window = load(w);
    fl = w.dim(0);
  }
  if (ctx.has_input(3)) {
    int64_t v = scalar_input(ctx, 3, "frame_length");
    if (fl >= 0 && v != fl) ctx.fail("frame_length {} differs from the window length {}", v, fl);
    fl = v;
  }
  if (fl <= 0)
    ctx.fail("the frame length must be positive (from window or frame_length), got {}", fl);
  if (fl > len) ctx.fail("frame length {} exceeds the signal length {}", fl, len);
  const int64_t frames = (len - fl) / step + 1;
  const int64_t bins = onesided ? fl / 2 + 1 : fl;
  Tensor& yt = ctx.output(0);
  if (yt.dims() != Dims{batch, frames, bins, 2})
    ctx.fail("output {} does not match [{}, {}, {}, 2]", dims_str(yt.dims()), batch, frames, bins);

  if (yt.numel() == 0) return;  // (frame_length, from data, sizes the tables below)
  const std::vector<double> x = load(st);
  std::vector<double> y(static_cast<size_t>(yt.numel()));
  const Twiddles tw(fl);
  std::vector<double> line(static_cast<size_t>(2 * fl)), res(static_cast<size_t>(2 * bins));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t m = 0; m < fl; ++m) {
        const size_t src = static_cast<size_t>((b * len + f * step + m) * comp);
        const double w = window.empty() ? 1.0 : window[static_cast<size_t>(m)];
        line[static_cast<size_t>(2 * m)] = x[src] * w;
        line[static_cast<size_t>(2 * m + 1)] = comp == 2 ? x[src + 1] * w : 0.0;
      }
      dft_line(tw, fl, line.data(), fl, res.data(), bins, -1.0);
      std::copy(res.begin(), res.end(), y.begin() + (b * frames + f) * bins * 2);
    }
  store(yt, y);
}

// ---- windows ----

/// Generalized cosine window sum_i a[i] * cos(2*pi*i*k / N), N = size (periodic) or
/// size - 1 (symmetric).
void cosine_window(KernelContext& ctx, const std::vector<double>& a) {
  const int64_t size = scalar_input(ctx, 0, "size");
  if (size < 0) ctx.fail("size must be >= 0, got {}", size);
  Tensor& yt = ctx.output(0);
  if (yt.numel() != size) ctx.fail("output {} does not hold {} values", dims_str(yt.dims()), size);
  const bool periodic = ctx.attr_i("periodic", 1) != 0;
  const double denom = static_cast<double>(std::max<int64_t>(periodic ? size : size - 1, 1));
  std::vector<double> y(static_cast<size_t>(size));
  for (int64_t k = 0; k < size; ++k) {
    double v = 0;
    for (size_t i = 0; i < a.size(); ++i)
      v += a[i] * std::cos(2.0 * kPi * static_cast<double>(i) * static_cast<double>(k) / denom);
    y[static_cast<size_t>(k)] = v;
  }
  store(yt, y);
}

void hann_window(KernelContext& ctx) {
  cosine_window(ctx, {0.5, -0.5});
}
void hamming_window(KernelContext& ctx) {
  cosine_window(ctx, {25.0 / 46.0, -21.0 / 46.0});
}
void blackman_window(KernelContext& ctx) {
  cosine_window(ctx, {0.42, -0.5, 0.08});
}

// ---- MelWeightMatrix ----

/// Triangular mel filters. The band edges follow the ONNX reference: mel-scale points
/// spaced by (high - low) / (num_mel_bins + 2), mapped to bins by
/// floor((dft_length + 1) * hz / sample_rate). The mel edges are computed in the type of
/// the hertz inputs (F), the rest in double.
template <typename F>
std::vector<double> mel_matrix(const KernelContext& ctx, int64_t mel, int64_t dft, int64_t rate,
                               F lower, F upper) {
  const int64_t spec_bins = dft / 2 + 1;
  const F low_mel = F(2595) * std::log10(F(1) + lower / F(700));
  const F high_mel = F(2595) * std::log10(F(1) + upper / F(700));
  const F mel_step = (high_mel - low_mel) / static_cast<F>(mel + 2);
  std::vector<int64_t> edges(static_cast<size_t>(mel + 2));
  for (int64_t i = 0; i < mel + 2; ++i) {
    double m =
        static_cast<double>(i) * static_cast<double>(mel_step) + static_cast<double>(low_mel);
    double hz = 700.0 * (std::pow(10.0, m / 2595.0) - 1.0);
    double bin = std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate));
    if (!(bin >= 0 && bin < static_cast<double>(spec_bins)))
      ctx.fail(
          "mel band edge {} maps to spectrogram bin {}, outside [0, {}); check the hertz range "
          "against "
          "sample_rate",
          i, bin, spec_bins);
    edges[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  std::vector<double> out(static_cast<size_t>(spec_bins * mel), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return out[static_cast<size_t>(j * mel + i)]; };
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t lo = edges[static_cast<size_t>(i)], ce = edges[static_cast<size_t>(i + 1)],
                  hi = edges[static_cast<size_t>(i + 2)];
    if (ce == lo)
      at(ce, i) = 1.0;
    else
      for (int64_t j = lo; j <= ce; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(ce - lo);
    if (hi > ce)
      for (int64_t j = ce; j < hi; ++j)
        at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - ce);
  }
  return out;
}

void mel_weight_matrix(KernelContext& ctx) {
  const int64_t mel = scalar_input(ctx, 0, "num_mel_bins");
  const int64_t dft = scalar_input(ctx, 1, "dft_length");
  const int64_t rate = scalar_input(ctx, 2, "sample_rate");
  if (mel <= 0 || dft <= 0 || rate <= 0)
    ctx.fail("num_mel_bins ({}), dft_length ({}) and sample_rate ({}) must be positive", mel, dft,
             rate);
  const Tensor& lt = ctx.input(3);
  const Tensor& ut = ctx.input(4);
  if (lt.numel() != 1 || ut.numel() != 1)
    ctx.fail("lower_edge_hertz and upper_edge_hertz must be scalars");
  const double lower = load(lt)[0], upper = load(ut)[0];
  Tensor& yt = ctx.output(0);
  if (yt.dims() != Dims{dft / 2 + 1, mel})
    ctx.fail("output {} does not match [{}, {}]", dims_str(yt.dims()), dft / 2 + 1, mel);
  std::vector<double> out = lt.dtype() == DType::kDouble
                                ? mel_matrix<double>(ctx, mel, dft, rate, lower, upper)
                                : mel_matrix<float>(ctx, mel, dft, rate, static_cast<float>(lower),
                                                    static_cast<float>(upper));
  store(yt, out);
}

}  // namespace

void register_signal(Registry& r) {
  r.add("", "DFT", 17, 1000, float_types(), dft);
  r.add("", "STFT", 17, 1000, float_types(), stft);
  const std::vector<DType> ints{DType::kInt32, DType::kInt64};
  r.add("", "HannWindow", 17, 1000, ints, hann_window);
  r.add("", "HammingWindow", 17, 1000, ints, hamming_window);
  r.add("", "BlackmanWindow", 17, 1000, ints, blackman_window);
  r.add("", "MelWeightMatrix", 17, 1000, ints, mel_weight_matrix);
}

}  // namespace onyx::kernels
