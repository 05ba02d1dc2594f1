// Reference kernels of the matmul family: MatMul, Gemm, MatMulInteger, QLinearMatMul
// and Det here; Einsum in matmul_einsum.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/arith.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_matmul_einsum(Registry& r);
/// C[M, N] = A[M, K] * B[K, N] in float, row-major with leading dimensions; C is
/// overwritten. Shared with matmul_einsum.cc.
void matmul_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float* C, int64_t ldc);

namespace {

/// The accumulator of the plain kernel: double for double, 64-bit wrapping integers
/// for integers (a narrowing cast of the sum gives numpy's wrapped result).
template <typename T>
using mm_acc_t = std::conditional_t<std::is_floating_point_v<T>, T,
                                    std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

/// The plain reference: C = A * B with i-k-j order over a row accumulator.
template <typename T>
void gemm_plain(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
                T* C, int64_t ldc) {
  using W = mm_acc_t<T>;
  std::vector<W> row(static_cast<size_t>(N));
  CancelPoll poll;
  for (int64_t i = 0; i < M; ++i) {
    poll(K * N);
    std::fill(row.begin(), row.end(), W(0));
    for (int64_t k = 0; k < K; ++k) {
      const W a = static_cast<W>(A[i * lda + k]);
      const T* b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] = wadd(row[static_cast<size_t>(j)], wmul(a, static_cast<W>(b[j])));
    }
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = static_cast<T>(row[static_cast<size_t>(j)]);
  }
}

// c[0..n) += a0*b0 + a1*b1 + a2*b2 + a3*b3; restrict lets the compiler vectorize.
inline void axpy4(float* __restrict c, const float* __restrict b0, const float* __restrict b1,
                  const float* __restrict b2, const float* __restrict b3, float a0, float a1,
                  float a2, float a3, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
}
inline void axpy1(float* __restrict c, const float* __restrict b, float a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] += a * b[j];
}
// Four rows of C at once, four k at a time: each loaded B value feeds four rows.
// a points at A[i][k] with row stride lda; c at C[i][j0] with row stride ldc.
inline void rows4_k4(float* __restrict c0, float* __restrict c1, float* __restrict c2,
                     float* __restrict c3, const float* __restrict b0, const float* __restrict b1,
                     const float* __restrict b2, const float* __restrict b3, const float* a,
                     int64_t lda, int64_t n) {
  const float a00 = a[0], a01 = a[1], a02 = a[2], a03 = a[3];
  const float a10 = a[lda], a11 = a[lda + 1], a12 = a[lda + 2], a13 = a[lda + 3];
  const float a20 = a[2 * lda], a21 = a[2 * lda + 1], a22 = a[2 * lda + 2], a23 = a[2 * lda + 3];
  const float a30 = a[3 * lda], a31 = a[3 * lda + 1], a32 = a[3 * lda + 2], a33 = a[3 * lda + 3];
  for (int64_t j = 0; j < n; ++j) {
    const float v0 = b0[j], v1 = b1[j], v2 = b2[j], v3 = b3[j];
    c0[j] += a00 * v0 + a01 * v1 + a02 * v2 + a03 * v3;
    c1[j] += a10 * v0 + a11 * v1 + a12 * v2 + a13 * v3;
    c2[j] += a20 * v0 + a21 * v1 + a22 * v2 + a23 * v3;
    c3[j] += a30 * v0 + a31 * v1 + a32 * v2 + a33 * v3;
  }
}

