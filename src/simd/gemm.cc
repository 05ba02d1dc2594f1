// Float SGEMM microkernels (see gemm.h). This file is compiled once per SIMD target
// through Highway's foreach_target.h; the code after HWY_ONCE is target-independent.
//
// Layout: op(B) is packed into panels of NR = 2 vectors of columns, [panel][K][NR], or read
// in place (row-major, not transposed) when only a few rows of A make packing not pay.
// A row-major op(A) is read in place, one row stream per row of the tile; a transposed
// op(A) is packed into [KC][MR] strips (rows past M zero).
//
// Tiles: an R x (P * NR) tile keeps its 2 * R * P accumulators in registers. The blocked
// path (M >= MR) runs MR x NR tiles: MR = 8 with 512-bit vectors (32 registers), 6 with
// 256-bit, 4 with 128-bit ones. Fewer rows (M < MR: GEMV and small batches) take the
// whole depth in one pass with as many panels per tile as the registers allow (4 for one
// row), A read where it lies. Blocking: KC ~256 of depth (an MR x KC strip of A and a
// KC x NR panel stay in L1), MC = 16 MR rows per block (in L2).
//
// The epilogue (row/column biases, a residual, an activation) is applied on the last depth
// pass of a tile, to the accumulators before they are stored; the transcendental
// activations run on the tile's rows right after the store, while they are in L1.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "simd/math-inl.h"

#ifndef ONYX_SIMD_GEMM_ARGS
#define ONYX_SIMD_GEMM_ARGS
#include "simd/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/cancel.h"

#include "onyx/error.h"
#include "runtime/thread_pool.h"

namespace onyx::simd {
/// One GEMM: op(B) packed into panels, or row-major in place.
struct GemmArgs {
  bool trans_a;
  int64_t M, N, K;
  float alpha, beta;
  const float* A;
  int64_t lda;
  const float* B;  ///< packed panels [ceil(N / NR)][K][NR], or (!b_packed) B as given
  int64_t ldb;     ///< row stride of B in place
  bool b_packed;
  bool trans_b;  ///< B in place is N x K (op(B) = B^T)
  float* C;
  int64_t ldc;
  Epilogue ep;
  bool has_epilogue;  ///< ep adds or activates anything
  bool pack_a;        ///< pack op(A) into strips (always when transposed)
  /// op(A) packed once for every task of a call (PackAAll), or null: each row block is
  /// packed by the task that multiplies it.
  const float* a_packed = nullptr;
};
// Depth of one pass at most. Each pass past the first reads and writes C again, which
// costs more (measured on Zen 3: 87% of peak with 256 at K = 1024, 94% with one pass)
// than streaming a panel of B deeper than L1 from L2.
constexpr int64_t kKC = 2048;
using FloatVec = std::vector<float, AlignedAllocator<float>>;

/// The depth of each pass: K split into passes of at most about kKC, evenly (no thin last pass).
inline int64_t depth_block(int64_t K) {
  const int64_t passes = (K + kKC - 1) / kKC;
  return (K + passes - 1) / passes;
}

inline bool heavy_activation(Activation a) {
  return a == Activation::kSigmoid || a == Activation::kTanh || a == Activation::kSiLU ||
         a == Activation::kGelu || a == Activation::kGeluTanh;
}
}  // namespace onyx::simd
#endif

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

#if HWY_MAX_BYTES >= 64
constexpr size_t kMR = 8;
constexpr size_t kAccBudget = 24;  // accumulators a tile may hold (32 registers)
#elif HWY_MAX_BYTES >= 32
constexpr size_t kMR = 6;
constexpr size_t kAccBudget = 12;  // 16 registers: 12 accumulators, 2 of B, 1 of A
#else
constexpr size_t kMR = 4;
constexpr size_t kAccBudget = 8;
#endif
constexpr int64_t kMC = static_cast<int64_t>(kMR) * 8;  // rows of op(A) per block
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
// The block of B a column chunk keeps in L2 across the row blocks (floats; 256 KiB).
constexpr int64_t kL2BlockFloats = 256 * 256;

/// Panels per tile for R rows: as many as the accumulator budget holds, 1 to 4.
template <size_t R>
constexpr size_t panels_for() {
  constexpr size_t p = kAccBudget / (2 * R);
  return p < 1 ? 1 : (p > 4 ? 4 : p);
}

// ---- activations ----------------------------------------------------------------------

/// The activations cheap enough to apply to the accumulators before the store.
HWY_INLINE VF LightActivation(DF d, const Epilogue& ep, VF v) {
  switch (ep.act) {
    case Activation::kRelu:
      return hn::Max(v, hn::Zero(d));
    case Activation::kClip:
      return hn::Min(hn::Max(v, hn::Set(d, ep.p0)), hn::Set(d, ep.p1));
    case Activation::kLeakyRelu:
      return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(v, hn::Set(d, ep.p0)), v);
    case Activation::kHardSigmoid:
      return hn::Min(hn::Max(hn::MulAdd(v, hn::Set(d, ep.p0), hn::Set(d, ep.p1)), hn::Zero(d)),
                     hn::Set(d, 1.0f));
    case Activation::kHardSwish:
      return hn::Mul(
          v, hn::Min(hn::Max(hn::MulAdd(v, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f)), hn::Zero(d)),
                     hn::Set(d, 1.0f)));
    default:
      return v;
  }
}

