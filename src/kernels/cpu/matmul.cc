// Optimized float MatMul and Gemm, and the ai.onyx FusedMatMul (act(A @ B + bias)) and
// FusedGemm (act(Gemm)), on the SGEMM of src/simd/gemm. Made once per node at planning:
// a constant B (MatMul's when it is 2-D, Gemm's either transB) is packed then, once; the
// bias, a broadcast C and the activation go into the GEMM's epilogue, applied while each
// tile of Y is in cache. At run time: batched MatMul with numpy broadcasting (one GEMM
// over all the rows when B is shared), a vector operand as a GEMV, many small GEMMs
// spread over the threads. The twins are src/kernels/reference/matmul.cc (MatMul, Gemm)
// and the reference fused kernels; any case not covered (another dtype, a shape the
// reference rejects) runs the reference kernel, which gives the error.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"
#include "simd/gemm.h"

namespace onyx::kernels::cpu {
namespace {

bool is_float(const ir::TypeInfo* t) {
  return !t || !t->is_tensor() || t->elem == DType::kFloat || t->elem == DType::kUndefined;
}

/// The activation of a fused node (attributes `activation`, `activation_params`) into ep;
/// false when the epilogue does not take it.
bool fused_activation(const ir::Node& node, simd::Epilogue* ep) {
  return simd::set_activation(node.attr_s("activation", ""), node.attr_floats("activation_params"),
                              ep);
}

/// numpy.matmul geometry: the output dims and, per output batch, the matrix index of A
/// and of B.
struct Batches {
  int64_t M = 1, N = 1, K = 1;
  Dims out;
  std::vector<int64_t> a, b;
  /// True when every output batch multiplies its own matrix of A (in order) by one B:
  /// then the batches are the rows of a single GEMM.
  bool shared_b() const {
    for (size_t t = 0; t < a.size(); ++t)
      if (b[t] != b[0] || a[t] != static_cast<int64_t>(t)) return false;
    return true;
  }
};

/// False when the shapes do not multiply (the reference then gives the error).
bool plan_batches(const Dims& ad, const Dims& bd, Batches* p) {
  if (ad.empty() || bd.empty()) return false;
  Dims a = ad, b = bd;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  p->M = a[a.size() - 2];
  p->K = a[a.size() - 1];
  p->N = b[b.size() - 1];
  if (b[b.size() - 2] != p->K) return false;
  const size_t ra = a.size() - 2, rb = b.size() - 2, r = std::max(ra, rb);
  Dims batch(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k + ra >= r ? a[k + ra - r] : 1, db = k + rb >= r ? b[k + rb - r] : 1;
    if (da != db && da != 1 && db != 1) return false;
    batch[k] = da == 1 ? db : da;
  }
  p->out = batch;
  if (!a_vec) p->out.push_back(p->M);
  if (!b_vec) p->out.push_back(p->N);
  // An empty product needs no batch tables (and its batch dims may be huge: 2^40 x 0).
  if (p->M == 0 || p->N == 0 || std::find(batch.begin(), batch.end(), 0) != batch.end()) return true;
  const int64_t nb = dims_numel(batch);
  p->a.assign(static_cast<size_t>(nb), 0);
  p->b.assign(static_cast<size_t>(nb), 0);
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < nb; ++t) {
    int64_t ia = 0, ib = 0;
    for (size_t k = 0; k < r; ++k) {
      if (k + ra >= r) ia = ia * a[k + ra - r] + (a[k + ra - r] == 1 ? 0 : idx[k]);
      if (k + rb >= r) ib = ib * b[k + rb - r] + (b[k + rb - r] == 1 ? 0 : idx[k]);
    }
    p->a[static_cast<size_t>(t)] = ia;
    p->b[static_cast<size_t>(t)] = ib;
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < batch[k]) break;
      idx[k] = 0;
    }
  }
  return true;
}

/// y[M] = act(A[M x K] b[K] + bias[0]): a matrix times a vector, computed as the GEMV
/// b^T A^T (one row against the rows of A, read in place) so the long side is the GEMM's N.
void matrix_vector(int64_t M, int64_t K, const float* A, const float* b, const float* bias,
                   const simd::Epilogue& act, float* y, ThreadPool* pool) {
  simd::Epilogue ep = act;
  ep.row_bias = bias;  // the one row of the transposed product
  simd::sgemm(false, true, 1, M, K, 1.0f, b, K, A, K, 0.0f, y, M, pool, &ep);
}

/// Runs the node's reference kernel on ctx (for a case the optimized kernel does not take).
void fallback(KernelFn reference, KernelContext& ctx) {
  if (!reference) ctx.fail("this case has no reference kernel to run it");
  reference(ctx);
}