float dot_f32(const float* a, const float* b, int64_t stride_b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  if (stride_b == 1)
    for (; k + 8 <= n; k += 8)
      for (int u = 0; u < 8; ++u) s[u] += a[k + u] * b[k + u];
  float r = 0;
  for (; k < n; ++k) r += a[k] * b[k * stride_b];
  return r + ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

void matmul_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float* C, int64_t ldc) {
  if (N == 1) {  // matrix-vector: a dot product per row
    for (int64_t i = 0; i < M; ++i) C[i * ldc] = dot_f32(A + i * lda, B, ldb, K);
    return;
  }
  for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
  // Blocks of B (kKc x kNc floats, 128 KiB) stay in L2 while every row of A passes;
  // the C row segment stays in L1.
  constexpr int64_t kKc = 128, kNc = 256;
  for (int64_t j0 = 0; j0 < N; j0 += kNc) {
    const int64_t nb = std::min(kNc, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      poll_cancel();
      const int64_t kb = std::min(kKc, K - k0);
      int64_t i = 0;
      for (; i + 4 <= M; i += 4) {
        float* c = C + i * ldc + j0;
        const float* a = A + i * lda + k0;
        const float* b = B + k0 * ldb + j0;
        int64_t k = 0;
        for (; k + 4 <= kb; k += 4)
          rows4_k4(c, c + ldc, c + 2 * ldc, c + 3 * ldc, b + k * ldb, b + (k + 1) * ldb,
                   b + (k + 2) * ldb, b + (k + 3) * ldb, a + k, lda, nb);
        for (; k < kb; ++k)
          for (int64_t r = 0; r < 4; ++r) axpy1(c + r * ldc, b + k * ldb, a[r * lda + k], nb);
      }
      for (; i < M; ++i) {
        float* c = C + i * ldc + j0;
        const float* a = A + i * lda + k0;
        const float* b = B + k0 * ldb + j0;
        int64_t k = 0;
        for (; k + 4 <= kb; k += 4)
          axpy4(c, b + k * ldb, b + (k + 1) * ldb, b + (k + 2) * ldb, b + (k + 3) * ldb, a[k],
                a[k + 1], a[k + 2], a[k + 3], nb);
        for (; k < kb; ++k) axpy1(c, b + k * ldb, a[k], nb);
      }
    }
  }
}

namespace {

/// C = A * B for any numeric T: float through matmul_gemm_f32, 16-bit floats through float
/// copies, the rest through gemm_plain.
template <typename T>
void gemm_any(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
              T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    matmul_gemm_f32(M, N, K, A, lda, B, ldb, C, ldc);
  } else if constexpr (is_half_v<T>) {
    std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N)), c(static_cast<size_t>(M * N));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) a[static_cast<size_t>(i * K + k)] = static_cast<float>(A[i * lda + k]);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) b[static_cast<size_t>(k * N + j)] = static_cast<float>(B[k * ldb + j]);
    matmul_gemm_f32(M, N, K, a.data(), K, b.data(), N, c.data(), N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = T(c[static_cast<size_t>(i * N + j)]);
  } else {
    gemm_plain(M, N, K, A, lda, B, ldb, C, ldc);
  }
}

/// numpy.matmul geometry: per output batch, the offsets of the A and B matrices.
struct MatMulPlan {
  int64_t M = 1, N = 1, K = 1;
  Dims out;
  std::vector<int64_t> a_batch, b_batch;  ///< matrix index of A and B per output batch
};

MatMulPlan plan_matmul(const KernelContext& ctx, const Dims& ad, const Dims& bd) {
  if (ad.empty() || bd.empty()) ctx.fail("operands must have rank >= 1, got scalars");
  Dims a = ad, b = bd;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a[a.size() - 1];
  p.N = b[b.size() - 1];
  if (b[b.size() - 2] != p.K)
    ctx.fail("inner dimensions do not match: A is {}, B is {}", dims_str(ad), dims_str(bd));
  const size_t ra = a.size() - 2, rb = b.size() - 2, r = std::max(ra, rb);
  Dims batch(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t da = k + ra >= r ? a[k + ra - r] : 1;
    int64_t db = k + rb >= r ? b[k + rb - r] : 1;
    if (da != db && da != 1 && db != 1)
      ctx.fail("batch dimensions cannot broadcast: A is {}, B is {}", dims_str(ad), dims_str(bd));
    batch[k] = da == 1 ? db : da;
  }
  // An empty output (M or N of 0) needs no batch table, however many batches it has.
  const int64_t nb = p.M == 0 || p.N == 0 ? 0 : dims_numel(batch);
  p.a_batch.resize(static_cast<size_t>(nb));
  p.b_batch.resize(static_cast<size_t>(nb));
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < nb; ++t) {
    int64_t ia = 0, ib = 0;
    for (size_t k = 0; k < r; ++k) {
      if (k + ra >= r) ia = ia * a[k + ra - r] + (a[k + ra - r] == 1 ? 0 : idx[k]);
      if (k + rb >= r) ib = ib * b[k + rb - r] + (b[k + rb - r] == 1 ? 0 : idx[k]);
    }
    p.a_batch[static_cast<size_t>(t)] = ia;
    p.b_batch[static_cast<size_t>(t)] = ib;
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < batch[k]) break;
      idx[k] = 0;
    }
  }
  p.out = batch;
  if (!a_vec) p.out.push_back(p.M);
  if (!b_vec) p.out.push_back(p.N);
  return p;
}