/// x[0, n) = f(x): full vectors, then the tail through a padded buffer.
template <class F>
HWY_INLINE void ActivateLoop(float* HWY_RESTRICT x, size_t n, const F& f) {
  const DF d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i)), d, x + i);
  if (i < n) {
    HWY_ALIGN float tmp[kMaxLanes] = {};
    std::copy(x + i, x + n, tmp);
    hn::Store(f(hn::Load(d, tmp)), d, tmp);
    std::copy(tmp, tmp + (n - i), x + i);
  }
}

/// x[0, n) = act(x) for the exp/tanh/erf activations: math-inl.h's functions (within a few
/// ulp, as the convolution epilogues and the elementwise kernels compute them), one loop
/// per activation (the switch outside the loop).
HWY_NOINLINE void ActivateRow(const Epilogue& ep, float* HWY_RESTRICT x, size_t n) {
  const DF d;
  switch (ep.act) {
    case Activation::kSigmoid:
      return ActivateLoop(x, n, [&](VF v) { return SigmoidF(d, v); });
    case Activation::kTanh:
      return ActivateLoop(x, n, [&](VF v) { return TanhF(d, v); });
    case Activation::kSiLU:
      return ActivateLoop(x, n, [&](VF v) { return SigmoidMulF(d, v, v); });
    case Activation::kGelu:
      return ActivateLoop(x, n, [&](VF v) { return GeluF(d, v); });
    case Activation::kGeluTanh:
      return ActivateLoop(x, n, [&](VF v) { return GeluTanhF(d, v); });
    default:
      return ActivateLoop(x, n, [&](VF v) { return LightActivation(d, ep, v); });
  }
}

void ActivationInplace(const Epilogue& ep, float* x, int64_t n) {
  if (n > 0) ActivateRow(ep, x, static_cast<size_t>(n));
}

// ---- tiles ----------------------------------------------------------------------------

/// Where a tile's results go and which depth pass this is.
struct TilePos {
  float* c;          ///< C(i0, j0)
  int64_t i0, j0;    ///< the tile's first row and column in C (for the epilogue operands)
  size_t mr, nr;     ///< rows and columns to store (the rest is padding)
  bool first, last;  ///< first depth pass (beta applies), last one (the epilogue applies)
};

/// n (< a vector) floats from p into a vector, zeros after.
HWY_INLINE VF LoadPartial(DF d, const float* p, size_t n) {
  HWY_ALIGN float tmp[kMaxLanes] = {};
  std::copy(p, p + n, tmp);
  return hn::Load(d, tmp);
}

/// alpha * acc plus what C contributes on this pass: nothing (first pass, beta 0),
/// beta * C (first pass), or C (the partial sums of the earlier passes).
HWY_INLINE VF Combine(DF d, const TilePos& t, float beta, VF va, VF acc, VF c_old) {
  if (!t.first) return hn::MulAdd(acc, va, c_old);
  if (beta == 0.0f) return hn::Mul(acc, va);
  return hn::MulAdd(acc, va, hn::Mul(hn::Set(d, beta), c_old));
}

/// The epilogue's sums and light activation on one vector at row i, column j; `load`
/// reads a vector of an operand at a column offset (whole or partial).
template <typename Load>
HWY_INLINE VF ApplyEpilogue(DF d, const Epilogue& ep, VF v, int64_t i, int64_t j,
                            const Load& load) {
  if (ep.row_bias) v = hn::Add(v, hn::Set(d, ep.row_bias[i]));
  if (ep.col_bias) v = hn::Add(v, load(ep.col_bias + j));
  if (ep.residual) v = hn::Add(v, load(ep.residual + i * ep.ldr + j));
  if (ep.act != Activation::kNone && !heavy_activation(ep.act)) v = LightActivation(d, ep, v);
  return v;
}

/// A tile with padding rows or columns (kept out of line, so the accumulators of the
/// whole-tile path stay in registers).
template <size_t kRows, size_t kV>
HWY_NOINLINE void StoreTilePartial(const GemmArgs& g, const TilePos& t, const VF* acc) {
  const DF d;
  const size_t L = hn::Lanes(d);
  const VF va = hn::Set(d, g.alpha);
  const Epilogue ep = g.ep;
  const bool epi = t.last && g.has_epilogue;
  for (size_t r = 0; r < t.mr; ++r) {
    float* cr = t.c + static_cast<int64_t>(r) * g.ldc;
    const int64_t i = t.i0 + static_cast<int64_t>(r);
    for (size_t u = 0; u < kV && u * L < t.nr; ++u) {
      const size_t col = u * L, n = std::min(L, t.nr - col);
      auto load = [&](const float* p) { return n == L ? hn::LoadU(d, p) : LoadPartial(d, p, n); };
      const bool reads_c = !t.first || g.beta != 0.0f;
      VF v = Combine(d, t, g.beta, va, acc[r * kV + u], reads_c ? load(cr + col) : hn::Zero(d));
      if (epi) v = ApplyEpilogue(d, ep, v, i, t.j0 + static_cast<int64_t>(col), load);
      if (n == L) {
        hn::StoreU(v, d, cr + col);
      } else {
        HWY_ALIGN float tmp[kMaxLanes];
        hn::Store(v, d, tmp);
        std::copy(tmp, tmp + n, cr + col);
      }
    }
    if (epi && heavy_activation(ep.act)) ActivateRow(ep, cr, t.nr);
  }
}

