// Reference kernels of the misc family: BitCast, NonMaxSuppression, TfIdfVectorizer and
// the training-domain optimizers Adagrad, Adam and Momentum.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/nms.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";

// ---- BitCast ----

bool is_subbyte(DType t) { return dtype_bits(t) < 8 && t != DType::kString; }

void bit_cast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const DType in = x.dtype(), out = y.dtype();
  if (dtype_bits(in) != dtype_bits(out) || in == DType::kString || out == DType::kString)
    ctx.fail("cannot bitcast {} to {}", dtype_name(in), dtype_name(out));
  if (y.numel() != x.numel()) ctx.fail("output has {} elements, input {}", y.numel(), x.numel());
  const int64_t n = x.numel();
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  if (is_subbyte(in)) {
    // Unpacked in memory: keep the low bits, then sign-extend for int4/int2.
    const int bits = dtype_bits(in);
    const auto mask = static_cast<uint8_t>((1u << bits) - 1);
    const bool sign = out == DType::kInt4 || out == DType::kInt2;
    for (int64_t k = 0; k < n; ++k) {
      uint8_t v = src[k] & mask;
      if (sign && (v >> (bits - 1))) v = static_cast<uint8_t>(v | ~mask);
      dst[k] = v;
    }
    return;
  }
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(in));
  if (out == DType::kBool)  // any nonzero byte reads as true; store the canonical 1
    for (int64_t k = 0; k < n; ++k) dst[k] = dst[k] != 0;
}

// ---- NonMaxSuppression ----

void non_max_suppression(KernelContext& ctx) {
  auto opt = [&](size_t i) -> const Tensor* { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
  const NmsParams p = nms_params(opt(2), opt(3), opt(4));
  const std::vector<NmsPick> picks =
      nms_select(ctx.input(0), ctx.input(1), p, ctx.attr_i("center_point_box", 0) == 1);
  Tensor& y = ctx.output(0);
  if (y.numel() != static_cast<int64_t>(picks.size()) * 3)
    ctx.fail("output has shape {} but {} boxes were selected", dims_str(y.dims()), picks.size());
  int64_t* yp = y.data<int64_t>();
  for (size_t k = 0; k < picks.size(); ++k)
    for (size_t j = 0; j < 3; ++j) yp[k * 3 + j] = picks[k][j];
}

// ---- TfIdfVectorizer ----

/// The n-gram pool: n-gram (as a token sequence) -> its ordinal in ngram_indexes.
template <typename Tok>
std::map<std::vector<Tok>, size_t> build_pool(const KernelContext& ctx, const std::vector<Tok>& pool,
                                              size_t num_ngrams) {
  std::vector<int64_t> starts = ctx.attr_ints("ngram_counts");
  std::map<std::vector<Tok>, size_t> m;
  size_t ordinal = 0;
  for (size_t g = 0; g < starts.size(); ++g) {
    const size_t len = g + 1;
    const int64_t b = starts[g];
    const int64_t e = g + 1 < starts.size() ? starts[g + 1] : static_cast<int64_t>(pool.size());
    if (b < 0 || e < b || e > static_cast<int64_t>(pool.size()) || (e - b) % static_cast<int64_t>(len) != 0)
      ctx.fail("'ngram_counts' entry {} ({}) does not delimit whole {}-grams in a pool of {}", g, b,
               len, pool.size());
    for (int64_t p = b; p < e; p += static_cast<int64_t>(len)) {
      std::vector<Tok> key(pool.begin() + p, pool.begin() + p + static_cast<int64_t>(len));
      m[std::move(key)] = ordinal++;
    }
  }
  if (ordinal != num_ngrams)
    ctx.fail("the pool holds {} n-grams but 'ngram_indexes' has {} entries", ordinal, num_ngrams);
  return m;
}

template <typename Tok, typename Get>
void tfidf_rows(KernelContext& ctx, const std::vector<Tok>& pool, int64_t rows, int64_t cols,
                Get&& get) {
  const std::vector<int64_t> idx = ctx.attr_ints("ngram_indexes");
  const auto m = build_pool(ctx, pool, idx.size());
  std::vector<float> w = ctx.attr_floats("weights");
  if (!w.empty() && w.size() != idx.size())
    ctx.fail("'weights' has {} entries, 'ngram_indexes' {}", w.size(), idx.size());
  const std::string mode = ctx.attr_s("mode", "TF");
  const int64_t lo = ctx.attr_i("min_gram_length", 1), hi = ctx.attr_i("max_gram_length", 1);
  const int64_t max_skip = ctx.attr_i("max_skip_count", 0);
  Tensor& y = ctx.output(0);
  const int64_t width = rows > 0 ? y.numel() / rows : 0;
  float* yp = y.data<float>();
  std::fill(yp, yp + y.numel(), 0.0f);
  std::vector<int64_t> counts(idx.size());
  std::vector<Tok> key;
  // Grams longer than a row, or skips wider than it, match nothing: the loops stop there,
  // whatever max_gram_length and max_skip_count (attributes) say.
  const int64_t hi_row = std::min(hi, cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    for (int64_t n = std::max<int64_t>(lo, 1); n <= hi_row; ++n) {
      // Unigrams do not depend on the skip; count them once.
      const int64_t skips = n == 1 ? 0 : std::min(max_skip, cols);
      for (int64_t s = 0; s <= skips; ++s) {
        const int64_t stride = s + 1;
        int64_t reach = 0;  // (n - 1) * stride: how far a gram spans past its start
        if (!mul_fits(n - 1, stride, reach) || reach >= cols) break;
        for (int64_t start = 0; start + reach < cols; ++start) {
          key.clear();
          for (int64_t j = 0; j < n; ++j) key.push_back(get(r * cols + start + j * stride));
          auto it = m.find(key);
          if (it != m.end()) ++counts[it->second];
        }
      }
    }
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= width)
        ctx.fail("'ngram_indexes' entry {} is outside the output width {}", idx[i], width);
      double v = static_cast<double>(counts[i]);
      if (mode == "IDF") v = (counts[i] > 0 ? 1.0 : 0.0) * (w.empty() ? 1.0 : w[i]);
      else if (mode == "TFIDF") v *= w.empty() ? 1.0 : w[i];
      yp[r * width + idx[i]] += static_cast<float>(v);
    }
  }
}

