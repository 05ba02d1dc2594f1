// Float SGEMM microkernels (see gemm.h). This file is compiled once per SIMD target
// through Highway's foreach_target.h; the code after HWY_ONCE is target-independent.
//
// Layout: op(B) is packed into panels of NR = 2 vectors of columns, [panel][K][NR].
// A row-major op(A) is read in place, MR row streams at a time; a transposed op(A) and the
// last partial strip of rows are packed into [KC][MR] strips (rows past M zero). The
// MR x NR microkernel keeps its 2 * MR accumulators in registers: MR = 8 with 512-bit
// vectors (32 registers), 6 with 256-bit, 4 with 128-bit ones. Blocking: KC = 256 of depth
// (an MR x KC strip and a KC x NR panel stay in L1), MC = 16 MR rows per block.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#ifndef ONYX_SIMD_GEMM_ARGS
#define ONYX_SIMD_GEMM_ARGS
#include "simd/gemm.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "onyx/error.h"
#include "runtime/thread_pool.h"

namespace onyx::simd {
/// One GEMM with op(B) already packed.
struct GemmArgs {
  bool trans_a;
  int64_t M, N, K;
  float alpha, beta;
  const float* A;
  int64_t lda;
  const float* B;  ///< packed panels [ceil(N / NR)][K][NR]
  float* C;
  int64_t ldc;
};
constexpr int64_t kKC = 256;  // depth of one pass: an MR x KC strip and a KC x NR panel stay in L1
}  // namespace onyx::simd
#endif

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

#if HWY_MAX_BYTES >= 64
constexpr size_t kMR = 8;
#elif HWY_MAX_BYTES >= 32
constexpr size_t kMR = 6;
#else
constexpr size_t kMR = 4;
#endif
constexpr int64_t kMC = static_cast<int64_t>(kMR) * 16;  // rows of op(A) per packed block (in L2)

