// The convolution GEMM (see gemm_conv.h), compiled once per SIMD target through Highway's
// foreach_target.h; the code after HWY_ONCE is target-independent.
//
// Microkernel: MR row streams of A (8 with 512-bit vectors, 6 with 256-bit, 4 with 128-bit)
// times one B panel of NR = 2 vectors of columns (or 1 vector for a narrow last panel),
// 2 * MR accumulators in registers over the whole depth of the call; a last strip of fewer
// than MR rows repeats its last row (computed, never stored). The loops: blocks of MC rows
// (A block in L2), depth blocks of at most KC (the B micro-panel in L1), panels, then
// strips, so a B micro-panel is reused by every strip of the row block. The epilogue
// (bias, residual, cheap activations) is applied to the registers before the only store;
// exp/tanh/erf activations run on the stored MR x NR tile while it is in L1.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm_conv.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "simd/conv_epilogue-inl.h"
#include "simd/tail-inl.h"

#ifndef ONYX_SIMD_GEMM_CONV_ONCE
#define ONYX_SIMD_GEMM_CONV_ONCE
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/cancel.h"
#include "simd/gemm_conv.h"
#include "simd/tier.h"

namespace onyx::simd {
/// One conv_gemm call as the per-target code sees it.
struct ConvGemmArgs {
  int64_t K;
  const float* a;
  int64_t lda;
  int64_t m0, m1;
  BMatrix b;
  int64_t N;
  float* C;
  int64_t ldc;
  bool accumulate;
  const Epilogue* ep;
  bool a_packed;  ///< A in conv_pack_a's layout (lda: floats per strip)
};
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
#elif HWY_MAX_BYTES >= 32
constexpr size_t kMR = 6;
#else
constexpr size_t kMR = 4;
#endif
constexpr int64_t kMC = static_cast<int64_t>(kMR) * 16;  // rows per A block (in L2)
constexpr int64_t kKC = 256;                             // depth per block (micro-panel in L1)
/// Outputs (C's rows times its row stride: the whole output of a convolution that a call
/// makes a tile of) from which the next panel's C lines are prefetched: from half an L2,
/// past which C is rarely still cached (see GemmLayout).
constexpr int64_t kPrefetchFloats = int64_t(1) << 17;

/// Finishes row r of a tile: v = acc (+ c when accumulating) (+ bias + z when given), then
/// the cheap activation when given, stored to c, or to out when given (whole vectors, an
/// aligned buffer). kMasked: only the lanes of masks m0/m1 are valid (loaded and stored).
template <int NV, bool kMasked>
HWY_INLINE void StoreRow(VF v0, VF v1, float* cr, bool accumulate, const float* bias,
                         const float* zr, const Activation* act, hn::Mask<DF> m0, hn::Mask<DF> m1,
                         float* out = nullptr) {
  const DF d;
  const size_t L = hn::Lanes(d);
  // Partial vectors: TailLoad / TailStore touch only the valid lanes (a masked load or
  // blended store emulated as a whole-vector read-modify-write, as on SSE4 and WASM
  // SIMD128, races with the thread that owns the neighbouring columns and can read past
  // the end of the buffer).
  auto load = [&](hn::Mask<DF> m, const float* p) {
    if constexpr (kMasked)
      return TailLoad(m, d, p);
    else
      return hn::LoadU(d, p);
  };
  if (accumulate) {
    v0 = hn::Add(v0, load(m0, cr));
    if (NV == 2) v1 = hn::Add(v1, load(m1, cr + L));
  }
  if (bias) {
    const VF vb = hn::Set(d, *bias);
    v0 = hn::Add(v0, vb);
    if (NV == 2) v1 = hn::Add(v1, vb);
  }
  if (zr) {
    v0 = hn::Add(v0, load(m0, zr));
    if (NV == 2) v1 = hn::Add(v1, load(m1, zr + L));
  }
  if (act) {  // a CheapAct kind (Micro gives no other)
    v0 = ApplyCheapAct<false>(d, v0, *act);
    if (NV == 2) v1 = ApplyCheapAct<false>(d, v1, *act);
  }
  if (out) {  // whole vectors to an aligned buffer of NV vectors
    hn::Store(v0, d, out);
    if (NV == 2) hn::Store(v1, d, out + L);
    return;
  }
  if constexpr (kMasked) {
    TailStore(v0, m0, d, cr);
    if (NV == 2) TailStore(v1, m1, d, cr + L);
  } else {
    hn::StoreU(v0, d, cr);
    if (NV == 2) hn::StoreU(v1, d, cr + L);
  }
}

/// Row p of the B micro-panel starting at b: panels and rows step by a stride, offsets
/// look the row up.
template <BMatrix::Layout kLayout>
HWY_INLINE const float* BRow(const float* b, size_t p, int64_t stride, const int64_t* offs) {
  if constexpr (kLayout == BMatrix::Layout::kOffsets)
    return b + offs[p];
  else
    return b + static_cast<int64_t>(p) * stride;
}

/// One kRows x (NV vectors) tile of C over depth kc: c[mr x nr] (the valid part, mr <=
/// kRows) gets the sum of the A rows (a_rows[r][p], at this depth) times the B
/// micro-panel, finished as StoreRow says; row0/col0: the tile's place in C (for bias and
/// z). kRows is MR but for the last strip of a row block (MicroRows).
template <int NV, BMatrix::Layout kLayout, bool kPackedA, size_t kRows = kMR>
ONYX_TIER_UNIT void Micro(size_t kc, const float* const* a_rows, const float* b, int64_t bstride,
                      const int64_t* offs, float* c, int64_t ldc, size_t mr, size_t nr,
                      bool accumulate, const Epilogue* ep, int64_t row0, int64_t col0) {
  const DF d;
  const size_t L = hn::Lanes(d);
  VF acc0[kRows], acc1[kRows];
  for (size_t r = 0; r < kRows; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  const float* rows[kRows];
  for (size_t r = 0; r < kRows; ++r) rows[r] = a_rows[r];
  // Packed A: the MR values of depth p are contiguous at rows[0] + p * MR.
  auto a_at = [&](size_t r, size_t p) {
    if constexpr (kPackedA)
      return rows[0][p * kMR + r];
    else
      return rows[r][p];
  };
  for (size_t p = 0; p < kc; ++p) {
    const float* bp = BRow<kLayout>(b, p, bstride, offs);
    const VF b0 = hn::LoadU(d, bp);
    if constexpr (NV == 2) {
      const VF b1 = hn::LoadU(d, bp + L);
      for (size_t r = 0; r < kRows; ++r) {
        const VF av = hn::Set(d, a_at(r, p));
        acc0[r] = hn::MulAdd(av, b0, acc0[r]);
        acc1[r] = hn::MulAdd(av, b1, acc1[r]);
      }
    } else {
      for (size_t r = 0; r < kRows; ++r) acc0[r] = hn::MulAdd(hn::Set(d, a_at(r, p)), b0, acc0[r]);
    }
  }
  const float* bias = ep && ep->bias ? ep->bias + row0 : nullptr;
  const float* z = ep && ep->z ? ep->z + row0 * ep->ldz + col0 : nullptr;
  const int64_t ldz = ep ? ep->ldz : 0;
  const bool cheap = ep && CheapAct(ep->act.kind);
  const Activation* act = cheap && ep->act.kind != Act::kNone ? &ep->act : nullptr;
  const size_t width = NV * L;
  if (ep && !cheap) {
    // exp/tanh/erf activations: the tile's sums go to a buffer on the stack, are activated
    // there (ActRow, one loop over the tile, out of the FMA loop's registers) and only then
    // copied to C. Activating C after storing it read back every line just written, which
    // for an output past the caches waited on each line's fill: a SiLU after efficientnet's
    // 16 -> 96 pointwise convolution at 112x112 cost 1.4 ms over the 0.5 ms of the GEMM.
    HWY_ALIGN float tile[kMR * 2 * hn::MaxLanes(DF())];
    const hn::Mask<DF> all = hn::FirstN(d, L);
    const size_t n0 = std::min(nr, L);
    const hn::Mask<DF> m0 = hn::FirstN(d, n0), m1 = hn::FirstN(d, nr - n0);
    for (size_t r = 0; r < mr; ++r) {
      float* cr = c + static_cast<int64_t>(r) * ldc;
      const float* zr = z ? z + static_cast<int64_t>(r) * ldz : nullptr;
      const float* br = bias ? bias + r : nullptr;
      float* tr = tile + r * width;
      if (nr == width)
        StoreRow<NV, false>(acc0[r], acc1[r], cr, accumulate, br, zr, nullptr, all, all, tr);
      else
        StoreRow<NV, true>(acc0[r], acc1[r], cr, accumulate, br, zr, nullptr, m0, m1, tr);
    }
    ActRow(tile, static_cast<int64_t>(mr * width), ep->act);
    for (size_t r = 0; r < mr; ++r) {
      float* cr = c + static_cast<int64_t>(r) * ldc;
      const float* tr = tile + r * width;
      if (nr == width) {
        hn::StoreU(hn::Load(d, tr), d, cr);
        if (NV == 2) hn::StoreU(hn::Load(d, tr + L), d, cr + L);
      } else {
        std::memcpy(cr, tr, nr * sizeof(float));
      }
    }
    return;
  }
  // Rows past mr are not stored; columns past nr are masked off.
  if (nr == width) {
    const hn::Mask<DF> all = hn::FirstN(d, L);
    for (size_t r = 0; r < mr; ++r)
      StoreRow<NV, false>(acc0[r], acc1[r], c + static_cast<int64_t>(r) * ldc, accumulate,
                          bias ? bias + r : nullptr,
                          z ? z + static_cast<int64_t>(r) * ldz : nullptr, act, all, all);
  } else {
    const size_t n0 = std::min(nr, L);
    const hn::Mask<DF> m0 = hn::FirstN(d, n0), m1 = hn::FirstN(d, nr - n0);
    for (size_t r = 0; r < mr; ++r)
      StoreRow<NV, true>(acc0[r], acc1[r], c + static_cast<int64_t>(r) * ldc, accumulate,
                         bias ? bias + r : nullptr, z ? z + static_cast<int64_t>(r) * ldz : nullptr,
                         act, m0, m1);
  }
}

/// Micro for a strip of `mr` rows: the last strip of a row block whose rows are not a
/// multiple of MR computes 2 or 4 rows instead of MR (on AVX2, MR = 6: a layer of 32 output
/// channels took as long as one of 36; 3x3 stride 2, 16 -> 32 at 160x160: -9%). Not where
/// MR is 4 (WebAssembly, SSE4): no extra bodies for the download.
template <int NV, BMatrix::Layout kLayout, bool kPackedA>
HWY_INLINE void MicroRows(size_t kc, const float* const* a_rows, const float* b, int64_t bstride,
                          const int64_t* offs, float* c, int64_t ldc, size_t mr, size_t nr,
                          bool accumulate, const Epilogue* ep, int64_t row0, int64_t col0) {
  if constexpr (kMR > 4) {
    if (mr <= 2) {
      Micro<NV, kLayout, kPackedA, 2>(kc, a_rows, b, bstride, offs, c, ldc, mr, nr, accumulate, ep,
                                      row0, col0);
      return;
    }
    if (mr <= 4) {
      Micro<NV, kLayout, kPackedA, 4>(kc, a_rows, b, bstride, offs, c, ldc, mr, nr, accumulate, ep,
                                      row0, col0);
      return;
    }
  }
  Micro<NV, kLayout, kPackedA>(kc, a_rows, b, bstride, offs, c, ldc, mr, nr, accumulate, ep, row0,
                               col0);
}

/// The last nr <= kTailCols columns of C for one strip of packed A, transposed: one vector
/// per column with the strip's MR rows in its lanes, a[p * MR + r] loaded as a vector (its
/// lanes past MR belong to the next depth, unused) times a broadcast of B's value at (p,
/// column j). Per depth one load of A and nr of B for nr FMAs, against MR broadcasts and a
/// whole panel of FMAs in Micro<1> for 1 to 4 useful columns. Rows past mr are not stored.
constexpr size_t kTailCols = 4;
/// Targets whose vectors hold a strip (not the scalar fallback).
constexpr bool kHasTail = kMR * sizeof(float) <= HWY_MAX_BYTES;
/// MicroTail's finish, shared by its layouts (out of line: one copy of the activations):
/// sums holds kTailCols vectors, column j's MR rows in vector j.
HWY_NOINLINE void TailEpilogue(const float* sums, float* c, int64_t ldc, size_t mr, size_t nr,
                               bool accumulate, const Epilogue* ep, int64_t row0, int64_t col0) {
  const DF d;
  const size_t L = hn::Lanes(d);
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  const Activation* act = ep && ep->act.kind != Act::kNone ? &ep->act : nullptr;
  HWY_ALIGN float bias[hn::MaxLanes(DF())] = {};
  if (ep && ep->bias)
    for (size_t r = 0; r < mr; ++r) bias[r] = ep->bias[row0 + static_cast<int64_t>(r)];
  for (size_t j = 0; j < nr; ++j) {
    VF v = hn::Load(d, sums + j * L);
    if (ep && ep->bias) v = hn::Add(v, hn::Load(d, bias));
    hn::Store(v, d, buf);
    for (size_t r = 0; r < mr; ++r) {
      float* cr = c + static_cast<int64_t>(r) * ldc + static_cast<int64_t>(j);
      if (accumulate) buf[r] += *cr;
      if (ep && ep->z) buf[r] += ep->z[(row0 + static_cast<int64_t>(r)) * ep->ldz + col0 + static_cast<int64_t>(j)];
    }
    if (act) hn::Store(ApplyAct(d, hn::Load(d, buf), *act), d, buf);
    for (size_t r = 0; r < mr; ++r) c[static_cast<int64_t>(r) * ldc + static_cast<int64_t>(j)] = buf[r];
  }
}

template <BMatrix::Layout kLayout>
ONYX_TIER_UNIT void MicroTail(size_t kc, const float* ap, const float* b, int64_t bstride,
                          const int64_t* offs, float* c, int64_t ldc, size_t mr, size_t nr,
                          bool accumulate, const Epilogue* ep, int64_t row0, int64_t col0) {
  const DF d;
  // Two sets of accumulators, for even and odd depths: one set's kTailCols sums are each
  // a chain of dependent adds, and without FMA (WebAssembly, SSE4) an add waits for the
  // last; two chains per column keep the adders busy.
  // Packed B panels are NR >= kTailCols columns wide (zero-padded), so every lane of the
  // tail may be read; B read in place may end at column nr.
  constexpr bool kInPanel = kLayout == BMatrix::Layout::kPanels;
  VF acc[kTailCols], acc2[kTailCols];
  for (size_t j = 0; j < kTailCols; ++j) acc[j] = acc2[j] = hn::Zero(d);
  size_t p = 0;
  // (Only for packed panels, the Winograd GEMMs' B: the other layouts keep one chain.)
  if constexpr (kInPanel) {
    for (; p + 2 <= kc; p += 2) {
      const VF av = hn::LoadU(d, ap + p * kMR), av2 = hn::LoadU(d, ap + (p + 1) * kMR);
      const float* bp = b + static_cast<int64_t>(p) * bstride;
      for (size_t j = 0; j < kTailCols; ++j) {
        acc[j] = hn::MulAdd(av, hn::Set(d, bp[j]), acc[j]);
        acc2[j] = hn::MulAdd(av2, hn::Set(d, bp[bstride + static_cast<int64_t>(j)]), acc2[j]);
      }
    }
  }
  for (; p < kc; ++p) {
    const VF av = hn::LoadU(d, ap + p * kMR);
    const float* bp = BRow<kLayout>(b, p, bstride, offs);
    for (size_t j = 0; j < kTailCols; ++j)
      if (kInPanel || j < nr) acc[j] = hn::MulAdd(av, hn::Set(d, bp[j]), acc[j]);
  }
  HWY_ALIGN float sums[kTailCols * hn::MaxLanes(DF())];
  const size_t L = hn::Lanes(d);
  for (size_t j = 0; j < kTailCols; ++j) hn::Store(hn::Add(acc[j], acc2[j]), d, sums + j * L);
  TailEpilogue(sums, c, ldc, mr, nr, accumulate, ep, row0, col0);
}

template <BMatrix::Layout kLayout, bool kPackedA>
void GemmLayout(const ConvGemmArgs& g) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), NR = 2 * L;
  const int64_t mr = static_cast<int64_t>(kMR);
  const int64_t npanels = (g.N + NR - 1) / NR;
  // Depth blocks of kKC.
  const int64_t kcb = kKC;
  // The strips of a row block write (and with a residual read) MC rows of C, each a
  // stream of NR columns per panel: more streams than the hardware prefetcher follows,
  // so for a C past L2 every row's next lines are prefetched a whole panel ahead (a 1x1
  // convolution 64 -> 256 at 56x56 with a residual: 1.6-1.8 -> 1.2-1.3 ms).
  const bool prefetch = (g.m1 - g.m0) * g.ldc >= kPrefetchFloats;
  for (int64_t ic = g.m0; ic < g.m1; ic += kMC) {
    const int64_t mc = std::min(kMC, g.m1 - ic);
    for (int64_t pc = 0; pc < g.K; pc += kcb) {
      poll_cancel();  // base/cancel.h
      const int64_t kc = std::min(kcb, g.K - pc);
      const bool last = pc + kc == g.K;
      const bool acc = g.accumulate || pc > 0;
      const Epilogue* ep = last ? g.ep : nullptr;
      for (int64_t q = 0; q < npanels; ++q) {
        const int64_t col = q * NR;
        const size_t nr = static_cast<size_t>(std::min(NR, g.N - col));
        const float* bq;
        if constexpr (kLayout == BMatrix::Layout::kPanels)
          bq = g.b.data + q * g.b.stride + pc * NR;
        else if constexpr (kLayout == BMatrix::Layout::kRows)
          bq = g.b.data + pc * g.b.stride + col;
        else
          bq = g.b.data + col;
        const int64_t bstride = kLayout == BMatrix::Layout::kPanels ? NR : g.b.stride;
        const int64_t* offs = g.b.offs ? g.b.offs + pc : nullptr;
        // B read in place (a pointwise layer's X: its kc rows of the panel lie a row of
        // the image apart, each on its own page, which the hardware prefetchers do not
        // follow): the next panel's lines (or the next depth block's first) are fetched
        // into L2 while this panel's strips run, a slice of rows per strip. In-process A/B
        // on an Intel Xeon (family 6 model 207): ResNet-50 0.962-0.978x at 1 thread,
        // 0.978-0.982x at 2; DenseNet-121, EfficientNet-B0, ResNet-18, SqueezeNet even.
        // (Into L1 instead: 1.015x / 0.985x.)
        const int64_t nstrips = (mc + mr - 1) / mr;
        const float* bnext = nullptr;
        int64_t next_rows = 0;
        if constexpr (kLayout == BMatrix::Layout::kRows) {
          if (q + 1 < npanels) {
            bnext = bq + NR;
            next_rows = kc;
          } else if (pc + kc < g.K) {
            bnext = g.b.data + (pc + kc) * g.b.stride;
            next_rows = std::min(kcb, g.K - pc - kc);
          }
        }
        for (int64_t s = 0; s * mr < mc; ++s) {
          const int64_t row = ic + s * mr;
          if (bnext) {
            const int64_t r0 = s * next_rows / nstrips, r1 = (s + 1) * next_rows / nstrips;
            for (int64_t r = r0; r < r1; ++r) {
              const float* p = bnext + r * g.b.stride;
              __builtin_prefetch(p, 0, 2);
              __builtin_prefetch(p + NR - 1, 0, 2);
            }
          }
          const size_t rows = static_cast<size_t>(std::min(mr, g.m1 - row));
          const float* as[kMR];
          if constexpr (kPackedA) {
            as[0] = g.a + (row / mr) * g.lda + pc * mr;
          } else {
            for (size_t r = 0; r < kMR; ++r)
              as[r] = g.a + (row + static_cast<int64_t>(std::min(r, rows - 1))) * g.lda + pc;
          }
          float* cs = g.C + (row - g.m0) * g.ldc + col;
          if (prefetch && q + 1 < npanels) {
            const int64_t nxt = std::min(NR, g.N - col - NR);
            const float* zs = ep && ep->z ? ep->z + (row - g.m0) * ep->ldz + col + NR : nullptr;
            for (size_t r = 0; r < rows; ++r) {
              const float* cp = cs + static_cast<int64_t>(r) * g.ldc + NR;
              __builtin_prefetch(cp, 1, 2);
              __builtin_prefetch(cp + nxt - 1, 1, 2);
              if (zs) {
                const float* zp = zs + static_cast<int64_t>(r) * ep->ldz;
                __builtin_prefetch(zp, 0, 2);
                __builtin_prefetch(zp + nxt - 1, 0, 2);
              }
            }
          }
          if constexpr (kPackedA && kHasTail) {
            if (nr <= kTailCols && static_cast<size_t>(L) >= kMR) {
              MicroTail<kLayout>(static_cast<size_t>(kc), as[0], bq, bstride, offs, cs, g.ldc,
                                 rows, nr, acc, ep, row - g.m0, col);
              continue;
            }
          }
          if (nr > static_cast<size_t>(L))
            MicroRows<2, kLayout, kPackedA>(static_cast<size_t>(kc), as, bq, bstride, offs, cs, g.ldc,
                                        rows, nr, acc, ep, row - g.m0, col);
          else
            MicroRows<1, kLayout, kPackedA>(static_cast<size_t>(kc), as, bq, bstride, offs, cs, g.ldc,
                                        rows, nr, acc, ep, row - g.m0, col);
        }
      }
    }
  }
}

