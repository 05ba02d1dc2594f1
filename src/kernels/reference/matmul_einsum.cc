// Reference kernel of Einsum (matmul family). Any equation: ellipsis, repeated labels
// (diagonals), implicit output, size-1 broadcasting. Two-operand contractions without
// diagonals run as a batched float GEMM; everything else as a direct sum.
#include <algorithm>
#include <map>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void matmul_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float* C, int64_t ldc);

namespace {

constexpr int kEllipsisBase = 52;  ///< ids 0..51 are letters; ellipsis dims follow

int letter_id(char c) { return c >= 'a' ? c - 'a' : 26 + (c - 'A'); }

struct Term {
  std::vector<int> letters;  ///< letter ids in order
  int ellipsis_at = -1;      ///< position of "..." among the letters, or -1
};

Term parse_term(const KernelContext& ctx, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0)
        ctx.fail("malformed ellipsis in equation term '{}'", s);
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 3;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters.push_back(letter_id(c));
      ++i;
    } else {
      ctx.fail("invalid character '{}' in equation term '{}'", c, s);
    }
  }
  return t;
}

/// Labels of every axis of each operand and of the output, with their sizes.
struct Contraction {
  std::vector<std::vector<int>> in_ids;  ///< per operand, per axis
  std::vector<int> out_ids;
  std::vector<int64_t> size;  ///< per id
};

Contraction analyze(const KernelContext& ctx) {
  std::string eq;
  for (char c : ctx.attr_s("equation", ""))
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const size_t n = ctx.num_inputs();
  if (terms.size() != n)
    ctx.fail("equation '{}' has {} operand terms but the node has {} inputs", eq, terms.size(), n);

  Contraction c;
  int ell_rank = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t r = static_cast<int64_t>(ctx.input(i).rank());
    const int64_t nl = static_cast<int64_t>(terms[i].letters.size());
    if (terms[i].ellipsis_at < 0 ? r != nl : r < nl)
      ctx.fail("input {} has rank {} but its term has {} labels{}", i, r, nl,
               terms[i].ellipsis_at < 0 ? "" : " plus an ellipsis");
    ell_rank = std::max(ell_rank, static_cast<int>(r - nl));
  }
  c.size.assign(static_cast<size_t>(kEllipsisBase + ell_rank), -1);
  std::vector<int> count(static_cast<size_t>(kEllipsisBase), 0);
  for (size_t i = 0; i < n; ++i) {
    const Term& t = terms[i];
    const Dims& d = ctx.input(i).dims();
    const int ne = static_cast<int>(d.size() - t.letters.size());
    std::vector<int>& ids = c.in_ids.emplace_back();
    for (size_t k = 0; k <= t.letters.size(); ++k) {
      if (static_cast<int>(k) == t.ellipsis_at)
        for (int j = 0; j < ne; ++j) ids.push_back(kEllipsisBase + ell_rank - ne + j);
      if (k < t.letters.size()) {
        ids.push_back(t.letters[k]);
        ++count[static_cast<size_t>(t.letters[k])];
      }
    }
    for (size_t a = 0; a < ids.size(); ++a) {
      int64_t& s = c.size[static_cast<size_t>(ids[a])];
      if (s == -1 || s == 1) s = d[a];
      else if (d[a] != 1 && d[a] != s)
        ctx.fail("label sizes do not match: {} vs {} in input {} ({})", s, d[a], i, dims_str(d));
    }
    // A label repeated within one operand is a diagonal: no broadcasting there.
    for (size_t a = 0; a < ids.size(); ++a)
      for (size_t b = a + 1; b < ids.size(); ++b)
        if (ids[a] == ids[b] && d[a] != d[b])
          ctx.fail("repeated label in input {} spans axes of sizes {} and {}", i, d[a], d[b]);
  }
  if (arrow != std::string::npos) {
    Term o = parse_term(ctx, eq.substr(arrow + 2));
    for (size_t k = 0; k <= o.letters.size(); ++k) {
      if (static_cast<int>(k) == o.ellipsis_at)
        for (int j = 0; j < ell_rank; ++j) c.out_ids.push_back(kEllipsisBase + j);
      if (k == o.letters.size()) break;
      int id = o.letters[k];
      if (count[static_cast<size_t>(id)] == 0) ctx.fail("an output label is not in any input");
      if (std::find(c.out_ids.begin(), c.out_ids.end(), id) != c.out_ids.end())
        ctx.fail("an output label appears twice");
      c.out_ids.push_back(id);
    }
    if (o.ellipsis_at < 0 && ell_rank > 0)
      ctx.fail("the inputs have ellipsis dimensions but the output term has no '...'");
  } else {
    for (int j = 0; j < ell_rank; ++j) c.out_ids.push_back(kEllipsisBase + j);
    // ASCII order: upper-case letters (ids 26..51) before lower-case (0..25).
    for (int id = 26; id < 52; ++id)
      if (count[static_cast<size_t>(id)] == 1) c.out_ids.push_back(id);
    for (int id = 0; id < 26; ++id)
      if (count[static_cast<size_t>(id)] == 1) c.out_ids.push_back(id);
  }
  return c;
}

