// Reference kernels of the norm family: BatchNormalization, LayerNormalization,
// InstanceNormalization, GroupNormalization, LRN, LpNormalization,
// MeanVarianceNormalization, RMSNormalization. Statistics accumulate in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// A float tensor's values as doubles (parameters: scale, bias, mean, var ...).
std::vector<double> to_doubles(const Tensor& t, const char* what) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_float(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<double>(static_cast<acc_t<T>>(p[i]));
      },
      what);
  return v;
}

/// Writes doubles into a float tensor of any float dtype.
void from_doubles(Tensor& t, const std::vector<double>& v, const char* what) {
  dispatch_float(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(v.size()); ++i)
          p[i] = T(static_cast<acc_t<T>>(v[i]));
      },
      what);
}

template <typename T>
double get(const T* p, int64_t i) {
  return static_cast<double>(static_cast<acc_t<T>>(p[i]));
}

template <typename T>
void put(T* p, int64_t i, double v) {
  p[i] = T(static_cast<acc_t<T>>(v));
}

/// For a parameter unidirectionally broadcast to `x` (numpy rules, aligned to the
/// right), returns per-axis element strides of the parameter (0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const KernelContext& ctx, const Dims& x, const Dims& p, const char* what) {
  if (p.size() > x.size())
    ctx.fail("{} {} has a higher rank than X {}", what, dims_str(p), dims_str(x));
  std::vector<int64_t> st(x.size(), 0);
  int64_t s = 1;
  for (size_t i = p.size(); i-- > 0;) {
    size_t xi = i + x.size() - p.size();
    if (p[i] != 1 && p[i] != x[xi])
      ctx.fail("{} {} cannot be broadcast to X {}", what, dims_str(p), dims_str(x));
    st[xi] = p[i] == 1 ? 0 : s;
    s *= p[i];
  }
  return st;
}

/// Sum of index * stride over the sub-space dims[from, to), enumerated row-major.
std::vector<int64_t> offsets(const Dims& dims, const std::vector<int64_t>& strides, size_t from, size_t to) {
  std::vector<int64_t> out{0};
  for (size_t d = from; d < to; ++d) {
    std::vector<int64_t> next;
    next.reserve(out.size() * static_cast<size_t>(dims[d]));
    for (int64_t base : out)
      for (int64_t i = 0; i < dims[d]; ++i) next.push_back(base + i * strides[d]);
    out.swap(next);
  }
  return out;
}

/// Product of d[from, to), checked: the dims of an empty X are bounded by nothing.
int64_t product(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p = checked_mul(p, d[i], "a product of X's dims");
  return p;
}

// ---- BatchNormalization ----