template <size_t kRows, size_t kV>
HWY_INLINE void StoreTile(const GemmArgs& g, const TilePos& t, VF (&acc)[kRows][kV]) {
  const DF d;
  const size_t L = hn::Lanes(d);
  if (t.mr != kRows || t.nr != kV * L) {
    StoreTilePartial<kRows, kV>(g, t, &acc[0][0]);
    return;
  }
  // A whole tile: straight-line loads and stores.
  const VF va = hn::Set(d, g.alpha);
  const int64_t ldc = g.ldc;
  float* c = t.c;
  if (!(t.last && g.has_epilogue)) {
    if (!t.first) {
      for (size_t r = 0; r < kRows; ++r)
        for (size_t u = 0; u < kV; ++u) {
          float* p = c + static_cast<int64_t>(r) * ldc + u * L;
          hn::StoreU(hn::MulAdd(acc[r][u], va, hn::LoadU(d, p)), d, p);
        }
    } else if (g.beta == 0.0f) {
      for (size_t r = 0; r < kRows; ++r)
        for (size_t u = 0; u < kV; ++u)
          hn::StoreU(hn::Mul(acc[r][u], va), d, c + static_cast<int64_t>(r) * ldc + u * L);
    } else {
      const VF vb = hn::Set(d, g.beta);
      for (size_t r = 0; r < kRows; ++r)
        for (size_t u = 0; u < kV; ++u) {
          float* p = c + static_cast<int64_t>(r) * ldc + u * L;
          hn::StoreU(hn::MulAdd(acc[r][u], va, hn::Mul(vb, hn::LoadU(d, p))), d, p);
        }
    }
    return;
  }
  const Epilogue ep = g.ep;
  const bool reads_c = !t.first || g.beta != 0.0f;
  auto load = [&](const float* p) { return hn::LoadU(d, p); };
  // A heavy activation runs on the tile in a buffer on the stack before it goes to C:
  // activating C in place read back every line just written, waiting on its fill where C
  // is past the caches.
  const bool heavy = heavy_activation(ep.act);
  HWY_ALIGN float tile[kRows * kV * kMaxLanes];
  for (size_t r = 0; r < kRows; ++r) {
    float* cr = c + static_cast<int64_t>(r) * ldc;
    float* out = heavy ? tile + r * kV * L : cr;
    const int64_t i = t.i0 + static_cast<int64_t>(r);
    for (size_t u = 0; u < kV; ++u) {
      VF v = Combine(d, t, g.beta, va, acc[r][u], reads_c ? hn::LoadU(d, cr + u * L) : hn::Zero(d));
      hn::StoreU(ApplyEpilogue(d, ep, v, i, t.j0 + static_cast<int64_t>(u * L), load), d,
                 out + u * L);
    }
  }
  if (!heavy) return;
  ActivateRow(ep, tile, kRows * kV * L);
  for (size_t r = 0; r < kRows; ++r)
    for (size_t u = 0; u < kV; ++u)
      hn::StoreU(hn::Load(d, tile + (r * kV + u) * L), d, c + static_cast<int64_t>(r) * ldc + u * L);
}

/// One tile: C[kRows x kPanels * NR] (t.mr x t.nr stored) over kc of depth. B panel p of the
/// tile starts at b + p * panel_step and advances b_step per depth. A: a packed [kc][kMR]
/// strip (kPackedA), or row r at a + r * lda.
template <size_t kRows, size_t kPanels, bool kPackedA>
HWY_INLINE void Tile(const GemmArgs& g, size_t kc, const float* HWY_RESTRICT a, int64_t lda,
                     const float* HWY_RESTRICT b, int64_t b_step, int64_t panel_step,
                     const TilePos& t) {
  const DF d;
  const size_t L = hn::Lanes(d);
  constexpr size_t kV = 2 * kPanels;
  VF acc[kRows][kV];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t u = 0; u < kV; ++u) acc[r][u] = hn::Zero(d);
  const float* bp[kPanels];
  for (size_t p = 0; p < kPanels; ++p) bp[p] = b + static_cast<int64_t>(p) * panel_step;
  // The tile of C is read after the loop (a later depth pass, or beta): start fetching it.
  if (!t.first || g.beta != 0.0f)
    for (size_t r = 0; r < kRows; ++r) {
      const float* cr = t.c + static_cast<int64_t>(r) * g.ldc;
      for (size_t u = 0; u < kV; u += 2) hwy::Prefetch(cr + u * L);
      hwy::Prefetch(cr + kV * L - 1);
    }
  if constexpr (kPackedA) {
    for (size_t p = 0; p < kc; ++p) {
      VF bv[kV];
      for (size_t q = 0; q < kPanels; ++q) {
        bv[2 * q] = hn::LoadU(d, bp[q]);
        bv[2 * q + 1] = hn::LoadU(d, bp[q] + L);
        bp[q] += b_step;
      }
      for (size_t r = 0; r < kRows; ++r) {
        const VF av = hn::Set(d, a[r]);
        for (size_t u = 0; u < kV; ++u) acc[r][u] = hn::MulAdd(av, bv[u], acc[r][u]);
      }
      a += kMR;
    }
  } else {
    const float* rows[kRows];
    for (size_t r = 0; r < kRows; ++r) rows[r] = a + static_cast<int64_t>(r) * lda;
    for (size_t p = 0; p < kc; ++p) {
      VF bv[kV];
      for (size_t q = 0; q < kPanels; ++q) {
        bv[2 * q] = hn::LoadU(d, bp[q]);
        bv[2 * q + 1] = hn::LoadU(d, bp[q] + L);
        bp[q] += b_step;
      }
      for (size_t r = 0; r < kRows; ++r) {
        const VF av = hn::Set(d, rows[r][p]);
        for (size_t u = 0; u < kV; ++u) acc[r][u] = hn::MulAdd(av, bv[u], acc[r][u]);
      }
    }
  }
  StoreTile<kRows, kV>(g, t, acc);
}

