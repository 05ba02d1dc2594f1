// The fused epilogue of the convolution kernels (ai.onyx FusedConv: Y = act(conv + bias + Z)),
// shared by the GEMM, depthwise and Winograd microkernels of src/simd/. Target-independent
// definitions; the vector code is in conv_epilogue-inl.h.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// The activations FusedConv fuses (its `activation` attribute).
enum class Act : int32_t {
  kNone,
  kRelu,         ///< x < 0 ? 0 : x (NaN stays NaN)
  kClip,         ///< clamp to [alpha, beta] (NaN stays NaN)
  kLeakyRelu,    ///< x < 0 ? alpha * x : x
  kHardSigmoid,  ///< max(0, min(1, alpha * x + beta))
  kHardSwish,    ///< x * max(0, min(1, x / 6 + 1 / 2))
  kSigmoid,      ///< 1 / (1 + exp(-x))
  kTanh,         ///< tanh(x)
  kSiLU,         ///< x * sigmoid(x)
  kGelu,         ///< x / 2 * (1 + erf(x / sqrt(2)))
  kGeluTanh,     ///< x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
};

/// An activation with its parameters (Clip: alpha = min, beta = max; LeakyRelu: alpha;
/// HardSigmoid: alpha, beta).
struct Activation {
  Act kind = Act::kNone;
  float alpha = 0.0f, beta = 0.0f;
};

/// What happens to every output value v at row m (output channel), column j after the
/// sum: v = act(v + bias[m] + z[m * ldz + j]). Row and column numbers are those of the
/// matrix the kernel writes (its row 0 is bias[0], z[0]). bias and z may be null.
struct Epilogue {
  const float* bias = nullptr;
  const float* z = nullptr;
  int64_t ldz = 0;
  Activation act;
};

/// y[i * ldy + j] = act(y[...] + bias[i] + z[i * ldz + j]) for rows i < rows and columns
/// j < cols, with the same vector arithmetic as the fused kernels (for paths that write the
/// sums first, e.g. ConvTranspose's col2im).
void apply_epilogue(float* y, int64_t rows, int64_t cols, int64_t ldy, const Epilogue& ep);

}  // namespace onyx::simd