template <bool kPackedA>
void GemmA(const ConvGemmArgs& g) {
  switch (g.b.layout) {
    case BMatrix::Layout::kPanels:
      GemmLayout<BMatrix::Layout::kPanels, kPackedA>(g);
      break;
    case BMatrix::Layout::kRows:
      GemmLayout<BMatrix::Layout::kRows, kPackedA>(g);
      break;
    case BMatrix::Layout::kOffsets:
      GemmLayout<BMatrix::Layout::kOffsets, kPackedA>(g);
      break;
  }
}

void ConvGemm(const ConvGemmArgs& g) {
  if (g.a_packed)
    GemmA<true>(g);
  else
    GemmA<false>(g);
}

/// y[(m - m0) * ldy] = sum over p < K of a[m * lda + p] * x[p], four rows at a time so each
/// x vector is loaded once per four rows.
void Gemv(int64_t K, const float* a, int64_t lda, int64_t m0, int64_t m1, const float* x, float* y,
          int64_t ldy) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t kv = K - K % L;
  int64_t m = m0;
  for (; m + 4 <= m1; m += 4) {
    const float* r0 = a + m * lda;
    const float* r1 = r0 + lda;
    const float* r2 = r1 + lda;
    const float* r3 = r2 + lda;
    VF s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    for (int64_t p = 0; p < kv; p += L) {
      const VF xv = hn::LoadU(d, x + p);
      s0 = hn::MulAdd(hn::LoadU(d, r0 + p), xv, s0);
      s1 = hn::MulAdd(hn::LoadU(d, r1 + p), xv, s1);
      s2 = hn::MulAdd(hn::LoadU(d, r2 + p), xv, s2);
      s3 = hn::MulAdd(hn::LoadU(d, r3 + p), xv, s3);
    }
    float t0 = hn::GetLane(hn::SumOfLanes(d, s0)), t1 = hn::GetLane(hn::SumOfLanes(d, s1)),
          t2 = hn::GetLane(hn::SumOfLanes(d, s2)), t3 = hn::GetLane(hn::SumOfLanes(d, s3));
    for (int64_t p = kv; p < K; ++p) {
      t0 += r0[p] * x[p];
      t1 += r1[p] * x[p];
      t2 += r2[p] * x[p];
      t3 += r3[p] * x[p];
    }
    float* yr = y + (m - m0) * ldy;
    yr[0] = t0;
    yr[ldy] = t1;
    yr[2 * ldy] = t2;
    yr[3 * ldy] = t3;
  }
  for (; m < m1; ++m) {
    const float* r0 = a + m * lda;
    VF s0 = hn::Zero(d);
    for (int64_t p = 0; p < kv; p += L)
      s0 = hn::MulAdd(hn::LoadU(d, r0 + p), hn::LoadU(d, x + p), s0);
    float t0 = hn::GetLane(hn::SumOfLanes(d, s0));
    for (int64_t p = kv; p < K; ++p) t0 += r0[p] * x[p];
    y[(m - m0) * ldy] = t0;
  }
}

