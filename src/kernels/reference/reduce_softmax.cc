// Reference kernels of the reduce family, part 2: Softmax, LogSoftmax, Hardmax,
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {
namespace {

enum class SM { kSoftmax, kLogSoftmax, kHardmax };

/// The (outer, n, inner) view of a tensor around the softmax axis. Before opset 13
/// the input is coerced to 2D at `axis`: rows of everything from `axis` on.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView softmax_view(const KernelContext& ctx, const Dims& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = ctx.attr_i("axis", ctx.opset() >= 13 ? -1 : 1);
  AxisView v;
  // An empty tensor's other extents may not even multiply; nothing is computed for it.
  const bool empty = std::find(dims.begin(), dims.end(), int64_t{0}) != dims.end();
  if (ctx.opset() < 13) {
    if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    if (empty) return AxisView{0, 0, 0};
    for (int64_t k = 0; k < rank; ++k) (k < axis ? v.outer : v.n) *= dims[static_cast<size_t>(k)];
  } else {
    if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    if (empty) return AxisView{0, 0, 0};
    for (int64_t k = 0; k < rank; ++k) {
      int64_t d = dims[static_cast<size_t>(k)];
      if (k < axis) v.outer *= d;
      else if (k == axis) v.n = d;
      else v.inner *= d;
    }
  }
  return v;
}

/// Computes softmax-like ops over the middle axis of an (outer, n, inner) block.
/// Runs over `inner` contiguously with per-column running values, so it is cache
/// friendly for any axis.
template <SM M, typename T>
void softmax_rows(const T* x, T* y, const AxisView& v) {
  using A = acc_t<T>;
  const size_t inner = static_cast<size_t>(v.inner);
  std::vector<A> mx(inner), sum(inner);
  std::vector<int64_t> arg(inner);
  for (int64_t o = 0; o < v.outer; ++o) {
    const T* xb = x + o * v.n * v.inner;
    T* yb = y + o * v.n * v.inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<A>::infinity());
    std::fill(arg.begin(), arg.end(), 0);
    for (int64_t k = 0; k < v.n; ++k)
      for (size_t i = 0; i < inner; ++i) {
        A a = static_cast<A>(xb[k * v.inner + static_cast<int64_t>(i)]);
        if (a > mx[i]) {
          mx[i] = a;
          arg[i] = k;
        }
      }
    if constexpr (M == SM::kHardmax) {
      for (int64_t k = 0; k < v.n; ++k)
        for (size_t i = 0; i < inner; ++i)
          yb[k * v.inner + static_cast<int64_t>(i)] = T(arg[i] == k ? 1.0f : 0.0f);
      continue;
    }
    // An all -inf (or +inf) column shifts by 0 so exp() sees no inf - inf.
    for (A& m : mx)
      if (!std::isfinite(m)) m = 0;
    std::fill(sum.begin(), sum.end(), A(0));
    for (int64_t k = 0; k < v.n; ++k)
      for (size_t i = 0; i < inner; ++i) {
        int64_t at = k * v.inner + static_cast<int64_t>(i);
        A e = std::exp(static_cast<A>(xb[at]) - mx[i]);
        sum[i] += e;
        if constexpr (M == SM::kSoftmax) yb[at] = T(e);
      }
    for (int64_t k = 0; k < v.n; ++k)
      for (size_t i = 0; i < inner; ++i) {
        int64_t at = k * v.inner + static_cast<int64_t>(i);
        if constexpr (M == SM::kSoftmax)
          yb[at] = T(static_cast<A>(yb[at]) / sum[i]);
        else
          yb[at] = T(static_cast<A>(xb[at]) - mx[i] - std::log(sum[i]));
      }
  }
}

template <SM M>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  AxisView v = softmax_view(ctx, x.dims());
  if (x.numel() == 0) return;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      // Work in float: storing exp() into a 16-bit output before dividing loses bits.
      std::vector<float> xf(static_cast<size_t>(x.numel())), yf(xf.size());
      for (size_t k = 0; k < xf.size(); ++k) xf[k] = static_cast<float>(x.data<T>()[k]);
      softmax_rows<M, float>(xf.data(), yf.data(), v);
      for (size_t k = 0; k < xf.size(); ++k) y.data<T>()[k] = T(yf[k]);
    } else {
      softmax_rows<M, T>(x.data<T>(), y.data<T>(), v);
    }
  }, ctx.node().op_type.c_str());
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

