// PointwiseT (see conv_pointwise_t.h).
#include "kernels/cpu/conv_pointwise_t.h"

#include <algorithm>
#include <vector>

#include "runtime/thread_pool.h"
#include "simd/gemm.h"
#include "simd/transpose.h"

namespace onyx::kernels::cpu {

struct PointwiseT::Impl {
  int64_t maps = 0, channels = 0;
  simd::PackedB wt;     ///< W^T: K = channels, N = maps
  simd::Epilogue act;   ///< the activation only (biases and residual are per call)
};

PointwiseT::PointwiseT() : impl_(std::make_unique<Impl>()) {}
PointwiseT::~PointwiseT() = default;

std::unique_ptr<PointwiseT> PointwiseT::make(const float* w, int64_t maps, int64_t channels,
                                             const std::string& activation,
                                             const std::vector<float>& params) {
  std::unique_ptr<PointwiseT> p(new PointwiseT());
  if (!activation.empty() && !simd::set_activation(activation, params, &p->impl_->act))
    return nullptr;
  p->impl_->maps = maps;
  p->impl_->channels = channels;
  // op(B) = W^T with B = W given as N x K (trans_b).
  p->impl_->wt = simd::pack_b(true, channels, maps, w, channels, nullptr);
  return p;
}

int64_t PointwiseT::maps() const { return impl_->maps; }
int64_t PointwiseT::channels() const { return impl_->channels; }

bool pointwise_t_suits(int64_t os, int64_t maps, int64_t channels) {
  // Under two panels of positions (32 lanes each on AVX-512, 16 on AVX2) the direct tiles
  // are mostly masked; the transposed GEMM wants whole vectors of output channels.
  return os >= 1 && os < 64 && maps >= 32 && channels >= 16;
}

void PointwiseT::run(int64_t batch, const float* x, int64_t os, const float* bias, const float* z,
                     float* y, ThreadPool* pool) const {
  const Impl& m = *impl_;
  const int64_t M = m.maps, C = m.channels;
  thread_local std::vector<float> t;  // Y^T of one image: [os x maps]
  if (static_cast<int64_t>(t.size()) < os * M) t.resize(static_cast<size_t>(os * M));
  simd::Epilogue ep = m.act;
  ep.col_bias = bias;
  // With a residual the activation waits for it (act(conv + bias + z)).
  if (z) ep.act = simd::Activation::kNone;
  for (int64_t n = 0; n < batch; ++n) {
    // op(A) = X^T: A is X [C x os] read transposed.
    simd::sgemm_packed(true, os, 1.0f, x + n * C * os, os, m.wt, 0.0f, t.data(), M, pool, &ep);
    float* yn = y + n * M * os;
    const float* zn = z ? z + n * M * os : nullptr;
    const float* tn = t.data();  // (the caller's: t names each thread's own buffer)
    // Transposed back (vector blocks), then the residual and the activation, by blocks of
    // 16 output channels over the threads: on one thread and scalar this
    // was a serial tail after the threaded GEMM (EfficientNet's 1152 -> 192 at 7x7 with a
    // residual ran 0.22 ms on 2 threads, 0.32 on 1).
    constexpr int64_t kB = 16;
    const int64_t blocks = (M + kB - 1) / kB;
    auto finish = [&](int64_t b0, int64_t b1) {
      for (int64_t c0 = b0 * kB; c0 < std::min(M, b1 * kB); c0 += kB) {
        const int64_t c1 = std::min(M, c0 + kB);
        simd::transpose_block(tn + c0, M, os, c1 - c0, yn + c0 * os, os);
        if (zn) {
          for (int64_t i = c0 * os; i < c1 * os; ++i) yn[i] += zn[i];
          if (m.act.act != simd::Activation::kNone)
            simd::activation_inplace(m.act, yn + c0 * os, (c1 - c0) * os);
        }
      }
    };
    if (pool && pool->size() > 1 && blocks > 1 && M * os >= (int64_t(1) << 13))
      pool->parallel_for(blocks, finish);
    else
      finish(0, blocks);
  }
}

void PointwiseT::run_nhwc(int64_t rows, const float* x, const float* bias, const float* z, float* y,
                          ThreadPool* pool) const {
  const Impl& m = *impl_;
  simd::Epilogue ep = m.act;
  ep.col_bias = bias;
  ep.residual = z;
  ep.ldr = m.maps;
  simd::sgemm_packed(false, rows, 1.0f, x, m.channels, m.wt, 0.0f, y, m.maps, pool, &ep);
}

}  // namespace onyx::kernels::cpu
