// Float SGEMM on Highway: C = alpha * op(A) * op(B) + beta * C, row-major, with a
// register-blocked FMA microkernel, cache blocking over K and M, and optional threading
// over row blocks and column chunks. Natively the widest target the CPU has is chosen at
// run time (AVX-512, AVX2, SSE4, ...); the WebAssembly build compiles SIMD128 statically.
#pragma once
#include <cstdint>
#include <vector>

namespace onyx {
class ThreadPool;
}

namespace onyx::simd {

/// B (K x N, after the optional transpose) packed once into column panels for
/// sgemm_packed: constant weights are packed at first use and reused by every call.
/// The panel width belongs to the SIMD target chosen in this process.
class PackedB {
 public:
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  bool empty() const { return data_.empty(); }

 private:
  friend PackedB pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
                        ThreadPool* pool);
  friend void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                           const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool);
  int64_t k_ = 0, n_ = 0, nr_ = 0;
  std::vector<float> data_;  ///< [ceil(N / nr)][K][nr], columns past N zero
};

/// C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C. op(A) is A (lda >= K) or,
/// with trans_a, the transpose of a K x M array A (lda >= M); likewise B. beta == 0
/// overwrites C without reading it (NaNs in C do not propagate). `pool` may be null.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           ThreadPool* pool = nullptr);

/// Packs op(B) (K x N) for sgemm_packed.
PackedB pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
               ThreadPool* pool = nullptr);

/// As sgemm, with op(B) packed by pack_b (its K and N).
void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool = nullptr);

/// The width (columns) of one B panel on the SIMD target of this process.
int64_t gemm_panel_width();

/// As sgemm_packed, with op(B) (K x N) given as panels [ceil(N / nr)][K][nr] that the
/// caller wrote (nr = gemm_panel_width(); columns past N zero), e.g. straight from im2col.
void sgemm_panels(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* panels, float beta, float* C, int64_t ldc,
                  ThreadPool* pool = nullptr);

/// The SIMD target the GEMM runs on in this process ("AVX2", "AVX3", "WASM", ...).
const char* gemm_target_name();

}  // namespace onyx::simd