template <typename T>
void batch_norm_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  if (xd.empty()) ctx.fail("X must have rank >= 1");
  const int64_t batch = xd[0], channels = xd.size() >= 2 ? xd[1] : 1;
  const int64_t inner = product(xd, 2, xd.size());
  const float eps = ctx.attr_f("epsilon", 1e-5f);
  const float momentum = ctx.attr_f("momentum", 0.9f);
  bool training;
  if (ctx.opset() >= 14) {
    training = ctx.attr_i("training_mode", 0) != 0;
  } else {
    training = false;
    for (size_t i = 1; i < ctx.num_outputs(); ++i) training = training || ctx.has_output(i);
    if (ctx.opset() < 7 && ctx.attr_i("is_test", 0) != 0) training = false;
  }
  // Before opset 9, spatial = 0 takes statistics per (channel, position).
  const bool per_element = ctx.opset() < 9 && ctx.attr_i("spatial", 1) == 0;
  const int64_t pcount =
      per_element ? checked_mul(channels, inner, "channels * spatial size") : channels;
  std::vector<double> params[4];
  const char* names[4] = {"scale", "B", "mean", "var"};
  for (size_t i = 0; i < 4; ++i) {
    params[i] = to_doubles(ctx.input(i + 1), "BatchNormalization parameters");
    if (static_cast<int64_t>(params[i].size()) != pcount)
      ctx.fail("{} (input {}) has {} values, expected {}", names[i], i + 1, params[i].size(), pcount);
  }
  if (x.numel() == 0) {
    // The loops below walk batch * channels even when a spatial extent is 0.
    if (training) ctx.fail("training-mode statistics of an empty X {} are undefined", dims_str(xd));
    return;
  }
  std::vector<double> mean = params[2], var = params[3];
  const T* xp = x.data<T>();
  if (training) {
    // Population statistics over N and the spatial axes (per element when !spatial).
    std::vector<double> sum(static_cast<size_t>(pcount), 0.0), sq(static_cast<size_t>(pcount), 0.0);
    const int64_t per_stat = per_element ? batch : batch * inner;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t s = 0; s < inner; ++s) {
          int64_t pi = per_element ? c * inner + s : c;
          sum[pi] += get(xp, (n * channels + c) * inner + s);
        }
    for (int64_t i = 0; i < pcount; ++i) mean[i] = per_stat > 0 ? sum[i] / static_cast<double>(per_stat) : 0.0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t s = 0; s < inner; ++s) {
          int64_t pi = per_element ? c * inner + s : c;
          double d = get(xp, (n * channels + c) * inner + s) - mean[pi];
          sq[pi] += d * d;
        }
    for (int64_t i = 0; i < pcount; ++i) var[i] = per_stat > 0 ? sq[i] / static_cast<double>(per_stat) : 0.0;
  }
  // y = x * mul + add per statistic.
  std::vector<double> mul(static_cast<size_t>(pcount)), add(static_cast<size_t>(pcount));
  for (int64_t i = 0; i < pcount; ++i) {
    mul[i] = params[0][i] / std::sqrt(var[i] + static_cast<double>(eps));
    add[i] = params[1][i] - mean[i] * mul[i];
  }
  T* yp = y.data<T>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < inner; ++s) {
        int64_t pi = per_element ? c * inner + s : c;
        int64_t idx = (n * channels + c) * inner + s;
        put(yp, idx, get(xp, idx) * mul[pi] + add[pi]);
      }
  if (!training) return;
  std::vector<double> run_mean(static_cast<size_t>(pcount)), run_var(static_cast<size_t>(pcount));
  for (int64_t i = 0; i < pcount; ++i) {
    run_mean[i] = params[2][i] * momentum + mean[i] * (1.0 - momentum);
    run_var[i] = params[3][i] * momentum + var[i] * (1.0 - momentum);
  }
  const std::vector<double>* outs[4] = {&run_mean, &run_var, &mean, &var};
  for (size_t i = 1; i < ctx.num_outputs() && i <= 4; ++i) {
    if (!ctx.has_output(i)) continue;
    Tensor& t = ctx.output(i);
    if (t.numel() != pcount) ctx.fail("output {} has {} values, expected {}", i, t.numel(), pcount);
    from_doubles(t, *outs[i - 1], "BatchNormalization outputs");
  }
}

void batch_norm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { batch_norm_typed<typename decltype(tag)::type>(ctx); },
                 "BatchNormalization");
}

// ---- LayerNormalization / RMSNormalization ----

/// Normalizes X over axes [axis, rank): y = (x - mean) * inv_std * scale (+ bias).
/// rms = true skips the mean (RMSNormalization). Y may have another float dtype
/// than X (RMSNormalization's V).
template <typename T, typename V>
void layer_norm_impl(KernelContext& ctx, bool rms) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  if (rank < 1) ctx.fail("X must have rank >= 1");
  int64_t axis = ctx.attr_i("axis", -1);
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  if (y.dims() != xd) ctx.fail("output {} does not match X {}", dims_str(y.dims()), dims_str(xd));
  const double eps = ctx.attr_f("epsilon", 1e-5f);
  const size_t ax = static_cast<size_t>(axis);
  if (x.numel() == 0) {
    // No element to normalize: the statistics of empty rows are NaN (0 / 0), and the
    // loops below would walk X's other, possibly huge, extents for nothing.
    for (size_t o = 1; o <= 2 && !rms; ++o)
      if (ctx.has_output(o)) {
        Tensor& t = ctx.output(o);
        from_doubles(t, std::vector<double>(static_cast<size_t>(t.numel()), std::nan("")),
                     "LayerNormalization statistics");
      }
    return;
  }
  const int64_t outer = product(xd, 0, ax), inner = product(xd, ax, xd.size());

  const Tensor& st = ctx.input(1);
  std::vector<double> scale = to_doubles(st, "normalization scale");
  std::vector<int64_t> sst = broadcast_strides(ctx, xd, st.dims(), "scale");
  std::vector<int64_t> s_outer = offsets(xd, sst, 0, ax), s_inner = offsets(xd, sst, ax, xd.size());
  std::vector<double> bias;
  std::vector<int64_t> b_outer, b_inner;
  if (!rms && ctx.has_input(2)) {
    const Tensor& bt = ctx.input(2);
    bias = to_doubles(bt, "normalization bias");
    std::vector<int64_t> bst = broadcast_strides(ctx, xd, bt.dims(), "B");
    b_outer = offsets(xd, bst, 0, ax);
    b_inner = offsets(xd, bst, ax, xd.size());
  }
  std::vector<double> means(static_cast<size_t>(outer)), invs(static_cast<size_t>(outer));
  const T* xp = x.data<T>();
  V* yp = y.data<V>();
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * inner;
    double mean = 0;
    if (!rms) {
      for (int64_t i = 0; i < inner; ++i) mean += get(xp, base + i);
      mean /= static_cast<double>(inner);
    }
    double var = 0;
    for (int64_t i = 0; i < inner; ++i) {
      double d = get(xp, base + i) - mean;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + eps);
    means[o] = mean;
    invs[o] = inv;
    for (int64_t i = 0; i < inner; ++i) {
      double v = (get(xp, base + i) - mean) * inv * scale[s_outer[o] + s_inner[i]];
      if (!bias.empty()) v += bias[b_outer[o] + b_inner[i]];
      put(yp, base + i, v);
    }
  }
  if (rms) return;
  if (ctx.has_output(1)) from_doubles(ctx.output(1), means, "LayerNormalization Mean");
  if (ctx.has_output(2)) from_doubles(ctx.output(2), invs, "LayerNormalization InvStdDev");
}

