// The GEMM of the convolution kernels: C[M x N] = A[M x K] * B[K x N] with A (the weights)
// read in place, row-major, MR row streams at a time, B in one of three layouts (im2col
// panels, rows of a matrix read in place, or rows at arbitrary offsets of a padded image:
// an implicit im2col), and the fused epilogue (bias, residual, activation) applied while
// the output tile is in registers. Single-threaded per call: the conv kernels thread over
// calls.
// Natively the widest SIMD target of the CPU is chosen at run time; SIMD128 in WebAssembly.
#pragma once
#include <cstdint>

#include "simd/conv_epilogue.h"

namespace onyx::simd {

/// Rows of C one microkernel call computes on the SIMD target of this process.
int64_t conv_gemm_mr();
/// Columns of one B panel (two vectors) on the SIMD target of this process.
int64_t conv_gemm_nr();
/// Floats one vector holds on this target.
int64_t conv_gemm_lanes();

/// Where row p, columns [j, j + NR) of B start. Panels: data + (j / NR) * panel_stride +
/// p * NR (im2col output, columns past N zero). Rows: data + p * ld + j (a row-major
/// matrix read in place). Offsets: data + offs[p] + j (an implicit im2col: row p of B is
/// a contiguous run of a padded image). Rows and Offsets read whole vectors: the memory
/// up to the last panel's full width must be readable (values past N are ignored).
struct BMatrix {
  enum class Layout { kPanels, kRows, kOffsets };
  Layout layout = Layout::kPanels;
  const float* data = nullptr;
  int64_t stride = 0;  ///< panel_stride (kPanels) or ld (kRows)
  const int64_t* offs = nullptr;
};

/// Rows [m0, m1) and columns [0, N) of the product of A (row-major: row m, depth p at
/// a[m * lda + p], a already at depth 0 of this call) and B over depths [0, K), written to
/// C: row m at C + (m - m0) * ldc. accumulate: add to C instead of overwriting it (the
/// later depth blocks of a longer sum). ep: the epilogue, applied by the call that adds the
/// last depth block (null: none); its bias and z are indexed like C, from row m0.
void conv_gemm(int64_t K, const float* a, int64_t lda, int64_t m0, int64_t m1, const BMatrix& b,
               int64_t N, float* C, int64_t ldc, bool accumulate, const Epilogue* ep);

/// A prepacked for conv_gemm (conv_pack_a): rows in strips of conv_gemm_mr(), strip s at
/// data + s * strip, its depth p at + p * MR, row s * MR + r of the strip at + r (a last
/// strip of fewer rows repeats its last row). data is at depth 0 of the call: for a depth
/// block starting at p0, data + p0 * MR.
struct PackedA {
  const float* data = nullptr;
  int64_t strip = 0;  ///< floats per strip: MR * the full depth
};

/// conv_gemm with A prepacked: rows m0, m1 as above, m0 a multiple of conv_gemm_mr(). The
/// microkernel's broadcasts then read one contiguous stream instead of MR rows K apart.
void conv_gemm(int64_t K, const PackedA& a, int64_t m0, int64_t m1, const BMatrix& b, int64_t N,
               float* C, int64_t ldc, bool accumulate, const Epilogue* ep);

/// Floats conv_pack_a writes for `rows` rows of depth K (and a vector of slack after).
int64_t conv_pack_a_size(int64_t rows, int64_t K);
/// Packs the row-major rows x K matrix a (row stride lda) into out (conv_pack_a_size floats):
/// strip s of MR rows at out + s * MR * K, depth p of it at + p * MR.
void conv_pack_a(const float* a, int64_t lda, int64_t rows, int64_t K, float* out);

/// The one-column case of conv_gemm (a 1x1 convolution of a 1x1 image, e.g. the
/// squeeze-excite convolutions after a global pooling): y[(m - m0) * ldy] for rows [m0, m1)
/// = a[m, :] . x[0, K), then the epilogue (bias and z indexed from row m0, z row stride
/// ep->ldz). Dot products along K instead of a GEMM panel that would be 1 / NR used.
void conv_gemv(int64_t K, const float* a, int64_t lda, int64_t m0, int64_t m1, const float* x,
               float* y, int64_t ldy, const Epilogue* ep);

/// conv_gemv with W transposed: at is [K x M] (row stride ldat; each row readable up to
/// four vectors past m1, see conv_gemv_t_stride), y[m - m0] for rows
/// [m0, m1) contiguous = sum over p of at[p * ldat + m] * x[p], then the epilogue (bias and z
/// indexed from row m0; z must be contiguous). Vectorized along the rows: no horizontal sums,
/// so short depths (a squeeze-excite block's 48 -> 1152) cost no more per multiply-add than
/// long ones; for few rows and a long depth (1152 -> 48) conv_gemv's dot products are
/// quicker (their chains are short).
void conv_gemv_t(int64_t K, const float* at, int64_t ldat, int64_t m0, int64_t m1, const float* x,
                 float* y, const Epilogue* ep);

/// The row stride of conv_gemv_t's transposed W for M rows: M rounded up to whole vectors
/// plus four vectors of slack (zeros), so every load stays inside the matrix.
int64_t conv_gemv_t_stride(int64_t M);

}  // namespace onyx::simd
