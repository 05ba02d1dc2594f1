// Products of a few rows by a matrix already packed in the panel layout of sgemm_panels
// ([ceil(N / nr)][K][nr], nr = gemm_panel_width(), columns past N zero): the per-step
// matrix-vector products of recurrent cells (batch 1..4) and one-query attention blocks,
// where sgemm's MR-row microkernel would spend most of its FMAs on padding rows.
// Natively the widest SIMD target the CPU has; SIMD128 in the WebAssembly build.
#pragma once
#include <cstddef>
#include <cstdint>

namespace onyx::simd {

/// Floats pack_panels writes for a K x N matrix.
size_t panels_size(int64_t K, int64_t N);

/// Packs op(B) (K x N; B itself, ldb >= N, or with trans_b the transpose of an N x K
/// array, ldb >= K) into panels_size(K, N) floats at dst, for sgemm_panels and small_gemm.
void pack_panels(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, float* dst);

/// C[M x N] = A[M x K] * B, or C += A * B with `accumulate`; B packed by pack_panels (or
/// any panels of that layout). Any M; meant for M <= 4, where it keeps several panels'
/// accumulators in registers per row.
void small_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* panels,
                float* C, int64_t ldc, bool accumulate = false);

}  // namespace onyx::simd