/// y[m - m0] for m in [m0, m1) = sum over p < K of at[p * ldat + m] * x[p]: the GEMV with W
/// transposed at planning, vectorized along the rows (no horizontal sums), four vectors of
/// rows per pass over x. Reads up to four vectors past m1 in each row of at.
void GemvT(int64_t K, const float* at, int64_t ldat, int64_t m0, int64_t m1, const float* x,
           float* y) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // The last block too is four whole vectors (rows of at are readable 4 vectors past m1);
  // only its store is cut to the rows there are.
  for (int64_t m = m0; m < m1; m += 4 * L) {
    VF s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    const float* c = at + m;
    for (int64_t p = 0; p < K; ++p, c += ldat) {
      const VF xv = hn::Set(d, x[p]);
      s0 = hn::MulAdd(hn::LoadU(d, c), xv, s0);
      s1 = hn::MulAdd(hn::LoadU(d, c + L), xv, s1);
      s2 = hn::MulAdd(hn::LoadU(d, c + 2 * L), xv, s2);
      s3 = hn::MulAdd(hn::LoadU(d, c + 3 * L), xv, s3);
    }
    HWY_ALIGN float tmp[4 * HWY_MAX_BYTES / sizeof(float)];
    const bool whole = m + 4 * L <= m1;
    float* out = whole ? y + (m - m0) : tmp;
    hn::StoreU(s0, d, out);
    hn::StoreU(s1, d, out + L);
    hn::StoreU(s2, d, out + 2 * L);
    hn::StoreU(s3, d, out + 3 * L);
    if (!whole) std::copy(tmp, tmp + (m1 - m), y + (m - m0));
  }
}