void tfidf_vectorizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2)
    ctx.fail("input must be 1-D or 2-D, got {}", dims_str(x.dims()));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
  if (x.dtype() == DType::kString) {
    std::vector<std::string> pool = ctx.node().attr_strings("pool_strings");
    const std::string* xp = x.data<std::string>();
    tfidf_rows<std::string>(ctx, pool, rows, cols, [&](int64_t k) { return xp[k]; });
  } else {
    std::vector<int64_t> pool = ctx.attr_ints("pool_int64s");
    if (x.dtype() == DType::kInt32) {
      const int32_t* xp = x.data<int32_t>();
      tfidf_rows<int64_t>(ctx, pool, rows, cols, [&](int64_t k) { return int64_t{xp[k]}; });
    } else {
      const int64_t* xp = x.data<int64_t>();
      tfidf_rows<int64_t>(ctx, pool, rows, cols, [&](int64_t k) { return xp[k]; });
    }
  }
}

// ---- training optimizers ----

double scalar_double(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) ctx.fail("input {} must be a scalar, got {}", i, dims_str(t.dims()));
  switch (t.dtype()) {
    case DType::kFloat: return *t.data<float>();
    case DType::kDouble: return *t.data<double>();
    case DType::kInt64: return static_cast<double>(*t.data<int64_t>());
    default: ctx.fail("input {} has unsupported type {}", i, dtype_name(t.dtype()));
  }
}

/// Element accessors for float/double tensors (optimizer states may mix both).
double get(const Tensor& t, int64_t k) {
  return t.dtype() == DType::kDouble ? t.data<double>()[k] : t.data<float>()[k];
}
void put(Tensor& t, int64_t k, double v) {
  if (t.dtype() == DType::kDouble) t.data<double>()[k] = v;
  else t.data<float>()[k] = static_cast<float>(v);
}

/// Checks the optimizer's lists: `groups` input lists of n tensors of one shape each.
size_t optimizer_count(const KernelContext& ctx, size_t groups) {
  if (ctx.num_inputs() < 2 + groups || (ctx.num_inputs() - 2) % groups != 0)
    ctx.fail("expected R, T and {} lists of equal length, got {} inputs", groups, ctx.num_inputs());
  const size_t n = (ctx.num_inputs() - 2) / groups;
  for (size_t g = 1; g < groups; ++g)
    for (size_t k = 0; k < n; ++k)
      if (ctx.input(2 + g * n + k).dims() != ctx.input(2 + k).dims())
        ctx.fail("input {} has shape {}, expected {}", 2 + g * n + k,
                 dims_str(ctx.input(2 + g * n + k).dims()), dims_str(ctx.input(2 + k).dims()));
  return n;
}

/// Output `o` when requested, else a scratch tensor shaped like `like`.
Tensor out_or_scratch(KernelContext& ctx, size_t o, const Tensor& like) {
  if (o < ctx.num_outputs() && ctx.has_output(o)) return ctx.output(o);
  return Tensor(like.dtype(), like.dims());
}