void check_out(const KernelContext& ctx, const Tensor& y, const Dims& want) {
  if (y.dims() != want)
    ctx.fail("output has shape {}, expected {}", dims_str(y.dims()), dims_str(want));
}

void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("A and B must have one dtype, got {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  Tensor& y = ctx.output(0);
  MatMulPlan p = plan_matmul(ctx, a.dims(), b.dims());
  check_out(ctx, y, p.out);
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* ad = a.data<T>();
    const T* bd = b.data<T>();
    T* yd = y.data<T>();
    // A batch of A against one shared B is a single GEMM with the batches as rows.
    bool shared_b = true;
    for (size_t t = 0; t < p.a_batch.size() && shared_b; ++t)
      shared_b = p.b_batch[t] == 0 && p.a_batch[t] == static_cast<int64_t>(t);
    if (shared_b && p.a_batch.size() > 1) {
      gemm_any<T>(p.M * static_cast<int64_t>(p.a_batch.size()), p.N, p.K, ad, p.K, bd, p.N, yd, p.N);
      return;
    }
    for (size_t t = 0; t < p.a_batch.size(); ++t)
      gemm_any<T>(p.M, p.N, p.K, ad + p.a_batch[t] * p.M * p.K, p.K, bd + p.b_batch[t] * p.K * p.N,
                  p.N, yd + static_cast<int64_t>(t) * p.M * p.N, p.N);
  }, "MatMul");
}

void gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must be 2-D, got {} and {}", dims_str(a.dims()), dims_str(b.dims()));
  if (a.dtype() != b.dtype()) ctx.fail("A and B must have one dtype");
  const bool ta = ctx.attr_i("transA", 0) != 0, tb = ctx.attr_i("transB", 0) != 0;
  const float alpha = ctx.attr_f("alpha", 1.0f), beta = ctx.attr_f("beta", 1.0f);
  const int64_t M = a.dim(ta ? 1 : 0), K = a.dim(ta ? 0 : 1);
  const int64_t N = b.dim(tb ? 0 : 1);
  if (b.dim(tb ? 1 : 0) != K)
    ctx.fail("inner dimensions do not match: op(A) is [{}, {}], op(B) is [{}, {}]", M, K,
             b.dim(tb ? 1 : 0), N);
  Tensor& y = ctx.output(0);
  check_out(ctx, y, {M, N});
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  int64_t cm = 1, cn = 1;  // C's extents; 1 broadcasts
  if (c) {
    if (c->dtype() != a.dtype()) ctx.fail("C must have the dtype of A");
    if (c->rank() > 2) ctx.fail("C must have rank <= 2, got {}", dims_str(c->dims()));
    if (c->rank() >= 1) cn = c->dim(c->rank() - 1);
    if (c->rank() == 2) cm = c->dim(0);
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
      ctx.fail("C of shape {} cannot broadcast to [{}, {}]", dims_str(c->dims()), M, N);
  }
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // 16-bit floats compute in float and round once at the end.
    using U = std::conditional_t<is_half_v<T>, float, T>;
    auto load = [](const Tensor& t, bool trans, int64_t rows, int64_t cols, std::vector<U>& buf) -> const U* {
      // Returns op(t) as a row-major rows x cols array (a copy when transposed or converted).
      const T* p = t.data<T>();
      if (!trans && std::is_same_v<T, U>) return reinterpret_cast<const U*>(p);
      buf.resize(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q)
          buf[static_cast<size_t>(r * cols + q)] = static_cast<U>(p[trans ? q * rows + r : r * cols + q]);
      return buf.data();
    };
    std::vector<U> abuf, bbuf, cbuf, ybuf;
    const U* ap = load(a, ta, M, K, abuf);
    const U* bp = load(b, tb, K, N, bbuf);
    const U* cd = c ? load(*c, false, 1, c->numel(), cbuf) : nullptr;
    U* yd;
    if constexpr (std::is_same_v<T, U>) {
      yd = y.data<T>();
    } else {
      ybuf.resize(static_cast<size_t>(M * N));
      yd = ybuf.data();
    }
    gemm_any<U>(M, N, K, ap, K, bp, N, yd, N);
    if (alpha != 1.0f || (c && beta != 0.0f)) {
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          U& v = yd[i * N + j];
          const U* cv = cd && beta != 0.0f ? &cd[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)] : nullptr;
          if constexpr (std::is_integral_v<U>) {
            if (alpha == 1.0f && beta == 1.0f) {
              v = wadd(v, *cv);
              continue;
            }
          }
          double r = static_cast<double>(alpha) * static_cast<double>(v);
          if (cv) r += static_cast<double>(beta) * static_cast<double>(*cv);
          v = static_cast<U>(r);
        }
    }
    if constexpr (!std::is_same_v<T, U>)
      for (size_t k = 0; k < ybuf.size(); ++k) y.data<T>()[k] = T(ybuf[k]);
  }, "Gemm");
}