/// Strides of operand `i` per id (summed over repeated axes; 0 where absent or
/// broadcast from size 1).
std::vector<int64_t> id_strides(const Contraction& c, const Dims& d, size_t i) {
  std::vector<int64_t> st(c.size.size(), 0);
  int64_t s = 1;
  const std::vector<int>& ids = c.in_ids[i];
  for (size_t a = ids.size(); a-- > 0;) {
    if (d[a] != 1 || c.size[static_cast<size_t>(ids[a])] == 1) st[static_cast<size_t>(ids[a])] += s;
    if (!mul_fits(s, d[a], s))
      s = 0;  // only an empty operand's strides pass int64; it is never read
  }
  return st;
}

/// Walks the index space of `ids` (row-major, last fastest), calling
/// f(step, offsets) where offsets[i] is the running offset into stream i.
template <typename F>
void walk(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const size_t r = sizes.size(), ns = strides.size();
  // The whole index space (output and contracted labels): a product no tensor bounds.
  if (std::find(sizes.begin(), sizes.end(), int64_t{0}) != sizes.end()) return;
  int64_t total = 1;
  for (int64_t s : sizes)
    total = checked_mul(total, s, "the Einsum index space (the product of every label's extent)");
  std::vector<int64_t> idx(r, 0), off(ns, 0);
  CancelPoll poll;
  for (int64_t step = 0; step < total; ++step) {
    poll(static_cast<int64_t>(ns));
    f(step, off);
    for (size_t a = r; a-- > 0;) {
      for (size_t i = 0; i < ns; ++i) off[i] += strides[i][a];
      if (++idx[a] < sizes[a]) break;
      for (size_t i = 0; i < ns; ++i) off[i] -= strides[i][a] * sizes[a];
      idx[a] = 0;
    }
  }
}

template <typename T>
using wide_t = std::conditional_t<std::is_integral_v<T>,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

template <typename T>
T narrow(wide_t<T> v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

/// The direct sum: every output element sums the product of the operands over all
/// contracted labels.
template <typename T>
void einsum_direct(const KernelContext& ctx, const Contraction& c, Tensor& y) {
  using W = wide_t<T>;
  const size_t n = c.in_ids.size();
  std::vector<int> order = c.out_ids;
  const size_t n_out = order.size();
  for (const std::vector<int>& ids : c.in_ids)
    for (int id : ids)
      if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  std::vector<int64_t> sizes;
  for (int id : order) sizes.push_back(c.size[static_cast<size_t>(id)]);
  std::vector<std::vector<int64_t>> strides(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> st = id_strides(c, ctx.input(i).dims(), i);
    for (int id : order) strides[i].push_back(st[static_cast<size_t>(id)]);
  }
  int64_t inner = 1;  // contracted elements per output element
  for (size_t k = n_out; k < sizes.size(); ++k) {
    if (sizes[k] == 0) {
      inner = 0;
      break;
    }
    inner = checked_mul(inner, sizes[k], "the contracted extent of an Einsum");
  }
  std::vector<const T*> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = ctx.input(i).data<T>();
  T* yd = y.data<T>();
  if (inner == 0) {
    for (int64_t k = 0; k < y.numel(); ++k) yd[k] = narrow<T>(W(0));
    return;
  }
  W acc = 0;
  walk(sizes, strides, [&](int64_t step, const std::vector<int64_t>& off) {
    W p = static_cast<W>(src[0][off[0]]);
    for (size_t i = 1; i < n; ++i) {
      W v = static_cast<W>(src[i][off[i]]);
      if constexpr (std::is_integral_v<W>) p = static_cast<W>(static_cast<uint64_t>(p) * static_cast<uint64_t>(v));
      else p *= v;
    }
    if constexpr (std::is_integral_v<W>) acc = static_cast<W>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(p));
    else acc += p;
    if ((step + 1) % inner == 0) {
      yd[step / inner] = narrow<T>(acc);
      acc = 0;
    }
  });
}

/// Copies the elements of a strided view (sizes/strides per walked axis) into `dst`
/// contiguously, converting to float.
template <typename T>
void gather_f32(const T* src, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                float* dst) {
  walk(sizes, {strides}, [&](int64_t step, const std::vector<int64_t>& off) {
    dst[step] = static_cast<float>(src[off[0]]);
  });
}

