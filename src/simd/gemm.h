// Float SGEMM on Highway: C = epilogue(alpha * op(A) * op(B) + beta * C), row-major, with
// register-blocked FMA microkernels, cache blocking over K and M, B prepacked once for
// constant weights (PackedB), a no-packing path for a few rows of A (GEMV for M = 1), a
// fused epilogue (biases, a residual, an activation) applied to each C tile while it is in
// registers or L1, and threading over row blocks and column chunks. Natively the widest
// target the CPU has is chosen at run time (AVX-512, AVX2, SSE4, ...); the WebAssembly
// build compiles SIMD128 statically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string_view>
#include <vector>

#include "base/big_alloc.h"

namespace onyx {
class ThreadPool;
}

namespace onyx::simd {

/// An activation applied in the GEMM epilogue (the ai.onyx fused ops' `activation`).
enum class Activation : uint8_t {
  kNone,
  kRelu,
  kClip,         ///< p0 = min, p1 = max
  kLeakyRelu,    ///< p0 = alpha
  kHardSigmoid,  ///< max(0, min(1, p0 * x + p1))
  kHardSwish,    ///< x * max(0, min(1, x / 6 + 1 / 2))
  kSigmoid,
  kTanh,
  kSiLU,      ///< x * sigmoid(x)
  kGelu,      ///< 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,  ///< 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};

/// The activation named `name` as the fused ops spell it ("" none, "Relu", "Clip",
/// "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "SiLU", "Gelu", "GeluTanh");
/// false when the name is not one of them.
bool parse_activation(std::string_view name, Activation* out);

/// What the GEMM does to each C element on its final write:
///   c = act(alpha * sum + beta * c_old + row_bias[i] + col_bias[j] + residual[i, j]).
/// Every pointer may be null (term absent). The residual must not overlap C (to add C
/// itself, use beta = 1).
struct Epilogue {
  const float* row_bias = nullptr;  ///< [M]: one value per row (a convolution's bias)
  const float* col_bias = nullptr;  ///< [N]: one value per column (a Gemm/MatMul bias)
  const float* residual = nullptr;  ///< [M x N] with leading dimension ldr
  int64_t ldr = 0;
  Activation act = Activation::kNone;
  float p0 = 0.0f, p1 = 0.0f;  ///< activation parameters (see Activation)
};

/// Sets ep's activation from a fused op's `activation` name and `activation_params`;
/// false (ep unchanged) when the name is not one of parse_activation's or the parameter
/// count is not the one the activation takes (Clip: min, max; LeakyRelu: alpha;
/// HardSigmoid: alpha, beta; the others: none).
bool set_activation(std::string_view name, const std::vector<float>& params, Epilogue* ep);

/// x[i] = act(x[i]) for the activation of `ep` (its biases and residual are not used).
void activation_inplace(const Epilogue& ep, float* x, int64_t n);

/// An allocator of 64-byte-aligned memory (panels start on a cache line).
template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT implicit
  T* allocate(size_t n) {
    void* p = alloc_aligned(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const AlignedAllocator&) const { return true; }
};

/// B (K x N, after the optional transpose) packed once into column panels for
/// sgemm_packed: constant weights are packed at planning and reused by every call (and by
/// concurrent calls: sgemm_packed only reads it). The panel width belongs to the SIMD
/// target chosen in this process.
class PackedB {
 public:
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  bool empty() const { return data_.empty(); }
  /// Bytes held.
  size_t bytes() const { return data_.size() * sizeof(float); }

 private:
  friend PackedB pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
                        ThreadPool* pool);
  friend void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                           const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool,
                           const Epilogue* epilogue);
  int64_t k_ = 0, n_ = 0, nr_ = 0;
  std::vector<float, AlignedAllocator<float>>
      data_;  ///< [ceil(N / nr)][K][nr], columns past N zero
};

/// C[M x N] = epilogue(alpha * op(A)[M x K] * op(B)[K x N] + beta * C). op(A) is A
/// (lda >= K) or, with trans_a, the transpose of a K x M array A (lda >= M); likewise B.
/// beta == 0 overwrites C without reading it (NaNs in C do not propagate). `pool` may be
/// null. A few rows (M small) read B in place; otherwise B is packed for this call.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           ThreadPool* pool = nullptr, const Epilogue* epilogue = nullptr);

/// Packs op(B) (K x N) for sgemm_packed.
PackedB pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
               ThreadPool* pool = nullptr);

/// As sgemm, with op(B) packed by pack_b (its K and N).
void sgemm_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& B, float beta, float* C, int64_t ldc, ThreadPool* pool = nullptr,
                  const Epilogue* epilogue = nullptr);

/// The width (columns) of one B panel on the SIMD target of this process.
int64_t gemm_panel_width();

/// As sgemm_packed, with op(B) (K x N) given as panels [ceil(N / nr)][K][nr] that the
/// caller wrote (nr = gemm_panel_width(); columns past N zero), e.g. straight from im2col.
void sgemm_panels(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* panels, float beta, float* C, int64_t ldc,
                  ThreadPool* pool = nullptr, const Epilogue* epilogue = nullptr);

/// The SIMD target the GEMM runs on in this process ("AVX2", "AVX3", "WASM", ...).
const char* gemm_target_name();

}  // namespace onyx::simd
