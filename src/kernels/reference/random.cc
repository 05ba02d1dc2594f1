// Reference kernels of the random family: RandomNormal, RandomUniform, their *Like forms,
// Bernoulli and Multinomial.
//
// The generator is xoshiro256** seeded through splitmix64, with uniforms and normals
// (Box-Muller) derived here rather than by <random>'s distributions, whose output
// differs between standard libraries: a given seed gives the same values natively and
// in WASM. With a 'seed' attribute every run of the node draws the same values; without
// one, every run draws fresh ones.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t r = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; the second value of each pair is kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586476925 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

/// The node's generator: from the 'seed' attribute (its float bits) when set, else
/// from the system's entropy mixed with a process-wide counter.
Rng make_rng(const KernelContext& ctx) {
  if (ctx.has_attr("seed")) {
    const float f = ctx.attr_f("seed", 0);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return Rng(0x6f6e7978ull << 32 | bits);  // "onyx" in the high word
  }
  static std::atomic<uint64_t> counter{0};
  uint64_t s = counter.fetch_add(1, std::memory_order_relaxed);
  try {
    std::random_device rd;
    s ^= (static_cast<uint64_t>(rd()) << 32) ^ rd();
  } catch (...) {
    // no entropy source: the clock still varies between runs
  }
  s ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return Rng(s);
}

/// Fills a float tensor (any float dtype) with gen() values.
template <typename Gen>
void fill_float(KernelContext& ctx, Tensor& y, Gen&& gen) {
  dispatch_float(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = y.data<T>();
    for (int64_t k = 0; k < y.numel(); ++k) {
      const double v = gen();
      if constexpr (std::is_same_v<T, double>) p[k] = v;
      else p[k] = T(static_cast<float>(v));
    }
  }, "random output");
}

void random_normal(KernelContext& ctx) {
  Rng rng = make_rng(ctx);
  const double mean = ctx.attr_f("mean", 0), scale = ctx.attr_f("scale", 1);
  fill_float(ctx, ctx.output(0), [&] { return mean + scale * rng.normal(); });
}

void random_uniform(KernelContext& ctx) {
  Rng rng = make_rng(ctx);
  const double lo = ctx.attr_f("low", 0), hi = ctx.attr_f("high", 1);
  if (!(lo <= hi)) ctx.fail("attribute 'low' ({}) must not exceed 'high' ({})", lo, hi);
  fill_float(ctx, ctx.output(0), [&] { return lo + (hi - lo) * rng.uniform(); });
}

/// Reads a float tensor (any float dtype) as doubles.
std::vector<double> read_float(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(static_cast<acc_t<T>>(p[k]));
  }, "random input");
  return v;
}

void bernoulli(KernelContext& ctx) {
  const std::vector<double> p = read_float(ctx.input(0));
  Tensor& y = ctx.output(0);
  if (y.numel() != static_cast<int64_t>(p.size()))
    ctx.fail("output has {} elements, input {}", y.numel(), p.size());
  Rng rng = make_rng(ctx);
  std::vector<uint8_t> bits(p.size());
  for (size_t k = 0; k < p.size(); ++k) bits[k] = rng.uniform() < p[k] ? 1 : 0;
  if (y.dtype() == DType::kBool) {
    std::memcpy(y.raw(), bits.data(), bits.size());
    return;
  }
  dispatch_numeric(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (size_t k = 0; k < bits.size(); ++k) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
        out[k] = T(static_cast<float>(bits[k]));
      else
        out[k] = static_cast<T>(bits[k]);
    }
  }, "Bernoulli output");
}

void multinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D [batch_size, class_size], got {}", dims_str(x.dims()));
  const std::vector<double> logits = read_float(x);
  const int64_t batch = x.dim(0), classes = x.dim(1);
  Tensor& y = ctx.output(0);
  const int64_t n = ctx.attr_i("sample_size", 1);
  if (y.rank() != 2 || y.dim(0) != batch || y.dim(1) != n)
    ctx.fail("output shape {} should be [{}, {}]", dims_str(y.dims()), batch, n);
  if (classes == 0 && batch > 0 && n > 0) ctx.fail("cannot sample from zero classes");
  if (y.numel() == 0) return;  // (an empty X may claim any number of classes)
  Rng rng = make_rng(ctx);
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits.data() + b * classes;
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, row[c]);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      // unnormalized log-probabilities; -inf (or NaN) classes get probability 0
      const double w = std::isnan(row[c]) || std::isinf(mx) ? (row[c] == mx ? 1.0 : 0.0)
                                                            : std::exp(row[c] - mx);
      total += w;
      cdf[static_cast<size_t>(c)] = total;
    }
    for (int64_t s = 0; s < n; ++s) {
      const double u = rng.uniform() * total;
      int64_t c = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      if (c >= classes) {  // u rounded up to total: take the last class with weight
        c = classes - 1;
        while (c > 0 && cdf[static_cast<size_t>(c)] == cdf[static_cast<size_t>(c - 1)]) --c;
      }
      if (y.dtype() == DType::kInt64) y.data<int64_t>()[b * n + s] = c;
      else y.data<int32_t>()[b * n + s] = static_cast<int32_t>(c);
    }
  }
}

}  // namespace

void register_random(Registry& r) {
  r.add("", "RandomNormal", 1, 1000, {}, random_normal, -1);
  r.add("", "RandomUniform", 1, 1000, {}, random_uniform, -1);
  r.add("", "RandomNormalLike", 1, 1000, {}, random_normal);
  r.add("", "RandomUniformLike", 1, 1000, {}, random_uniform);
  r.add("", "Bernoulli", 15, 1000, float_types(), bernoulli);
  r.add("", "Multinomial", 7, 1000, float_types(), multinomial);
}

}  // namespace onyx::kernels