/// How many rows x cols matrices `numel` elements hold (0 for an empty tensor, whose
/// rows * cols may not even fit int64).
int64_t matrices(int64_t numel, int64_t rows, int64_t cols) {
  int64_t rc = 0;
  return numel > 0 && mul_fits(rows, cols, rc) && rc > 0 ? numel / rc : 0;
}

/// Integer operand minus its zero point, as int32. The zero point is a scalar, one
/// per row of A / column of B (1-D, or [..., M, 1] / [..., 1, N] with A's / B's batch),
/// per the MatMulInteger and QLinearMatMul specs.

std::vector<int32_t> shifted(const KernelContext& ctx, const Tensor& x, const Tensor* zp,
                             bool per_row, const char* what) {
  Dims d = x.dims();
  if (d.size() == 1) {
    if (per_row) d.insert(d.begin(), 1);
    else d.push_back(1);
  }
  const int64_t rows = d[d.size() - 2], cols = d[d.size() - 1];
  const int64_t per = per_row ? rows : cols;
  auto load = [&](const Tensor& t, auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<int32_t> v(static_cast<size_t>(t.numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int32_t>(t.data<T>()[k]);
    return v;
  };
  auto load_any = [&](const Tensor& t) {
    switch (t.dtype()) {
      case DType::kInt8: return load(t, Tag<int8_t>{});
      case DType::kUint8: return load(t, Tag<uint8_t>{});
      case DType::kInt16: return load(t, Tag<int16_t>{});
      case DType::kUint16: return load(t, Tag<uint16_t>{});
      case DType::kInt32: return load(t, Tag<int32_t>{});
      default: ctx.fail("{} has unsupported dtype {}", what, dtype_name(t.dtype()));
    }
  };
  std::vector<int32_t> out = load_any(x);
  if (!zp) return out;
  if (zp->dtype() != x.dtype())
    ctx.fail("the zero point of {} must have its dtype {}, got {}", what, dtype_name(x.dtype()),
             dtype_name(zp->dtype()));
  std::vector<int32_t> z = load_any(*zp);
  const int64_t nz = static_cast<int64_t>(z.size());
  const int64_t mats = matrices(x.numel(), rows, cols);
  if (nz == 1) {
    for (int32_t& v : out) v -= z[0];
  } else if (nz == per || nz == per * mats) {
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          int64_t zi = (per_row ? r : c) + (nz == per ? 0 : m * per);
          out[static_cast<size_t>((m * rows + r) * cols + c)] -= z[static_cast<size_t>(zi)];
        }
  } else {
    ctx.fail("the zero point of {} has {} elements; expected 1 or one per {} ({})", what, nz,
             per_row ? "row" : "column", per);
  }
  return out;
}

/// int32 batched matmul with 32-bit wrap-around accumulation.
std::vector<int32_t> int_matmul(const MatMulPlan& p, const std::vector<int32_t>& a,
                                const std::vector<int32_t>& b) {
  const size_t nb = p.a_batch.size();
  std::vector<int32_t> y(static_cast<size_t>(static_cast<int64_t>(nb) * p.M * p.N));
  std::vector<uint32_t> row(static_cast<size_t>(p.N));
  for (size_t t = 0; t < nb; ++t) {
    const int32_t* ap = a.data() + p.a_batch[t] * p.M * p.K;
    const int32_t* bp = b.data() + p.b_batch[t] * p.K * p.N;
    int32_t* yp = y.data() + static_cast<int64_t>(t) * p.M * p.N;
    for (int64_t i = 0; i < p.M; ++i) {
      poll_cancel();
      std::fill(row.begin(), row.end(), 0u);
      for (int64_t k = 0; k < p.K; ++k) {
        uint32_t av = static_cast<uint32_t>(ap[i * p.K + k]);
        for (int64_t j = 0; j < p.N; ++j) row[static_cast<size_t>(j)] += av * static_cast<uint32_t>(bp[k * p.N + j]);
      }
      for (int64_t j = 0; j < p.N; ++j) yp[i * p.N + j] = static_cast<int32_t>(row[static_cast<size_t>(j)]);
    }
  }
  return y;
}

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MatMulPlan p = plan_matmul(ctx, a.dims(), b.dims());
  Tensor& y = ctx.output(0);
  check_out(ctx, y, p.out);
  std::vector<int32_t> as = shifted(ctx, a, ctx.has_input(2) ? &ctx.input(2) : nullptr, true, "A");
  std::vector<int32_t> bs = shifted(ctx, b, ctx.has_input(3) ? &ctx.input(3) : nullptr, false, "B");
  std::vector<int32_t> r = int_matmul(p, as, bs);
  std::copy(r.begin(), r.end(), y.data<int32_t>());
}