/// Tile<R, 1, false> for a run-time row count rows in [R, kMR).
template <size_t R>
HWY_INLINE void PartialStrip(size_t rows, const GemmArgs& g, size_t kc, const float* a,
                             const float* b, int64_t b_step, const TilePos& t) {
  if constexpr (R < kMR) {
    if (rows == R)
      Tile<R, 1, false>(g, kc, a, g.lda, b, b_step, 0, t);
    else
      PartialStrip<R + 1>(rows, g, kc, a, b, b_step, t);
  }
}

/// Packs rows [i0, i0 + mc) and depths [p0, p0 + kc) of op(A) into kMR-row strips.
void PackA(const GemmArgs& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           float* HWY_RESTRICT dst) {
  const int64_t mr = static_cast<int64_t>(kMR);
  for (int64_t s = 0; s * mr < mc; ++s) {
    float* HWY_RESTRICT strip = dst + s * kc * mr;
    const int64_t rows = std::min(mr, mc - s * mr), i = i0 + s * mr;
    if (g.trans_a) {  // op(A) row i, depth p at A[p * lda + i]: rows of a strip are adjacent
      const float* src = g.A + p0 * g.lda + i;
      for (int64_t p = 0; p < kc; ++p, src += g.lda) {
        float* o = strip + p * mr;
        for (int64_t r = 0; r < rows; ++r) o[r] = src[r];
        for (int64_t r = rows; r < mr; ++r) o[r] = 0.0f;
      }
    } else if (rows == mr) {
      const float* src[kMR];
      for (size_t r = 0; r < kMR; ++r) src[r] = g.A + (i + static_cast<int64_t>(r)) * g.lda + p0;
      for (int64_t p = 0; p < kc; ++p)
        for (size_t r = 0; r < kMR; ++r) strip[p * mr + static_cast<int64_t>(r)] = src[r][p];
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        float* o = strip + p * mr;
        for (int64_t r = 0; r < rows; ++r) o[r] = g.A[(i + r) * g.lda + p0 + p];
        for (int64_t r = rows; r < mr; ++r) o[r] = 0.0f;
      }
    }
  }
}

/// Copies depths [p0, p0 + kc) of the columns [j0, j0 + w) of an in-place op(B) into one
/// zero-padded panel [kc][NR].
void CopyPanel(const GemmArgs& g, int64_t p0, int64_t kc, int64_t j0, int64_t w,
               float* HWY_RESTRICT dst) {
  const int64_t NR = static_cast<int64_t>(2 * hn::Lanes(DF()));
  if (g.trans_b) {  // op(B)(p, j) = B[j * ldb + p]
    if (w < NR)
      for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * NR + w, dst + (p + 1) * NR, 0.0f);
    for (int64_t t = 0; t < w; ++t) {
      const float* src = g.B + (j0 + t) * g.ldb + p0;
      for (int64_t p = 0; p < kc; ++p) dst[p * NR + t] = src[p];
    }
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* src = g.B + (p0 + p) * g.ldb + j0;
    float* o = dst + p * NR;
    std::copy(src, src + w, o);
    std::fill(o + w, o + NR, 0.0f);
  }
}

/// All of op(A) in PackA's strips, depth block after depth block: block pc (kc deep) at
/// out + pc * Mpad, strip s of it at + s * kc * kMR (Mpad: M rounded up to kMR).
void PackAAll(const GemmArgs& g, float* HWY_RESTRICT out) {
  const int64_t mr = static_cast<int64_t>(kMR), Mpad = (g.M + mr - 1) / mr * mr;
  const int64_t KC = depth_block(g.K);
  for (int64_t pc = 0; pc < g.K; pc += KC) PackA(g, 0, g.M, pc, std::min(KC, g.K - pc), out + pc * Mpad);
}

/// One column panel of B (bp, advancing b_step per depth) against the strips of rows
/// [ic, ic + mc) of A, depths [pc, pc + kc): GemmBlock's innermost loop.
struct Strips {
  int64_t ic, mc, pc, kc, j0, nr;
  const float* bp;
  int64_t b_step;
  bool first, last;
  TilePos at(const GemmArgs& g, int64_t s) const {
    const int64_t mr = static_cast<int64_t>(kMR), i = ic + s * mr, rows = std::min(mr, mc - s * mr);
    return TilePos{g.C + i * g.ldc + j0, i, j0, static_cast<size_t>(rows), static_cast<size_t>(nr), first, last};
  }
};