void ApplyEpilogue(float* y, int64_t rows, int64_t cols, int64_t ldy, const Epilogue& ep) {
  if (cols == 1 && ldy == 1 && (!ep.z || ep.ldz == 1)) {
    // One column stored contiguously (a GEMV's output): the rows are the vector lanes, each
    // with its own bias.
    const DF d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    for (int64_t i = 0; i < rows; i += L) {
      const int64_t n = std::min<int64_t>(L, rows - i);
      const auto mask = hn::FirstN(d, static_cast<size_t>(n));
      VF v = TailLoad(mask, d, y + i);
      if (ep.bias) v = hn::Add(v, TailLoad(mask, d, ep.bias + i));
      if (ep.z) v = hn::Add(v, TailLoad(mask, d, ep.z + i));
      TailStore(ApplyAct(d, v, ep.act), mask, d, y + i);
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i)
    EpilogueRow(y + i * ldy, ep.z ? ep.z + i * ep.ldz : nullptr, cols, ep.bias ? ep.bias[i] : 0.0f,
                ep.act);
}

int64_t MR() {
  return static_cast<int64_t>(kMR);
}
int64_t Lanes() {
  return static_cast<int64_t>(hn::Lanes(DF()));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(ConvGemm);
HWY_EXPORT(ApplyEpilogue);
HWY_EXPORT(Gemv);
HWY_EXPORT(GemvT);
HWY_EXPORT(MR);
HWY_EXPORT(Lanes);

int64_t conv_gemm_mr() {
  static const int64_t mr = HWY_DYNAMIC_DISPATCH(MR)();
  return mr;
}
int64_t conv_gemm_lanes() {
  static const int64_t l = HWY_DYNAMIC_DISPATCH(Lanes)();
  return l;
}
int64_t conv_gemm_nr() {
  return 2 * conv_gemm_lanes();
}

void conv_gemm(int64_t K, const float* a, int64_t lda, int64_t m0, int64_t m1, const BMatrix& b,
               int64_t N, float* C, int64_t ldc, bool accumulate, const Epilogue* ep) {
  if (m1 <= m0 || N <= 0) return;
  if (K == 0) {  // an empty sum: C keeps its value (or 0), then the epilogue
    if (!accumulate)
      for (int64_t m = 0; m < m1 - m0; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    if (ep) apply_epilogue(C, m1 - m0, N, ldc, *ep);
    return;
  }
  const ConvGemmArgs g{K, a, lda, m0, m1, b, N, C, ldc, accumulate, ep, false};
  HWY_DYNAMIC_DISPATCH(ConvGemm)(g);
}

void conv_gemm(int64_t K, const PackedA& a, int64_t m0, int64_t m1, const BMatrix& b, int64_t N,
               float* C, int64_t ldc, bool accumulate, const Epilogue* ep) {
  if (m1 <= m0 || N <= 0) return;
  if (K == 0) {
    conv_gemm(K, a.data, a.strip, m0, m1, b, N, C, ldc, accumulate, ep);
    return;
  }
  const ConvGemmArgs g{K, a.data, a.strip, m0, m1, b, N, C, ldc, accumulate, ep, true};
  HWY_DYNAMIC_DISPATCH(ConvGemm)(g);
}

int64_t conv_pack_a_size(int64_t rows, int64_t K) {
  const int64_t mr = conv_gemm_mr();
  // A vector of slack: the tail kernel loads a whole vector at each depth's MR values.
  return (rows + mr - 1) / mr * mr * K + conv_gemm_lanes();
}

void conv_pack_a(const float* a, int64_t lda, int64_t rows, int64_t K, float* out) {
  const int64_t mr = conv_gemm_mr();
  for (int64_t s = 0; s * mr < rows; ++s) {
    float* dst = out + s * mr * K;
    for (int64_t p = 0; p < K; ++p)
      for (int64_t r = 0; r < mr; ++r)
        dst[p * mr + r] = a[std::min(s * mr + r, rows - 1) * lda + p];
  }
}

void conv_gemv(int64_t K, const float* a, int64_t lda, int64_t m0, int64_t m1, const float* x,
               float* y, int64_t ldy, const Epilogue* ep) {
  if (m1 <= m0) return;
  HWY_DYNAMIC_DISPATCH(Gemv)(K, a, lda, m0, m1, x, y, ldy);
  if (ep) apply_epilogue(y, m1 - m0, 1, ldy, *ep);
}

int64_t conv_gemv_t_stride(int64_t M) {
  const int64_t L = conv_gemm_lanes();
  return (M + L - 1) / L * L + 4 * L;
}

void conv_gemv_t(int64_t K, const float* at, int64_t ldat, int64_t m0, int64_t m1, const float* x,
                 float* y, const Epilogue* ep) {
  if (m1 <= m0) return;
  HWY_DYNAMIC_DISPATCH(GemvT)(K, at, ldat, m0, m1, x, y);
  if (ep) apply_epilogue(y, m1 - m0, 1, 1, *ep);
}

void apply_epilogue(float* y, int64_t rows, int64_t cols, int64_t ldy, const Epilogue& ep) {
  if (rows <= 0 || cols <= 0) return;
  if (!ep.bias && !ep.z && ep.act.kind == Act::kNone) return;
  HWY_DYNAMIC_DISPATCH(ApplyEpilogue)(y, rows, cols, ldy, ep);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