/// Scales of QLinearMatMul as floats (float, float16 or bfloat16 tensors).
std::vector<float> scales(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(t.data<T>()[k]);
  }, what);
  return v;
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  MatMulPlan p = plan_matmul(ctx, a.dims(), b.dims());
  Tensor& y = ctx.output(0);
  check_out(ctx, y, p.out);
  std::vector<int32_t> as = shifted(ctx, a, &ctx.input(2), true, "a");
  std::vector<int32_t> bs = shifted(ctx, b, &ctx.input(5), false, "b");
  std::vector<int32_t> acc = int_matmul(p, as, bs);
  std::vector<float> sa = scales(ctx, ctx.input(1), "a_scale");
  std::vector<float> sb = scales(ctx, ctx.input(4), "b_scale");
  std::vector<float> sy = scales(ctx, ctx.input(6), "y_scale");
  const Tensor& yz = ctx.input(7);
  if (sy.size() != 1 || yz.numel() != 1)
    fail_unsupported("{}: only a per-tensor (scalar) y_scale and y_zero_point are supported",
                     ctx.node().describe());
  if (yz.dtype() != y.dtype()) ctx.fail("y_zero_point must have the output dtype");
  // Scale index per output element: a's scale follows the row, b's the column, each
  // either shared, per matrix row/column, or per batch and row/column.
  auto scale_at = [&](const std::vector<float>& s, int64_t per, int64_t which, int64_t mat) -> float {
    if (s.size() == 1) return s[0];
    if (static_cast<int64_t>(s.size()) == per) return s[static_cast<size_t>(which)];
    return s[static_cast<size_t>(mat * per + which)];
  };
  const int64_t na = static_cast<int64_t>(sa.size()), nbs = static_cast<int64_t>(sb.size());
  const int64_t a_mats = matrices(a.numel(), p.M, p.K);
  const int64_t b_mats = matrices(b.numel(), p.K, p.N);
  if (na != 1 && na != p.M && na != p.M * a_mats)
    ctx.fail("a_scale has {} elements; expected 1 or one per row ({})", na, p.M);
  if (nbs != 1 && nbs != p.N && nbs != p.N * b_mats)
    ctx.fail("b_scale has {} elements; expected 1 or one per column ({})", nbs, p.N);
  auto quantize = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double zp = static_cast<double>(yz.data<T>()[0]);
    const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    T* yd = y.data<T>();
    for (size_t t = 0; t < p.a_batch.size(); ++t)
      for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) {
          int64_t at = (static_cast<int64_t>(t) * p.M + i) * p.N + j;
          float mult = scale_at(sa, p.M, i, p.a_batch[t]) * scale_at(sb, p.N, j, p.b_batch[t]) / sy[0];
          double v = std::nearbyint(static_cast<double>(acc[static_cast<size_t>(at)]) * mult) + zp;
          if (std::isnan(v)) v = zp;  // a NaN/inf scale: the zero point, as QuantizeLinear
          yd[at] = static_cast<T>(std::clamp(v, lo, hi));
        }
  };
  switch (y.dtype()) {
    case DType::kInt8: quantize(Tag<int8_t>{}); break;
    case DType::kUint8: quantize(Tag<uint8_t>{}); break;
    default: ctx.fail("output dtype must be int8 or uint8, got {}", dtype_name(y.dtype()));
  }
}

