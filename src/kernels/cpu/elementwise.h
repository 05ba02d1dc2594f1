// Helpers shared by the optimized elementwise, activation, norm, softmax, pool and reduce
// kernels (src/kernels/cpu/): splitting work over the session's pool, and the factory
// checks they share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>

#include "kernels/kernel.h"
#include "runtime/thread_pool.h"

namespace onyx::kernels::cpu {

/// Runs fn(begin, end) over [0, n) in contiguous blocks of at least `grain` items, on
/// the pool when that gives more than one block (at most 4 per thread: the pool's
/// chunks_for), else on the calling thread. `grain` is chosen per kernel so that a block is some tens of
/// microseconds of work: small tensors never pay for waking a thread.
template <typename F>
void parallel_blocks(ThreadPool* pool, int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t blocks = pool ? pool->chunks_for(n, double(n), double(grain)) : 1;
  if (blocks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool->parallel_for(blocks, [&](int64_t b0, int64_t b1) { fn(b0 * n / blocks, b1 * n / blocks); });
}

/// True when the static type of input `i` is known to be a float tensor, or unknown
/// (then run() checks the dtype it sees).
inline bool maybe_float(const KernelInit& init, size_t i) {
  const ir::TypeInfo* t = init.input_type(i);
  return !t || t->kind != ir::TypeInfo::Kind::kTensor || t->elem == DType::kUndefined ||
         t->elem == DType::kFloat;
}

/// True when the tensor is float and has `numel` elements.
inline bool is_float(const Tensor& t) {
  return t.dtype() == DType::kFloat;
}

}  // namespace onyx::kernels::cpu
