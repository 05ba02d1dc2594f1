// A float transpose of [R x S] matrices on Highway (L x L blocks transposed in registers;
// in src/simd/depthwise.cc, beside the depthwise kernel's register transpose), for the
// Transpose kernel's moves of the channels between first and last (src/opt/channels_last.cc).
#pragma once
#include <cstdint>

namespace onyx {
class ThreadPool;
}

namespace onyx::simd {

/// y[b] [S x R] = x[b] [R x S] transposed, for b < batch (pool may be null).
void transpose_2d(const float* x, int64_t batch, int64_t R, int64_t S, float* y, ThreadPool* pool);

/// y[c * ldy + r] = x[r * ldx + c] for r < rows, c < cols: one block of a larger transpose,
/// on the calling thread.
void transpose_block(const float* x, int64_t ldx, int64_t rows, int64_t cols, float* y, int64_t ldy);

}  // namespace onyx::simd
