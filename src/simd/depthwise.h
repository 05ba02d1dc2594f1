// Direct 2-D float convolution with one input channel per group (depthwise, group == C,
// with `mult` output channels per input channel: 1 for depthwise, M for a single-channel
// input such as the first layer of a digit reader) on Highway, with the fused epilogue.
// Each task copies the input rows it reads once into zero-padded planes split by stride
// phase (rows and columns), so every kernel tap of a block of output rows reads one
// contiguous run; outputs are accumulated in registers over all taps, four independent
// vectors at a time (per row for wide rows, over the whole block for narrow ones, e.g. the
// 7x7 and 14x14 images of MobileNet's last stages), and finished (bias, residual,
// activation) before their only store. Threads over (image, channel, block of output rows)
// through the session's ThreadPool.
//
// Small planes (rows under four vectors) and strided or dilated windows go to a
// channel-blocked kernel instead: a vector holds one pixel of L channels (L the vector's
// floats), the input rows of L channels are transposed (in registers, L x L at a time)
// into [row][column][L], every tap of an output is then one vector FMA whatever the
// stride, and the output rows are transposed back to the channel planes with the
// epilogue. Threads over (image, block of L channels, block of output rows).
#pragma once
#include <cstdint>
#include <vector>

#include "simd/conv_epilogue.h"

namespace onyx {
class ThreadPool;
}

namespace onyx::simd {

/// x [batch, channels, ih, iw], w [channels * mult, 1, kh, kw], y [batch, channels * mult,
/// oh, ow]: y[n, c * mult + k] = act(conv(x[n, c], w[c * mult + k]) + bias + z). pads ph/pw
/// at the top/left (the bottom/right ones follow from oh/ow). ep.bias is indexed by output
/// channel, ep.z has y's layout (ep.ldz is not used).
/// Which kernel runs it: kAuto picks by shape; kPlanes is the per-plane kernel (every
/// shape); kBlocked the channel-blocked one (L channels per vector; mult == 1 only, else
/// kPlanes runs). Tests name one to check both on every shape.
enum class DwKernel { kAuto, kPlanes, kBlocked };

struct DepthwiseArgs {
  int64_t batch = 1, channels = 1, mult = 1;
  const float* x = nullptr;
  int64_t ih = 0, iw = 0;
  const float* w = nullptr;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  float* y = nullptr;
  int64_t oh = 0, ow = 0;
  Epilogue ep;
  DwKernel kernel = DwKernel::kAuto;
  /// W in the channel-blocked kernel's layout (depthwise_pack_blocked, made once for a
  /// constant W), or null: that kernel then lays W out on each call.
  const float* w_blocked = nullptr;
  /// Channels last: x [batch, ih, iw, channels], y and ep.z [batch, oh, ow, channels]
  /// (mult 1 only; W as above). Runs on the channel-blocked kernel, which then reads each
  /// pixel's channels in place and writes Y without transposes.
  bool nhwc = false;
};

/// Whether depthwise_conv2d takes `a` with nhwc set (mult 1, and the blocked kernel's
/// buffer within 4M floats).
bool depthwise_nhwc_suits(const DepthwiseArgs& a);

/// W [channels, 1, kh, kw] (one output channel per input channel) in the channel-blocked
/// kernel's layout, [ceil(channels / L)][kh * kw][L] with L the SIMD target's floats per
/// vector (lanes past the last channel zero).
std::vector<float> depthwise_pack_blocked(const float* w, int64_t channels, int64_t taps);

/// Runs the convolution (pool may be null).
void depthwise_conv2d(const DepthwiseArgs& a, ThreadPool* pool = nullptr);

/// Whether depthwise_conv2d runs `a` on the channel-blocked kernel (for tests: it never does
/// where that kernel's buffer would pass 4M floats).
bool depthwise_uses_blocked(const DepthwiseArgs& a);

}  // namespace onyx::simd