void adagrad(KernelContext& ctx) {
  const size_t n = optimizer_count(ctx, 3);
  const double R = scalar_double(ctx, 0), T = scalar_double(ctx, 1);
  const double decay = ctx.attr_f("decay_factor", 0), eps = ctx.attr_f("epsilon", 0);
  const double norm = ctx.attr_f("norm_coefficient", 0);
  const double r = R / (1 + T * decay);
  for (size_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(2 + k);
    const Tensor& G = ctx.input(2 + n + k);
    const Tensor& H = ctx.input(2 + 2 * n + k);
    Tensor Xn = out_or_scratch(ctx, k, X), Hn = out_or_scratch(ctx, n + k, H);
    for (int64_t i = 0; i < X.numel(); ++i) {
      const double g = norm * get(X, i) + get(G, i);
      const double h = get(H, i) + g * g;
      put(Hn, i, h);
      put(Xn, i, get(X, i) - r * g / (std::sqrt(h) + eps));
    }
  }
}

void adam(KernelContext& ctx) {
  const size_t n = optimizer_count(ctx, 4);
  const double R = scalar_double(ctx, 0), T = scalar_double(ctx, 1);
  const double alpha = ctx.attr_f("alpha", 0.9f), beta = ctx.attr_f("beta", 0.999f);
  const double eps = ctx.attr_f("epsilon", 0), norm = ctx.attr_f("norm_coefficient", 0);
  const double post = ctx.attr_f("norm_coefficient_post", 0);
  const double ra = T > 0 ? R * std::sqrt(1 - std::pow(beta, T)) / (1 - std::pow(alpha, T)) : R;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(2 + k);
    const Tensor& G = ctx.input(2 + n + k);
    const Tensor& V = ctx.input(2 + 2 * n + k);
    const Tensor& H = ctx.input(2 + 3 * n + k);
    Tensor Xn = out_or_scratch(ctx, k, X), Vn = out_or_scratch(ctx, n + k, V),
           Hn = out_or_scratch(ctx, 2 * n + k, H);
    for (int64_t i = 0; i < X.numel(); ++i) {
      const double g = norm * get(X, i) + get(G, i);
      const double v = alpha * get(V, i) + (1 - alpha) * g;
      const double h = beta * get(H, i) + (1 - beta) * g * g;
      const double x = get(X, i) - ra * v / (std::sqrt(h) + eps);
      put(Vn, i, v);
      put(Hn, i, h);
      put(Xn, i, (1 - post) * x);
    }
  }
}

void momentum(KernelContext& ctx) {
  const size_t n = optimizer_count(ctx, 3);
  const double R = scalar_double(ctx, 0), T = scalar_double(ctx, 1);
  const double alpha = ctx.attr_f("alpha", 0), beta = ctx.attr_f("beta", 0);
  const double norm = ctx.attr_f("norm_coefficient", 0);
  const std::string mode = ctx.attr_s("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    ctx.fail("attribute 'mode' must be \"standard\" or \"nesterov\", got \"{}\"", mode);
  const bool nesterov = mode == "nesterov";
  const double b = T > 0 ? beta : 1;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& X = ctx.input(2 + k);
    const Tensor& G = ctx.input(2 + n + k);
    const Tensor& V = ctx.input(2 + 2 * n + k);
    Tensor Xn = out_or_scratch(ctx, k, X), Vn = out_or_scratch(ctx, n + k, V);
    for (int64_t i = 0; i < X.numel(); ++i) {
      const double g = norm * get(X, i) + get(G, i);
      const double v = alpha * get(V, i) + b * g;
      put(Vn, i, v);
      put(Xn, i, get(X, i) - R * (nesterov ? g + alpha * v : v));
    }
  }
}

}  // namespace

void register_misc(Registry& r) {
  std::vector<DType> bitcastable;
  for (DType t : all_types())
    if (t != DType::kString) bitcastable.push_back(t);
  r.add("", "BitCast", 26, 1000, bitcastable, bit_cast);
  r.add("", "NonMaxSuppression", 10, 1000, {DType::kFloat}, non_max_suppression);
  r.add("", "TfIdfVectorizer", 9, 1000, {DType::kString, DType::kInt32, DType::kInt64},
        tfidf_vectorizer);
  r.add(kTraining, "Adagrad", 1, 1000, {DType::kFloat, DType::kDouble}, adagrad);
  r.add(kTraining, "Adam", 1, 1000, {DType::kFloat, DType::kDouble}, adam);
  r.add(kTraining, "Momentum", 1, 1000, {DType::kFloat, DType::kDouble}, momentum);
}

}  // namespace onyx::kernels