/// Shared by both losses: `logp` is (N, C, D) log-probabilities (in double), target
/// (N, D); writes the per-element loss or its reduction into `out`.
template <typename T>
void nll_reduce(KernelContext& ctx, const std::vector<double>& logp, const Tensor& input,
                Tensor& out) {
  const Tensor& target = ctx.input(1);
  const Dims& dims = input.dims();
  const int64_t N = dims[0], C = dims[1];
  int64_t D = 1;
  for (size_t k = 2; k < dims.size(); ++k)
    D = checked_mul(D, dims[k], "the spatial size of the input");
  Dims want(dims.begin(), dims.end());
  want.erase(want.begin() + 1);
  if (target.dims() != want)
    ctx.fail("target has shape {}, expected {} (input shape without C)", dims_str(target.dims()),
             dims_str(want));
  std::vector<double> weight;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || w.dim(0) != C)
      ctx.fail("weight must have shape [{}], got {}", C, dims_str(w.dims()));
    if (w.dtype() != input.dtype()) ctx.fail("weight must have the input's dtype");
    for (int64_t c = 0; c < C; ++c) weight.push_back(static_cast<double>(w.data<T>()[c]));
  }
  const std::vector<int64_t> tgt = ctx.input_ints(1);
  const bool has_ii = ctx.has_attr("ignore_index");
  const int64_t ii = ctx.attr_i("ignore_index", 0);
  const std::string red = ctx.attr_s("reduction", "mean");
  std::vector<double> loss(static_cast<size_t>(N * D));
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      size_t at = static_cast<size_t>(n * D + d);
      int64_t t = tgt[at];
      if (has_ii && t == ii) continue;  // loss 0, weight 0
      if (t < 0 || t >= C) ctx.fail("target value {} is out of range [0, {})", t, C);
      double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(t)];
      loss[at] = -logp[static_cast<size_t>((n * C + t) * D + d)] * w;
      loss_sum += loss[at];
      weight_sum += w;
    }
  T* o = out.data<T>();
  if (red == "none") {
    if (out.numel() != N * D) ctx.fail("loss output has {} elements, expected {}", out.numel(), N * D);
    for (size_t k = 0; k < loss.size(); ++k) o[k] = from_double<T>(loss[k]);
  } else if (red == "sum") {
    o[0] = from_double<T>(loss_sum);
  } else if (red == "mean") {
    o[0] = from_double<T>(loss_sum / weight_sum);
  } else {
    ctx.fail("'reduction' must be none, sum or mean, got '{}'", red);
  }
}

void nll_loss_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 (N, C, ...)");
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> logp(static_cast<size_t>(x.numel()));
    for (size_t k = 0; k < logp.size(); ++k) logp[k] = static_cast<double>(x.data<T>()[k]);
    nll_reduce<T>(ctx, logp, x, ctx.output(0));
  }, "NegativeLogLikelihoodLoss");
}

void sce_loss_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("scores must have rank >= 2 (N, C, ...)");
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Dims& dims = x.dims();
    AxisView v;
    v.outer = dims[0];
    v.n = dims[1];
    for (size_t k = 2; k < dims.size(); ++k)
      v.inner = checked_mul(v.inner, dims[k], "the spatial size of the scores");
    std::vector<double> xs(static_cast<size_t>(x.numel())), logp(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<double>(x.data<T>()[k]);
    if (!xs.empty()) softmax_rows<SM::kLogSoftmax, double>(xs.data(), logp.data(), v);
    nll_reduce<T>(ctx, logp, x, ctx.output(0));
    if (ctx.has_output(1)) {
      T* lp = ctx.output(1).data<T>();
      for (size_t k = 0; k < logp.size(); ++k) lp[k] = from_double<T>(logp[k]);
    }
  }, "SoftmaxCrossEntropyLoss");
}

}  // namespace

void register_reduce_softmax(Registry& r) {
  std::vector<DType> fl = float_types();
  r.add("", "Softmax", 1, 1000, fl, softmax_kernel<SM::kSoftmax>);
  r.add("", "LogSoftmax", 1, 1000, fl, softmax_kernel<SM::kLogSoftmax>);
  r.add("", "Hardmax", 1, 1000, fl, softmax_kernel<SM::kHardmax>);
  r.add("", "NegativeLogLikelihoodLoss", 12, 1000, fl, nll_loss_kernel);
  r.add("", "SoftmaxCrossEntropyLoss", 12, 1000, fl, sce_loss_kernel);
}

}  // namespace onyx::kernels