// The strip loops are functions of their own (noinline), one per way A is read, called
// once per panel and row block: a JIT (WebAssembly) compiles and optimizes only the one a
// model runs (GemmBlock with every tile variant inlined was the largest function V8
// optimized during the digit reader's first run).

/// Strips of A packed (ablk: the row block's strips, kc x kMR each).
HWY_NOINLINE void StripsPacked(const GemmArgs& g, const Strips& st, const float* ablk) {
  const int64_t mr = static_cast<int64_t>(kMR);
  for (int64_t s = 0; s * mr < st.mc; ++s)
    Tile<kMR, 1, true>(g, static_cast<size_t>(st.kc), ablk + s * st.kc * mr, 0, st.bp, st.b_step, 0,
                       st.at(g, s));
}

/// The last strip of rows read in place when it has fewer than kMR rows (strip s).
HWY_NOINLINE void StripTail(const GemmArgs& g, const Strips& st, int64_t s) {
  const int64_t mr = static_cast<int64_t>(kMR);
  PartialStrip<1>(static_cast<size_t>(st.mc - s * mr), g, static_cast<size_t>(st.kc),
                  g.A + (st.ic + s * mr) * g.lda + st.pc, st.bp, st.b_step, st.at(g, s));
}

/// Rows of A read in place.
HWY_NOINLINE void StripsInPlace(const GemmArgs& g, const Strips& st) {
  const int64_t mr = static_cast<int64_t>(kMR);
  int64_t s = 0;
  for (; (s + 1) * mr <= st.mc; ++s)
    Tile<kMR, 1, false>(g, static_cast<size_t>(st.kc), g.A + (st.ic + s * mr) * g.lda + st.pc, g.lda,
                        st.bp, st.b_step, 0, st.at(g, s));
  if (s * mr < st.mc) StripTail(g, st, s);
}

/// The blocked path: C rows [m0, m1) and column panels [q0, q1) over the whole depth.
/// Loops: column chunks whose KC x NC block of B stays in L2, depth passes, row blocks of
/// A, panels (one in L1 for all the strips of a row block), strips.
void GemmBlock(const GemmArgs& g, int64_t m0, int64_t m1, int64_t q0, int64_t q1) {
  const DF d;
  const int64_t NR = static_cast<int64_t>(2 * hn::Lanes(d));
  const int64_t mr = static_cast<int64_t>(kMR);
  const int64_t KC = depth_block(g.K);
  // Panels per column chunk; a packed A is packed once per row block, for all the panels.
  const int64_t nc = g.pack_a ? q1 - q0 : std::max<int64_t>(1, kL2BlockFloats / (KC * NR));
  thread_local FloatVec abuf, bbuf;
  if (g.pack_a && !g.a_packed) abuf.resize(static_cast<size_t>(kMC * KC));
  const int64_t Mpad = (g.M + mr - 1) / mr * mr;
  if (!g.b_packed) bbuf.resize(static_cast<size_t>(KC * NR));
  for (int64_t jc = q0; jc < q1; jc += nc) {
    const int64_t je = std::min(q1, jc + nc);
    for (int64_t pc = 0; pc < g.K; pc += KC) {
      poll_cancel();  // base/cancel.h: a hostile shape can make one GEMM take hours
      const int64_t kc = std::min(KC, g.K - pc);
      const bool first = pc == 0, last = pc + kc == g.K;
      for (int64_t ic = m0; ic < m1; ic += kMC) {
        const int64_t mc = std::min(kMC, m1 - ic);
        // Row blocks start at multiples of kMR (run_gemm's blocks are), so a block's
        // strips in a_packed are those from strip ic / kMR on.
        const float* ablk = g.a_packed ? g.a_packed + pc * Mpad + (ic / mr) * kc * mr : abuf.data();
        if (g.pack_a && !g.a_packed) PackA(g, ic, mc, pc, kc, abuf.data());
        for (int64_t q = jc; q < je; ++q) {
          const int64_t j0 = q * NR, nr = std::min(NR, g.N - j0);
          const float* bp;
          int64_t b_step;
          if (g.b_packed) {
            bp = g.B + q * g.K * NR + pc * NR;
            b_step = NR;
          } else {
            // In place: the panel is copied for the strips of this row block to read
            // contiguously (B's rows lie a page or more apart).
            CopyPanel(g, pc, kc, j0, nr, bbuf.data());
            bp = bbuf.data();
            b_step = NR;
          }
          const Strips st{ic, mc, pc, kc, j0, nr, bp, b_step, first, last};
          if (g.pack_a)
            StripsPacked(g, st, ablk);
          else
            StripsInPlace(g, st);
        }
      }
    }
  }
}