// A batch of GEMMs smaller than this (multiply-adds each) runs one GEMM per thread.
constexpr int64_t kSmallGemm = int64_t{1} << 20;

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(const KernelInit& init, bool fused, const simd::Epilogue& act)
      : reference_(init.reference), fused_(fused), act_(act) {
    if (!init.is_constant(1)) return;
    const Tensor& b = *init.constants[1];
    if (b.dtype() != DType::kFloat || b.rank() != 2 || b.dim(1) <= 1) return;
    packed_ = simd::pack_b(false, b.dim(0), b.dim(1), b.data<float>(), b.dim(1), init.pool);
    has_packed_ = true;
  }

  void run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Batches p;
    if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat ||
        !plan_batches(a.dims(), b.dims(), &p)) {
      fallback(reference_, ctx);
      return;
    }
    const float* bias = nullptr;
    if (fused_ && ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.dtype() != DType::kFloat || t.dims() != Dims{p.N})
        ctx.fail(
            "bias must be a float tensor of shape [{}] (the last dim of the product), got {} {}",
            p.N, dtype_name(t.dtype()), dims_str(t.dims()));
      bias = t.data<float>();
    }
    Dims want = p.out;
    if (bias && want.empty()) want = {1};  // a dot product plus a [1] bias broadcasts to [1]
    Tensor& y = ctx.output(0);
    if (y.dims() != want)
      ctx.fail("output has shape {}, expected {}", dims_str(y.dims()), dims_str(want));
    if (y.numel() == 0) return;
    const int64_t M = p.M, N = p.N, K = p.K, nb = static_cast<int64_t>(p.a.size());
    const float* ad = a.data<float>();
    const float* bd = b.data<float>();
    float* yd = y.data<float>();
    ThreadPool* pool = ctx.pool();
    simd::Epilogue ep = act_;
    ep.col_bias = bias;
    const bool shared = p.shared_b();
    if (N == 1) {  // matrix (or batch of rows) times a vector
      if (shared) {
        matrix_vector(nb * M, K, ad, bd + p.b[0] * K, bias, act_, yd, pool);
        return;
      }
      for_batches(pool, nb, M * K, [&](int64_t t, ThreadPool* inner) {
        matrix_vector(M, K, ad + p.a[static_cast<size_t>(t)] * M * K,
                      bd + p.b[static_cast<size_t>(t)] * K, bias, act_, yd + t * M, inner);
      });
      return;
    }
    if (has_packed_ && packed_.k() == K && packed_.n() == N && shared) {
      simd::sgemm_packed(false, nb * M, 1.0f, ad, K, packed_, 0.0f, yd, N, pool, &ep);
      return;
    }
    if (shared) {
      simd::sgemm(false, false, nb * M, N, K, 1.0f, ad, K, bd + p.b[0] * K * N, N, 0.0f, yd, N,
                  pool, &ep);
      return;
    }
    // Batched B (a constant B is 2-D, so shared): one GEMM per output batch.
    for_batches(pool, nb, M * N * K, [&](int64_t t, ThreadPool* inner) {
      simd::sgemm(false, false, M, N, K, 1.0f, ad + p.a[static_cast<size_t>(t)] * M * K, K,
                  bd + p.b[static_cast<size_t>(t)] * K * N, N, 0.0f, yd + t * M * N, N, inner, &ep);
    });
  }

  std::string_view name() const override {
    return has_packed_ ? "cpu.matmul.packed" : "cpu.matmul";
  }
  bool overwrites_outputs() const override { return true; }

 private:
  /// Runs fn(t, pool) for each of nb GEMMs: spread over the threads (each GEMM on one)
  /// when they are many and small, else one after the other, each on the pool.
  template <typename F>
  static void for_batches(ThreadPool* pool, int64_t nb, int64_t work, const F& fn) {
    if (pool && pool->size() > 1 && nb > 1 && work < kSmallGemm) {
      pool->parallel_for(nb, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) fn(t, nullptr);
      });
      return;
    }
    for (int64_t t = 0; t < nb; ++t) fn(t, pool);
  }

  KernelFn reference_;
  bool fused_;
  simd::Epilogue act_;  ///< the activation only (the bias is an input)
  bool has_packed_ = false;
  simd::PackedB packed_;  ///< a constant 2-D B, packed at planning
};

/// Gemm and FusedGemm: Y = act(alpha * op(A) * op(B) + beta * C), C broadcast to [M, N].
class GemmKernel final : public Kernel {
 public:
  GemmKernel(const KernelInit& init, const simd::Epilogue& act)
      : reference_(init.reference), act_(act) {
    const ir::Node& n = init.node;
    ta_ = n.attr_i("transA", 0) != 0;
    tb_ = n.attr_i("transB", 0) != 0;
    alpha_ = n.attr_f("alpha", 1.0f);
    beta_ = n.attr_f("beta", 1.0f);
    if (!init.is_constant(1)) return;
    const Tensor& b = *init.constants[1];
    if (b.dtype() != DType::kFloat || b.rank() != 2) return;
    const int64_t K = b.dim(tb_ ? 1 : 0), N = b.dim(tb_ ? 0 : 1);
    packed_ = simd::pack_b(tb_, K, N, b.data<float>(), b.dim(1), init.pool);
    has_packed_ = true;
  }