void layer_norm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_impl<T, T>(ctx, false);
  }, "LayerNormalization");
}

void rms_norm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tx) {
    dispatch_float(ctx.output(0).dtype(), [&](auto ty) {
      layer_norm_impl<typename decltype(tx)::type, typename decltype(ty)::type>(ctx, true);
    }, "RMSNormalization");
  }, "RMSNormalization");
}

// ---- InstanceNormalization / GroupNormalization ----

/// Normalizes each (n, group) block of X [N, C, D...] (channels_per_group channels
/// times the spatial size), then applies per-channel (or per-group) scale and bias.
template <typename T>
void group_norm_impl(KernelContext& ctx, int64_t groups, bool params_per_group) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  if (xd.size() < 2) ctx.fail("X must have rank >= 2 (N, C, D...), got {}", dims_str(xd));
  if (y.dims() != xd) ctx.fail("output {} does not match X {}", dims_str(y.dims()), dims_str(xd));
  const int64_t batch = xd[0], channels = xd[1], inner = product(xd, 2, xd.size());
  if (x.numel() == 0) return;  // y is empty too
  if (groups < 1 || channels % groups != 0)
    ctx.fail("channels {} are not divisible by the number of groups {}", channels, groups);
  const int64_t cpg = channels / groups;
  std::vector<double> scale = to_doubles(ctx.input(1), "normalization scale");
  std::vector<double> bias = to_doubles(ctx.input(2), "normalization bias");
  const int64_t pcount = params_per_group ? groups : channels;
  if (static_cast<int64_t>(scale.size()) != pcount || static_cast<int64_t>(bias.size()) != pcount)
    ctx.fail("scale and bias need {} values each, got {} and {}", pcount, scale.size(), bias.size());
  const double eps = ctx.attr_f("epsilon", 1e-5f);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const int64_t block = cpg * inner;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (n * channels + g * cpg) * inner;
      double mean = 0;
      for (int64_t i = 0; i < block; ++i) mean += get(xp, base + i);
      mean /= static_cast<double>(block);
      double var = 0;
      for (int64_t i = 0; i < block; ++i) {
        double d = get(xp, base + i) - mean;
        var += d * d;
      }
      var /= static_cast<double>(block);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t c = 0; c < cpg; ++c) {
        const int64_t pi = params_per_group ? g : g * cpg + c;
        for (int64_t s = 0; s < inner; ++s) {
          const int64_t idx = base + c * inner + s;
          put(yp, idx, (get(xp, idx) - mean) * inv * scale[pi] + bias[pi]);
        }
      }
    }
}

void instance_norm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, D...), got {}", dims_str(x.dims()));
    group_norm_impl<typename decltype(tag)::type>(ctx, x.dim(1), false);
  }, "InstanceNormalization");
}

void group_norm_kernel(KernelContext& ctx) {
  if (!ctx.has_attr("num_groups")) ctx.fail("attribute num_groups is required");
  const int64_t groups = ctx.attr_i("num_groups", 1);
  // Opset 18 takes scale and bias per group; opset 21 per channel.
  const bool per_group = ctx.opset() < 21;
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) {
    group_norm_impl<typename decltype(tag)::type>(ctx, groups, per_group);
  }, "GroupNormalization");
}

// ---- LRN ----