/// The few-rows path for exactly R (< kMR) rows of A, read at a with stride lda: column
/// panels [q0, q1), the whole depth in one pass, panels_for<R>() panels per tile.
template <size_t R>
void SmallRows(const GemmArgs& g, const float* a, int64_t lda, int64_t q0, int64_t q1) {
  const DF d;
  const int64_t NR = static_cast<int64_t>(2 * hn::Lanes(d));
  constexpr size_t P = panels_for<R>();
  const size_t kc = static_cast<size_t>(g.K);
  auto pos = [&](int64_t q, int64_t panels) {
    const int64_t j0 = q * NR;
    return TilePos{g.C + j0, 0,   j0, R, static_cast<size_t>(std::min(panels * NR, g.N - j0)),
                   true,     true};
  };
  thread_local FloatVec bbuf;
  int64_t q = q0;
  if (!g.b_packed && g.trans_b) {  // B^T in place: P panels at a time through a copy
    bbuf.resize(static_cast<size_t>(g.K * NR) * P);
    for (; q < q1; q += static_cast<int64_t>(P)) {
      const int64_t panels = std::min<int64_t>(static_cast<int64_t>(P), q1 - q);
      poll_cancel();
      for (int64_t k = 0; k < panels; ++k)
        CopyPanel(g, 0, g.K, (q + k) * NR, std::min(NR, g.N - (q + k) * NR),
                  bbuf.data() + k * g.K * NR);
      if (panels == static_cast<int64_t>(P))
        Tile<R, P, false>(g, kc, a, lda, bbuf.data(), NR, g.K * NR, pos(q, panels));
      else
        for (int64_t k = 0; k < panels; ++k)
          Tile<R, 1, false>(g, kc, a, lda, bbuf.data() + k * g.K * NR, NR, 0, pos(q + k, 1));
    }
    return;
  }
  // B panel q: packed at B + q * K * NR (NR per depth), in place at B + q * NR (ldb).
  const int64_t b_step = g.b_packed ? NR : g.ldb, panel_step = g.b_packed ? g.K * NR : NR;
  // In place, only whole panels may be loaded where they lie.
  const int64_t whole = g.b_packed ? q1 : std::min(q1, g.N / NR);
  for (; q + static_cast<int64_t>(P) <= whole; q += static_cast<int64_t>(P)) {
    poll_cancel();
    Tile<R, P, false>(g, kc, a, lda, g.B + q * panel_step, b_step, panel_step, pos(q, P));
  }
  for (; q < whole; ++q)
    Tile<R, 1, false>(g, kc, a, lda, g.B + q * panel_step, b_step, 0, pos(q, 1));
  if (q < q1) {  // in place: the last, partial panel through a copy
    bbuf.resize(static_cast<size_t>(g.K * NR));
    CopyPanel(g, 0, g.K, q * NR, g.N - q * NR, bbuf.data());
    Tile<R, 1, false>(g, kc, a, lda, bbuf.data(), NR, 0, pos(q, 1));
  }
}

template <size_t R>
HWY_INLINE void SmallDispatch(const GemmArgs& g, const float* a, int64_t lda, int64_t q0,
                              int64_t q1) {
  if constexpr (R < kMR) {
    if (g.M == static_cast<int64_t>(R))
      SmallRows<R>(g, a, lda, q0, q1);
    else
      SmallDispatch<R + 1>(g, a, lda, q0, q1);
  }
}

/// C rows [0, M) (M < kMR), column panels [q0, q1). A transposed op(A) is copied to rows first.
void GemmSmall(const GemmArgs& g, int64_t q0, int64_t q1) {
  if (!g.trans_a) {
    SmallDispatch<1>(g, g.A, g.lda, q0, q1);
    return;
  }
  thread_local FloatVec arows;
  arows.resize(static_cast<size_t>(g.M * g.K));
  for (int64_t p = 0; p < g.K; ++p)
    for (int64_t i = 0; i < g.M; ++i) arows[static_cast<size_t>(i * g.K + p)] = g.A[p * g.lda + i];
  SmallDispatch<1>(g, arows.data(), g.K, q0, q1);
}

int64_t PanelWidth() {
  return static_cast<int64_t>(2 * hn::Lanes(DF()));
}
int64_t StripRows() {
  return static_cast<int64_t>(kMR);
}
int64_t BlockRows() {
  return kMC;
}
const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(GemmBlock);
HWY_EXPORT(PackAAll);
HWY_EXPORT(GemmSmall);
HWY_EXPORT(ActivationInplace);
HWY_EXPORT(PanelWidth);
HWY_EXPORT(StripRows);
HWY_EXPORT(BlockRows);
HWY_EXPORT(TargetName);

namespace {

int64_t panel_width() {
  return HWY_DYNAMIC_DISPATCH(PanelWidth)();
}

/// Runs task(t) for t in [0, n): on the pool, each of its threads claiming the next task
/// when it is done with one (balanced whatever the pool's chunking), else in order here.
template <typename F>
void run_tasks(ThreadPool* pool, int64_t n, const F& task) {
  const int64_t threads = pool ? pool->size() : 1;
  if (threads <= 1 || n <= 1) {
    for (int64_t t = 0; t < n; ++t) task(t);
    return;
  }
  std::atomic<int64_t> next{0};
  pool->parallel_for(std::min(threads, n), [&](int64_t, int64_t) {
    for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n;
         t = next.fetch_add(1, std::memory_order_relaxed))
      task(t);
  });
}

void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    if (beta == 0.0f)
      std::fill(c, c + N, 0.0f);
    else if (beta != 1.0f)
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  }
}

