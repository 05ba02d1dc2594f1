// Depthwise 2-D float convolution (one input and one output channel per group, dilation 1)
// on Highway: each input plane is copied once into a zero-padded buffer whose rows are split
// into `stride_w` column phases, so every kernel tap reads a contiguous run of the row and
// the output row is accumulated in registers over all taps. Threads over (batch, channel)
// planes through the session's ThreadPool.
#pragma once
#include <cstdint>

namespace onyx {
class ThreadPool;
}

namespace onyx::simd {

/// y[n, c] = bias[c] + conv(x[n, c], w[c]) for NCHW x [batch, channels, ih, iw], w
/// [channels, 1, kh, kw], y [batch, channels, oh, ow]; pads ph/pw at the top/left (the
/// bottom/right pads follow from oh/ow). bias may be null; pool may be null.
void depthwise_conv2d(int64_t batch, int64_t channels, const float* x, int64_t ih, int64_t iw,
                      const float* w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                      int64_t pw, const float* bias, float* y, int64_t oh, int64_t ow,
                      ThreadPool* pool = nullptr);

}  // namespace onyx::simd