template <typename T>
void lrn_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  if (xd.size() < 2) ctx.fail("X must have rank >= 2 (N, C, D...), got {}", dims_str(xd));
  if (!ctx.has_attr("size")) ctx.fail("attribute size is required");
  const int64_t size = ctx.attr_i("size", 1);
  if (size < 1) ctx.fail("size must be >= 1, got {}", size);
  const double alpha = ctx.attr_f("alpha", 1e-4f), beta = ctx.attr_f("beta", 0.75f), bias = ctx.attr_f("bias", 1.0f);
  const int64_t batch = xd[0], channels = xd[1], inner = product(xd, 2, xd.size());
  if (x.numel() == 0) return;                             // y is empty too
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // channels before / after c
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t c0 = std::max<int64_t>(0, c - lo), c1 = std::min(channels - 1, c + hi);
      for (int64_t s = 0; s < inner; ++s) {
        double sq = 0;
        for (int64_t k = c0; k <= c1; ++k) {
          double v = get(xp, (n * channels + k) * inner + s);
          sq += v * v;
        }
        const int64_t idx = (n * channels + c) * inner + s;
        put(yp, idx, get(xp, idx) / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
    }
}

void lrn_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { lrn_typed<typename decltype(tag)::type>(ctx); }, "LRN");
}

// ---- LpNormalization ----

template <typename T>
void lp_norm_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  if (rank < 1) ctx.fail("X must have rank >= 1");
  int64_t axis = ctx.attr_i("axis", -1);
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const int64_t p = ctx.attr_i("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got {}", p);
  if (x.numel() == 0) return;  // y is empty too
  const size_t ax = static_cast<size_t>(axis);
  const int64_t outer = product(xd, 0, ax), len = xd[ax], inner = product(xd, ax + 1, xd.size());
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      double norm = 0;
      for (int64_t k = 0; k < len; ++k) {
        double v = get(xp, base + k * inner);
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      // A zero vector stays zero instead of becoming 0/0.
      for (int64_t k = 0; k < len; ++k)
        put(yp, base + k * inner, norm == 0 ? 0.0 : get(xp, base + k * inner) / norm);
    }
}

void lp_norm_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { lp_norm_typed<typename decltype(tag)::type>(ctx); },
                 "LpNormalization");
}

// ---- MeanVarianceNormalization ----

template <typename T>
void mvn_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  std::vector<bool> reduced(xd.size(), false);
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank) ctx.fail("axis {} is out of range for rank {}", a, rank);
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  if (x.numel() == 0) return;  // y is empty too; the kept extents may be huge
  // Statistics index of every element: its coordinates on the kept axes, flattened.
  std::vector<int64_t> kst(xd.size(), 0);
  int64_t kept = 1;
  for (size_t d = xd.size(); d-- > 0;)
    if (!reduced[d]) {
      kst[d] = kept;
      kept *= xd[d];
    }
  std::vector<int64_t> stat_of = offsets(xd, kst, 0, xd.size());
  std::vector<double> sum(static_cast<size_t>(kept), 0.0), sq(static_cast<size_t>(kept), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(kept), 0);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const int64_t total = x.numel();
  for (int64_t i = 0; i < total; ++i) {
    sum[stat_of[i]] += get(xp, i);
    ++count[stat_of[i]];
  }
  for (int64_t k = 0; k < kept; ++k) sum[k] = count[k] ? sum[k] / static_cast<double>(count[k]) : 0.0;
  for (int64_t i = 0; i < total; ++i) {
    double d = get(xp, i) - sum[stat_of[i]];
    sq[stat_of[i]] += d * d;
  }
  for (int64_t k = 0; k < kept; ++k)
    sq[k] = std::sqrt(count[k] ? sq[k] / static_cast<double>(count[k]) : 0.0) + 1e-9;
  for (int64_t i = 0; i < total; ++i) put(yp, i, (get(xp, i) - sum[stat_of[i]]) / sq[stat_of[i]]);
}

void mvn_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { mvn_typed<typename decltype(tag)::type>(ctx); },
                 "MeanVarianceNormalization");
}

}  // namespace

void register_norm(Registry& r) {
  r.add("", "BatchNormalization", 1, 1000, float_types(), batch_norm_kernel);
  r.add("", "LayerNormalization", 17, 1000, float_types(), layer_norm_kernel);
  r.add("", "InstanceNormalization", 1, 1000, float_types(), instance_norm_kernel);
  r.add("", "GroupNormalization", 18, 1000, float_types(), group_norm_kernel);
  r.add("", "LRN", 1, 1000, float_types(), lrn_kernel);
  r.add("", "LpNormalization", 1, 1000, float_types(), lp_norm_kernel);
  r.add("", "MeanVarianceNormalization", 9, 1000, float_types(), mvn_kernel);
  r.add("", "RMSNormalization", 23, 1000, float_types(), rms_norm_kernel);
}

}  // namespace onyx::kernels