/// K == 0: C = epilogue(beta * C).
void empty_depth(int64_t M, int64_t N, float beta, float* C, int64_t ldc, const Epilogue* ep) {
  scale_c(M, N, beta, C, ldc);
  if (!ep) return;
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) {
      if (ep->row_bias) c[j] += ep->row_bias[i];
      if (ep->col_bias) c[j] += ep->col_bias[j];
      if (ep->residual) c[j] += ep->residual[i * ep->ldr + j];
    }
    if (ep->act != Activation::kNone) activation_inplace(*ep, c, N);
  }
}

// Below this many multiply-adds a GEMM stays on one thread (waking a worker costs more).
constexpr int64_t kThreadedWork = int64_t{1} << 18;
// Tasks aim at this many multiply-adds at least (each task rereads its block of A).
constexpr int64_t kTaskWork = int64_t{1} << 20;

void run_gemm(const GemmArgs& g, ThreadPool* pool) {
  const int64_t nr = panel_width(), npanels = (g.N + nr - 1) / nr;
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t work = g.M * g.N * g.K;
  const int64_t mr = HWY_DYNAMIC_DISPATCH(StripRows)();
  const bool single = threads <= 1 || work < kThreadedWork;
  if (g.M < mr) {
    if (single) {
      HWY_DYNAMIC_DISPATCH(GemmSmall)(g, 0, npanels);
      return;
    }
    // A few rows are bound by reading B: tasks of a few panels each still pay.
    const int64_t want = std::min(4 * threads, std::max<int64_t>(1, work / (kTaskWork / 16)));
    const int64_t per = std::max<int64_t>(1, (npanels + want - 1) / want);
    const int64_t n = (npanels + per - 1) / per;
    run_tasks(pool, n, [&](int64_t t) {
      HWY_DYNAMIC_DISPATCH(GemmSmall)(g, t * per, std::min(npanels, (t + 1) * per));
    });
    return;
  }
  if (single) {
    HWY_DYNAMIC_DISPATCH(GemmBlock)(g, 0, g.M, 0, npanels);
    return;
  }
  // Tasks: row blocks x column chunks, about 8 per thread where the work allows (the
  // threads claim them one at a time, so the last ones even out the load).
  const int64_t want = std::max<int64_t>(1, std::min(8 * threads, work / kTaskWork));
  int64_t mc = HWY_DYNAMIC_DISPATCH(BlockRows)();
  int64_t row_blocks = (g.M + mc - 1) / mc;
  int64_t col_chunks;
  if (want < 4 * threads) {
    // Few tasks (a small GEMM: MobileNetV3's 576 -> 96 pointwise layer at 7x7, 2.7M
    // multiply-adds, was 2 tasks of 2 and 1 column panels and ran 1.1x faster on 2
    // threads than on 1): no claiming evens them out, so the split is the one whose
    // busiest thread has the fewest strip x panel tiles, with at most max(want, threads)
    // tasks; ties go to fewer column chunks (each packs op(A) again or waits for it).
    const int64_t strips = (g.M + mr - 1) / mr, limit = std::max(want, threads);
    int64_t best_r = 1, best_c = 1, best = INT64_MAX;
    for (int64_t c = 1; c <= std::min(npanels, limit); ++c)
      for (int64_t r = 1; r * c <= limit && r <= strips; ++r) {
        const int64_t rounds = (r * c + threads - 1) / threads;
        const int64_t cost = rounds * ((strips + r - 1) / r) * ((npanels + c - 1) / c);
        if (cost < best) best = cost, best_r = r, best_c = c;
      }
    col_chunks = best_c;
    mc = (strips + best_r - 1) / best_r * mr;
    row_blocks = (g.M + mc - 1) / mc;
  } else {
    col_chunks = row_blocks >= want ? 1 : std::min(npanels, (want + row_blocks - 1) / row_blocks);
    if (row_blocks * col_chunks < want) {  // few columns: thinner row blocks
      const int64_t blocks = std::min((g.M + mr - 1) / mr, (want + col_chunks - 1) / col_chunks);
      mc = ((g.M + blocks - 1) / blocks + mr - 1) / mr * mr;
      row_blocks = (g.M + mc - 1) / mc;
    }
  }
  const int64_t per_chunk = (npanels + col_chunks - 1) / col_chunks;
  // A packed op(A) shared by the column chunks of a row block: packed once here, not by
  // each of their tasks (a transposed A of 49 rows, split in ten column chunks, was packed
  // ten times: MobileNetV2's 7x7 pointwise layers ran 1.2x faster on 2 threads than on 1).
  // The buffer is this thread's, reused across calls; a GEMM started by a task this thread
  // runs while it waits (a nested call) gets its own.
  GemmArgs ga = g;
  thread_local FloatVec apack;
  thread_local bool apack_busy = false;
  FloatVec nested;
  const bool prepack = g.pack_a && col_chunks > 1;
  bool took = false;
  if (prepack) {
    const int64_t Mpad = (g.M + mr - 1) / mr * mr;
    took = !apack_busy;
    FloatVec& buf = took ? apack : nested;
    apack_busy = apack_busy || took;
    buf.resize(static_cast<size_t>(Mpad * g.K));
    HWY_DYNAMIC_DISPATCH(PackAAll)(g, buf.data());
    ga.a_packed = buf.data();
  }
  struct Release {
    bool on;
    ~Release() { if (on) apack_busy = false; }
  } release{took};
  run_tasks(pool, row_blocks * col_chunks, [&](int64_t t) {
    const int64_t r = t / col_chunks, q = t % col_chunks;
    const int64_t q0 = q * per_chunk, q1 = std::min(npanels, q0 + per_chunk);
    if (q0 < q1) HWY_DYNAMIC_DISPATCH(GemmBlock)(ga, r * mc, std::min(g.M, (r + 1) * mc), q0, q1);
  });
}