  void run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.rank() != 2 ||
        b.rank() != 2) {
      fallback(reference_, ctx);
      return;
    }
    const int64_t M = a.dim(ta_ ? 1 : 0), K = a.dim(ta_ ? 0 : 1), N = b.dim(tb_ ? 0 : 1);
    const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (b.dim(tb_ ? 1 : 0) != K || (c && (c->dtype() != DType::kFloat || c->rank() > 2))) {
      fallback(reference_, ctx);
      return;
    }
    Tensor& y = ctx.output(0);
    if (y.dims() != Dims{M, N})
      ctx.fail("output has shape {}, expected [{}, {}]", dims_str(y.dims()), M, N);
    if (y.numel() == 0) return;
    float* yd = y.data<float>();
    simd::Epilogue ep = act_;
    float beta = 0.0f;
    std::vector<float> scaled;  // beta * C where C is a broadcast vector or scalar
    const int64_t cm = c && c->rank() == 2 ? c->dim(0) : 1;
    const int64_t cn = c && c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N)) {  // C does not broadcast
      fallback(reference_, ctx);
      return;
    }
    if (c && beta_ != 0.0f) {
      const float* cd = c->data<float>();
      auto vec = [&](int64_t n, bool broadcast) -> const float* {
        if (beta_ == 1.0f && !broadcast) return cd;
        scaled.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
          scaled[static_cast<size_t>(i)] = beta_ * cd[broadcast ? 0 : i];
        return scaled.data();
      };
      if (cm == M && cn == N && M * N > 1) {
        if (beta_ == 1.0f) {
          ep.residual = cd;
          ep.ldr = N;
        } else {  // C into Y, then Y = alpha * AB + beta * Y
          std::memcpy(yd, cd, static_cast<size_t>(M * N) * sizeof(float));
          beta = beta_;
        }
      } else if (cn == N && N > 1) {
        ep.col_bias = vec(N, false);
      } else if (cm == M && M > 1) {
        ep.row_bias = vec(M, false);
      } else {  // a scalar: one value for every column
        ep.col_bias = vec(N, true);
      }
    }
    const float* ad = a.data<float>();
    if (has_packed_ && packed_.k() == K && packed_.n() == N)
      simd::sgemm_packed(ta_, M, alpha_, ad, a.dim(1), packed_, beta, yd, N, ctx.pool(), &ep);
    else
      simd::sgemm(ta_, tb_, M, N, K, alpha_, ad, a.dim(1), b.data<float>(), b.dim(1), beta, yd, N,
                  ctx.pool(), &ep);
  }

  std::string_view name() const override { return has_packed_ ? "cpu.gemm.packed" : "cpu.gemm"; }
  bool overwrites_outputs() const override { return true; }

 private:
  KernelFn reference_;
  simd::Epilogue act_;
  bool ta_ = false, tb_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool has_packed_ = false;
  simd::PackedB packed_;  ///< a constant B, packed (op(B), after transB) at planning
};

bool float_operands(const KernelInit& init) {
  return is_float(init.input_type(0)) && is_float(init.input_type(1));
}

std::unique_ptr<Kernel> make_matmul(const KernelInit& init) {
  if (!float_operands(init)) return nullptr;
  return std::make_unique<MatMulKernel>(init, false, simd::Epilogue{});
}

std::unique_ptr<Kernel> make_fused_matmul(const KernelInit& init) {
  simd::Epilogue act;
  if (!float_operands(init) || !fused_activation(init.node, &act)) return nullptr;
  return std::make_unique<MatMulKernel>(init, true, act);
}

std::unique_ptr<Kernel> make_gemm(const KernelInit& init) {
  if (!float_operands(init)) return nullptr;
  return std::make_unique<GemmKernel>(init, simd::Epilogue{});
}

std::unique_ptr<Kernel> make_fused_gemm(const KernelInit& init) {
  simd::Epilogue act;
  if (!float_operands(init) || !fused_activation(init.node, &act)) return nullptr;
  return std::make_unique<GemmKernel>(init, act);
}

}  // namespace

void register_matmul(Registry& r) {
  r.add_optimized("", "MatMul", 1, 1000, {DType::kFloat}, make_matmul);
  // Gemm before 7 had the `broadcast` attribute; the reference takes those.
  r.add_optimized("", "Gemm", 7, 1000, {DType::kFloat}, make_gemm);
  r.add_optimized("ai.onyx", "FusedMatMul", 1, 1, {DType::kFloat}, make_fused_matmul);
  r.add_optimized("ai.onyx", "FusedGemm", 1, 1, {DType::kFloat}, make_fused_gemm);
}

}  // namespace onyx::kernels::cpu