/// Two operands, no diagonals, no size-1 broadcasting of a label: permute to
/// [batch, M, K] x [batch, K, N] and run a float GEMM per batch. Returns false when
/// the contraction does not have that form.
template <typename T>
bool einsum_gemm(const KernelContext& ctx, const Contraction& c, Tensor& y) {
  if (c.in_ids.size() != 2) return false;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const std::vector<int>& ia = c.in_ids[0];
  const std::vector<int>& ib = c.in_ids[1];
  auto has = [](const std::vector<int>& v, int id) { return std::find(v.begin(), v.end(), id) != v.end(); };
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<int>& ids = c.in_ids[i];
    const Dims& d = ctx.input(i).dims();
    for (size_t k = 0; k < ids.size(); ++k) {
      if (d[k] != c.size[static_cast<size_t>(ids[k])]) return false;
      for (size_t j = k + 1; j < ids.size(); ++j)
        if (ids[j] == ids[k]) return false;
    }
  }
  std::vector<int> batch, m, n, k;
  for (int id : ia) {
    bool in_b = has(ib, id), in_o = has(c.out_ids, id);
    if (in_b && in_o) batch.push_back(id);
    else if (in_o) m.push_back(id);
    else if (in_b) k.push_back(id);
    else return false;  // summed over A alone
  }
  for (int id : ib)
    if (!has(ia, id)) {
      if (!has(c.out_ids, id)) return false;
      n.push_back(id);
    }
  auto extent = [&](const std::vector<int>& ids) {
    int64_t e = 1;
    for (int id : ids) e *= c.size[static_cast<size_t>(id)];
    return e;
  };
  const int64_t NB = extent(batch), M = extent(m), N = extent(n), K = extent(k);
  if (NB * M * N == 0) return false;
  auto view = [&](const std::vector<int64_t>& st, std::initializer_list<const std::vector<int>*> groups,
                  std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
    for (const std::vector<int>* g : groups)
      for (int id : *g) {
        sizes.push_back(c.size[static_cast<size_t>(id)]);
        strides.push_back(st[static_cast<size_t>(id)]);
      }
  };
  std::vector<float> ab(static_cast<size_t>(NB * M * K)), bb(static_cast<size_t>(NB * K * N)),
      yb(static_cast<size_t>(NB * M * N));
  {
    std::vector<int64_t> sizes, strides;
    view(id_strides(c, a.dims(), 0), {&batch, &m, &k}, sizes, strides);
    gather_f32(a.data<T>(), sizes, strides, ab.data());
  }
  {
    std::vector<int64_t> sizes, strides;
    view(id_strides(c, b.dims(), 1), {&batch, &k, &n}, sizes, strides);
    gather_f32(b.data<T>(), sizes, strides, bb.data());
  }
  for (int64_t t = 0; t < NB; ++t)
    matmul_gemm_f32(M, N, K, ab.data() + t * M * K, K, bb.data() + t * K * N, N, yb.data() + t * M * N, N);
  // yb is [batch, m, n]; walk the output order with yb's strides per id.
  std::vector<int64_t> yst(c.size.size(), 0);
  int64_t s = 1;
  for (const std::vector<int>* g : {&n, &m, &batch})
    for (size_t q = g->size(); q-- > 0;) {
      yst[static_cast<size_t>((*g)[q])] = s;
      s *= c.size[static_cast<size_t>((*g)[q])];
    }
  std::vector<int64_t> sizes, strides;
  for (int id : c.out_ids) {
    sizes.push_back(c.size[static_cast<size_t>(id)]);
    strides.push_back(yst[static_cast<size_t>(id)]);
  }
  T* yd = y.data<T>();
  walk(sizes, {strides}, [&](int64_t step, const std::vector<int64_t>& off) {
    yd[step] = T(yb[static_cast<size_t>(off[0])]);
  });
  return true;
}

void einsum_kernel(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("Einsum needs at least one input");
  const DType dt = ctx.input(0).dtype();
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input(i).dtype() != dt) ctx.fail("all inputs must have one dtype");
  Contraction c = analyze(ctx);
  Tensor& y = ctx.output(0);
  Dims want;
  for (int id : c.out_ids) want.push_back(c.size[static_cast<size_t>(id)]);
  if (y.dims() != want) ctx.fail("output has shape {}, expected {}", dims_str(y.dims()), dims_str(want));
  dispatch_numeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      if (einsum_gemm<T>(ctx, c, y)) return;
    }
    einsum_direct<T>(ctx, c, y);
  }, "Einsum");
}

}  // namespace

void register_matmul_einsum(Registry& r) {
  r.add("", "Einsum", 12, 1000, numeric_types(), einsum_kernel);
}

}  // namespace onyx::kernels