GemmArgs make_args(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, bool b_packed, bool trans_b,
                   float beta, float* C, int64_t ldc, const Epilogue* ep) {
  const bool has_ep =
      ep && (ep->row_bias || ep->col_bias || ep->residual || ep->act != Activation::kNone);
  const bool pack_a = trans_a;
  return GemmArgs{trans_a,  M,       N,   K,   alpha,
                  beta,     A,       lda, B,   ldb,
                  b_packed, trans_b, C,   ldc, ep ? *ep : Epilogue{},
                  has_ep,   pack_a};
}

// Up to this many rows, B is read where it lies (a panel at a time) rather than packed
// whole for the call: packing all of B then costs more than it saves.
constexpr int64_t kInPlaceRows = 128;

}  // namespace

bool parse_activation(std::string_view name, Activation* out) {
  static constexpr std::pair<std::string_view, Activation> kNames[] = {
      {"", Activation::kNone},
      {"Relu", Activation::kRelu},
      {"Clip", Activation::kClip},
      {"LeakyRelu", Activation::kLeakyRelu},
      {"HardSigmoid", Activation::kHardSigmoid},
      {"HardSwish", Activation::kHardSwish},
      {"Sigmoid", Activation::kSigmoid},
      {"Tanh", Activation::kTanh},
      {"SiLU", Activation::kSiLU},
      {"Gelu", Activation::kGelu},
      {"GeluTanh", Activation::kGeluTanh},
  };
  for (const auto& [n, a] : kNames)
    if (n == name) {
      *out = a;
      return true;
    }
  return false;
}

bool set_activation(std::string_view name, const std::vector<float>& params, Epilogue* ep) {
  Activation a;
  if (!parse_activation(name, &a)) return false;
  const size_t want = a == Activation::kClip || a == Activation::kHardSigmoid ? 2
                      : a == Activation::kLeakyRelu                           ? 1
                                                                              : 0;
  if (params.size() != want) return false;
  ep->act = a;
  ep->p0 = want > 0 ? params[0] : 0.0f;
  ep->p1 = want > 1 ? params[1] : 0.0f;
  return true;
}

void activation_inplace(const Epilogue& ep, float* x, int64_t n) {
  if (ep.act != Activation::kNone) HWY_DYNAMIC_DISPATCH(ActivationInplace)(ep, x, n);
}

PackedB pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, ThreadPool* pool) {
  PackedB pb;
  pb.k_ = K;
  pb.n_ = N;
  pb.nr_ = panel_width();
  const int64_t nr = pb.nr_, npanels = (N + nr - 1) / nr;
  pb.data_.assign(static_cast<size_t>(npanels * K * nr), 0.0f);
  float* data = pb.data_.data();
  auto pack = [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      float* dst = data + q * K * nr;
      const int64_t j0 = q * nr, w = std::min(nr, N - j0);
      if (!trans_b) {
        for (int64_t p = 0; p < K; ++p)
          std::copy(B + p * ldb + j0, B + p * ldb + j0 + w, dst + p * nr);
      } else {
        for (int64_t t = 0; t < w; ++t) {
          const float* src = B + (j0 + t) * ldb;
          for (int64_t p = 0; p < K; ++p) dst[p * nr + t] = src[p];
        }
      }
    }
  };
  if (pool && pool->size() > 1 && K * N >= (1 << 16) && npanels > 1)
    pool->parallel_for(npanels, pack);
  else
    pack(0, npanels);
  return pb;
}

void sgemm_panels(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* panels, float beta, float* C, int64_t ldc,
                  ThreadPool* pool, const Epilogue* epilogue) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    empty_depth(M, N, beta, C, ldc, epilogue);
    return;
  }
  run_gemm(
      make_args(trans_a, M, N, K, alpha, A, lda, panels, 0, true, false, beta, C, ldc, epilogue),
      pool);
}

void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool,
                  const Epilogue* epilogue) {
  if (B.n_ > 0 && B.k_ > 0 && B.nr_ != panel_width())
    throw Error(ErrorCode::kRuntime, "sgemm_packed: B was packed for another SIMD target");
  sgemm_panels(trans_a, M, B.n_, B.k_, alpha, A, lda, B.data_.data(), beta, C, ldc, pool, epilogue);
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           ThreadPool* pool, const Epilogue* epilogue) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    empty_depth(M, N, beta, C, ldc, epilogue);
    return;
  }
  if (M <= kInPlaceRows) {
    run_gemm(
        make_args(trans_a, M, N, K, alpha, A, lda, B, ldb, false, trans_b, beta, C, ldc, epilogue),
        pool);
    return;
  }
  const PackedB pb = pack_b(trans_b, K, N, B, ldb, pool);
  sgemm_packed(trans_a, M, alpha, A, lda, pb, beta, C, ldc, pool, epilogue);
}

int64_t gemm_panel_width() {
  return panel_width();
}

const char* gemm_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