/// Determinant by LU decomposition with partial pivoting, in double.
void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 ([*, M, M]), got {}", dims_str(x.dims()));
  const int64_t n = x.dim(x.rank() - 1);
  if (x.dim(x.rank() - 2) != n) ctx.fail("input matrices must be square, got {}", dims_str(x.dims()));
  Tensor& y = ctx.output(0);
  const int64_t mats = y.numel();
  if (mats == 0) return;  // no matrix: n * n need not even fit int64
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> m(static_cast<size_t>(n * n));
    for (int64_t t = 0; t < mats; ++t) {
      const T* src = x.data<T>() + t * n * n;
      for (size_t k = 0; k < m.size(); ++k) m[k] = static_cast<double>(src[k]);
      double det = 1;
      for (int64_t c = 0; c < n && det != 0; ++c) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < n; ++r)
          if (std::abs(m[static_cast<size_t>(r * n + c)]) > std::abs(m[static_cast<size_t>(piv * n + c)])) piv = r;
        if (m[static_cast<size_t>(piv * n + c)] == 0) {
          det = 0;
          break;
        }
        if (piv != c) {
          for (int64_t k = 0; k < n; ++k) std::swap(m[static_cast<size_t>(c * n + k)], m[static_cast<size_t>(piv * n + k)]);
          det = -det;
        }
        const double d = m[static_cast<size_t>(c * n + c)];
        det *= d;
        for (int64_t r = c + 1; r < n; ++r) {
          const double f = m[static_cast<size_t>(r * n + c)] / d;
          if (f == 0) continue;
          for (int64_t k = c; k < n; ++k) m[static_cast<size_t>(r * n + k)] -= f * m[static_cast<size_t>(c * n + k)];
        }
      }
      if constexpr (is_half_v<T>) y.data<T>()[t] = T(static_cast<float>(det));
      else y.data<T>()[t] = static_cast<T>(det);
    }
  }, "Det");
}

}  // namespace

void register_matmul(Registry& r) {
  r.add("", "MatMul", 1, 1000, numeric_types(), matmul_kernel);
  r.add("", "Gemm", 1, 1000, numeric_types(), gemm_kernel);
  r.add("", "MatMulInteger", 10, 1000, {DType::kInt8, DType::kUint8}, matmul_integer_kernel);
  r.add("", "QLinearMatMul", 10, 1000, {DType::kInt8, DType::kUint8}, qlinear_matmul_kernel);
  r.add("", "Det", 11, 1000, float_types(), det_kernel);
  register_matmul_einsum(r);
}

}  // namespace onyx::kernels