/// c[mr x nr] = alpha * a * b + (first ? beta * c : c), b a packed [kc][NR] panel and a
/// either a packed [kc][kMR] strip (a_rows == nullptr) or kMR row pointers into op(A)
/// itself (a_rows[r][p]); rows >= mr and columns >= nr are padding and not stored.
HWY_INLINE void micro_kernel(size_t kc, const float* HWY_RESTRICT a, const float* const* a_rows,
                             const float* HWY_RESTRICT b, float* HWY_RESTRICT c, int64_t ldc,
                             size_t mr, size_t nr, float alpha, float beta, bool first) {
  const DF d;
  const size_t L = hn::Lanes(d), NR = 2 * L;
  using V = decltype(hn::Zero(d));
  V acc0[kMR], acc1[kMR];
  for (size_t r = 0; r < kMR; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  if (a_rows) {
    const float* rows[kMR];
    for (size_t r = 0; r < kMR; ++r) rows[r] = a_rows[r];
    for (size_t p = 0; p < kc; ++p) {
      const V b0 = hn::LoadU(d, b), b1 = hn::LoadU(d, b + L);
      for (size_t r = 0; r < kMR; ++r) {
        const V av = hn::Set(d, rows[r][p]);
        acc0[r] = hn::MulAdd(av, b0, acc0[r]);
        acc1[r] = hn::MulAdd(av, b1, acc1[r]);
      }
      b += NR;
    }
  } else {
    for (size_t p = 0; p < kc; ++p) {
      const V b0 = hn::LoadU(d, b), b1 = hn::LoadU(d, b + L);
      for (size_t r = 0; r < kMR; ++r) {
        const V av = hn::Set(d, a[r]);
        acc0[r] = hn::MulAdd(av, b0, acc0[r]);
        acc1[r] = hn::MulAdd(av, b1, acc1[r]);
      }
      a += kMR;
      b += NR;
    }
  }
  const V va = hn::Set(d, alpha), vb = hn::Set(d, beta);
  if (mr == kMR && nr == NR) {
    for (size_t r = 0; r < kMR; ++r) {
      float* cr = c + static_cast<int64_t>(r) * ldc;
      V v0 = hn::Mul(acc0[r], va), v1 = hn::Mul(acc1[r], va);
      if (!first) {
        v0 = hn::Add(v0, hn::LoadU(d, cr));
        v1 = hn::Add(v1, hn::LoadU(d, cr + L));
      } else if (beta != 0.0f) {
        v0 = hn::MulAdd(vb, hn::LoadU(d, cr), v0);
        v1 = hn::MulAdd(vb, hn::LoadU(d, cr + L), v1);
      }
      hn::StoreU(v0, d, cr);
      hn::StoreU(v1, d, cr + L);
    }
    return;
  }
  HWY_ALIGN float tmp[kMR * 2 * HWY_MAX_BYTES / sizeof(float)];
  for (size_t r = 0; r < kMR; ++r) {
    hn::Store(hn::Mul(acc0[r], va), d, tmp + r * NR);
    hn::Store(hn::Mul(acc1[r], va), d, tmp + r * NR + L);
  }
  for (size_t r = 0; r < mr; ++r) {
    float* cr = c + static_cast<int64_t>(r) * ldc;
    for (size_t t = 0; t < nr; ++t) {
      const float v = tmp[r * NR + t];
      if (!first)
        cr[t] += v;
      else
        cr[t] = beta != 0.0f ? v + beta * cr[t] : v;
    }
  }
}

/// Packs rows [i0, i0 + mc) and depths [p0, p0 + kc) of op(A) into kMR-row strips.
void pack_a(const GemmArgs& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  const int64_t mr = static_cast<int64_t>(kMR);
  for (int64_t s = 0; s * mr < mc; ++s) {
    float* strip = dst + s * kc * mr;
    for (int64_t r = 0; r < mr; ++r) {
      const int64_t i = i0 + s * mr + r;
      if (s * mr + r >= mc) {
        for (int64_t p = 0; p < kc; ++p) strip[p * mr + r] = 0.0f;
      } else if (!g.trans_a) {
        const float* src = g.A + i * g.lda + p0;
        for (int64_t p = 0; p < kc; ++p) strip[p * mr + r] = src[p];
      } else {
        const float* src = g.A + p0 * g.lda + i;
        for (int64_t p = 0; p < kc; ++p) strip[p * mr + r] = src[p * g.lda];
      }
    }
  }
}

/// C rows [m0, m1) and column panels [q0, q1) over the whole depth.
void GemmBlock(const GemmArgs& g, int64_t m0, int64_t m1, int64_t q0, int64_t q1) {
  const DF d;
  const int64_t NR = static_cast<int64_t>(2 * hn::Lanes(d));
  const int64_t mr = static_cast<int64_t>(kMR);
  thread_local std::vector<float> abuf;
  abuf.resize(static_cast<size_t>(kMC * kKC));
  for (int64_t ic = m0; ic < m1; ic += kMC) {
    const int64_t mc = std::min(kMC, m1 - ic);
    // Full strips of a row-major op(A) are read in place (kMR row streams); a transposed
    // op(A) and the last partial strip are packed.
    const int64_t full = g.trans_a ? 0 : mc / mr;
    for (int64_t pc = 0; pc < g.K; pc += kKC) {
      const int64_t kc = std::min(kKC, g.K - pc);
      if (full * mr < mc) pack_a(g, ic + full * mr, mc - full * mr, pc, kc, abuf.data());
      for (int64_t q = q0; q < q1; ++q) {
        const float* bp = g.B + q * g.K * NR + pc * NR;
        const size_t nr = static_cast<size_t>(std::min(NR, g.N - q * NR));
        for (int64_t s = 0; s * mr < mc; ++s) {
          float* cs = g.C + (ic + s * mr) * g.ldc + q * NR;
          if (s < full) {
            const float* rows[kMR];
            for (size_t r = 0; r < kMR; ++r)
              rows[r] = g.A + (ic + s * mr + static_cast<int64_t>(r)) * g.lda + pc;
            micro_kernel(static_cast<size_t>(kc), nullptr, rows, bp, cs, g.ldc, kMR, nr, g.alpha,
                         g.beta, pc == 0);
          } else {
            micro_kernel(static_cast<size_t>(kc), abuf.data() + (s - full) * kc * mr, nullptr, bp,
                         cs, g.ldc, static_cast<size_t>(std::min(mr, mc - s * mr)), nr, g.alpha,
                         g.beta, pc == 0);
          }
        }
      }
    }
  }
}

int64_t PanelWidth() {
  return static_cast<int64_t>(2 * hn::Lanes(DF()));
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
HWY_EXPORT(PanelWidth);
HWY_EXPORT(BlockRows);
HWY_EXPORT(TargetName);

namespace {

int64_t panel_width() {
  return HWY_DYNAMIC_DISPATCH(PanelWidth)();
}

/// Runs fn(begin, end) over [0, n) on the pool when there is one with more than one thread.
template <typename F>
void run_parallel(ThreadPool* pool, int64_t n, const F& fn) {
  if (pool && pool->size() > 1 && n > 1)
    pool->parallel_for(n, fn);
  else
    fn(0, n);
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

}  // namespace

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
  if (K * N >= (1 << 16))
    run_parallel(pool, npanels, pack);
  else
    pack(0, npanels);
  return pb;
}

void sgemm_panels(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* panels, float beta, float* C, int64_t ldc,
                  ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  const GemmArgs g{trans_a, M, N, K, alpha, beta, A, lda, panels, C, ldc};
  const int64_t nr = panel_width(), npanels = (N + nr - 1) / nr;
  const int64_t threads = pool ? pool->size() : 1;
  if (threads <= 1 || M * N * K < (1 << 18)) {
    HWY_DYNAMIC_DISPATCH(GemmBlock)(g, 0, M, 0, npanels);
    return;
  }
  // Tasks: row blocks x column chunks, at least two per thread where the shape allows.
  const int64_t mc = HWY_DYNAMIC_DISPATCH(BlockRows)();
  const int64_t row_blocks = (M + mc - 1) / mc;
  const int64_t col_chunks = row_blocks >= 2 * threads
                                 ? 1
                                 : std::min(npanels, (2 * threads + row_blocks - 1) / row_blocks);
  const int64_t per_chunk = (npanels + col_chunks - 1) / col_chunks;
  run_parallel(pool, row_blocks * col_chunks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / col_chunks, q = t % col_chunks;
      const int64_t q0 = q * per_chunk, q1 = std::min(npanels, q0 + per_chunk);
      if (q0 < q1) HWY_DYNAMIC_DISPATCH(GemmBlock)(g, r * mc, std::min(M, (r + 1) * mc), q0, q1);
    }
  });
}

void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool) {
  if (B.nr_ != panel_width())
    throw Error(ErrorCode::kRuntime, "sgemm_packed: B was packed for another SIMD target");
  sgemm_panels(trans_a, M, B.n_, B.k_, alpha, A, lda, B.data_.data(), beta, C, ldc, pool);
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  const PackedB pb = pack_b(trans_b, K, N, B, ldb, pool);
  sgemm_packed(trans_a, M, alpha, A, lda, pb, beta, C, ldc, pool);
}

int64_t gemm_panel_width() {
  return panel_width();
}

const char* gemm_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
