// Few-row GEMM on packed panels (see small_gemm.h), compiled once per SIMD target
// through Highway's foreach_target.h; the code after HWY_ONCE is target-independent.
//
// A block is MR rows (1, 2 or 4) by P panels of NR = 2 vectors of columns, with its
// MR * P * 2 accumulators in registers (8 with 128/256-bit vectors, 16 with 512-bit
// ones): one row streams through P panels at once, so the FMAs of a matrix-vector
// product do not wait on each other.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/small_gemm.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "simd/small_gemm.h"

#include <algorithm>

#include "simd/gemm.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

#if HWY_MAX_BYTES >= 64
constexpr size_t kAcc = 16;
#else
constexpr size_t kAcc = 8;
#endif

/// C[MR rows, np * NR columns from c] (+)= a rows * np panels from b; ncols of them are
/// real (the rest is panel padding and not stored).
template <size_t MR, size_t P>
HWY_INLINE void block(size_t K, const float* const* a, const float* HWY_RESTRICT b, size_t pstride,
                      float* HWY_RESTRICT c, int64_t ldc, size_t ncols, bool accumulate) {
  const DF d;
  const size_t L = hn::Lanes(d), NR = 2 * L;
  using V = decltype(hn::Zero(d));
  V acc[MR][P][2];
  for (size_t r = 0; r < MR; ++r)
    for (size_t q = 0; q < P; ++q) acc[r][q][0] = acc[r][q][1] = hn::Zero(d);
  const float* rows[MR];
  for (size_t r = 0; r < MR; ++r) rows[r] = a[r];
  for (size_t p = 0; p < K; ++p) {
    V b0[P], b1[P];
    for (size_t q = 0; q < P; ++q) {
      b0[q] = hn::LoadU(d, b + q * pstride + p * NR);
      b1[q] = hn::LoadU(d, b + q * pstride + p * NR + L);
    }
    for (size_t r = 0; r < MR; ++r) {
      const V av = hn::Set(d, rows[r][p]);
      for (size_t q = 0; q < P; ++q) {
        acc[r][q][0] = hn::MulAdd(av, b0[q], acc[r][q][0]);
        acc[r][q][1] = hn::MulAdd(av, b1[q], acc[r][q][1]);
      }
    }
  }
  for (size_t r = 0; r < MR; ++r) {
    float* cr = c + static_cast<int64_t>(r) * ldc;
    for (size_t q = 0; q < P; ++q) {
      float* cq = cr + q * NR;
      const size_t w = std::min(NR, ncols - std::min(ncols, q * NR));
      if (w == NR) {
        V v0 = acc[r][q][0], v1 = acc[r][q][1];
        if (accumulate) {
          v0 = hn::Add(v0, hn::LoadU(d, cq));
          v1 = hn::Add(v1, hn::LoadU(d, cq + L));
        }
        hn::StoreU(v0, d, cq);
        hn::StoreU(v1, d, cq + L);
        continue;
      }
      HWY_ALIGN float tmp[2 * HWY_MAX_BYTES / sizeof(float)];
      hn::Store(acc[r][q][0], d, tmp);
      hn::Store(acc[r][q][1], d, tmp + L);
      for (size_t t = 0; t < w; ++t) cq[t] = accumulate ? cq[t] + tmp[t] : tmp[t];
    }
  }
}

/// All column panels for rows a[0..MR). A function per MR (noinline), so that a JIT
/// (WebAssembly) compiles and optimizes only the row counts a model runs (an LSTM of
/// batch 1: MR = 1).
template <size_t MR>
HWY_NOINLINE void row_group(int64_t N, int64_t K, const float* const* a, const float* panels,
                          float* c, int64_t ldc, bool accumulate) {
  constexpr size_t P = kAcc / (2 * MR);
  const int64_t NR = static_cast<int64_t>(2 * hn::Lanes(DF()));
  const int64_t np = (N + NR - 1) / NR;
  const size_t pstride = static_cast<size_t>(K * NR);
  int64_t q = 0;
  for (; q + static_cast<int64_t>(P) <= np; q += static_cast<int64_t>(P))
    block<MR, P>(static_cast<size_t>(K), a, panels + q * K * NR, pstride, c + q * NR, ldc,
                 static_cast<size_t>(N - q * NR), accumulate);
  for (; q < np; ++q)
    block<MR, 1>(static_cast<size_t>(K), a, panels + q * K * NR, pstride, c + q * NR, ldc,
                 static_cast<size_t>(N - q * NR), accumulate);
}

void SmallGemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* panels,
               float* C, int64_t ldc, bool accumulate) {
  int64_t i = 0;
  const float* rows[4];
  while (i < M) {
    const int64_t mr = M - i >= 4 ? 4 : (M - i >= 2 ? 2 : 1);
    for (int64_t r = 0; r < mr; ++r) rows[r] = A + (i + r) * lda;
    float* c = C + i * ldc;
    if (mr == 4)
      row_group<4>(N, K, rows, panels, c, ldc, accumulate);
    else if (mr == 2)
      row_group<2>(N, K, rows, panels, c, ldc, accumulate);
    else
      row_group<1>(N, K, rows, panels, c, ldc, accumulate);
    i += mr;
  }
}

int64_t SmallPanelWidth() {
  return static_cast<int64_t>(2 * hn::Lanes(DF()));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(SmallGemm);
HWY_EXPORT(SmallPanelWidth);

size_t panels_size(int64_t K, int64_t N) {
  const int64_t nr = gemm_panel_width();
  return static_cast<size_t>((N + nr - 1) / nr * K * nr);
}

void pack_panels(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, float* dst) {
  const int64_t nr = gemm_panel_width();
  for (int64_t q = 0; q * nr < N; ++q) {
    float* panel = dst + q * K * nr;
    const int64_t j0 = q * nr, w = std::min(nr, N - j0);
    for (int64_t p = 0; p < K; ++p) {
      float* row = panel + p * nr;
      if (!trans_b)
        std::copy(B + p * ldb + j0, B + p * ldb + j0 + w, row);
      else
        for (int64_t t = 0; t < w; ++t) row[t] = B[(j0 + t) * ldb + p];
      std::fill(row + w, row + nr, 0.0f);
    }
  }
}

void small_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* panels,
                float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  const int64_t nr = gemm_panel_width();
  if (K > 0 && HWY_DYNAMIC_DISPATCH(SmallPanelWidth)() == nr) {
    HWY_DYNAMIC_DISPATCH(SmallGemm)(M, N, K, A, lda, panels, C, ldc, accumulate);
    return;
  }
  // K == 0, or a GEMM target whose panels this file's target does not read.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const float* col = panels + (j / nr) * K * nr + j % nr;
      float s = 0;
      for (int64_t p = 0; p < K; ++p) s += A[i * lda + p] * col[p * nr];
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + s : s;
    }
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
