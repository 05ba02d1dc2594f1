// The fused ops of domain "ai.onyx" (opset 1), made by the graph optimizer (src/opt/):
//   FusedConv(X, W, B?, Z?)   Conv's attributes + activation: Y = act(Conv(X, W, B) + Z)
//   FusedGemm(A, B, C?)       Gemm's attributes + activation: Y = act(Gemm(A, B, C))
//   FusedMatMul(A, B, bias?)  Y = act(MatMul(A, B) + bias), bias 1-D of length N
//   Gelu(X)                   as ONNX Gelu-20 (attribute approximate "none" | "tanh")
//   LayerNormalization        as ONNX LayerNormalization-17
//   Attention(Q, K, V, mask?) Y = softmax(Q K^T * scale + mask) V over the last axis
//   GlobalAveragePool(X)      as ONNX's
// FusedConv and GlobalAveragePool take `channels_last` (int, default 0): when 1, X, Z and
// Y hold the channels on their last axis ([N, H, W, C]; FusedConv's W stays [M, C/g, kH,
// kW]), as src/opt/channels_last.cc makes them; the reference moves them first and back.
// The activation of the first three is named by the string attribute `activation` ("" for
// none) with its parameters in the floats attribute `activation_params`. This header holds
// what every kernel of these ops (reference or optimized) parses the same way.
#pragma once
#include <string_view>

#include "ir/graph.h"

namespace onyx::kernels {

/// The domain of onyx's own ops.
inline constexpr std::string_view kOnyxDomain = "ai.onyx";

enum class FusedActivation {
  kNone,
  kRelu,
  kClip,  ///< params: min, max (absent: no bound)
  kSigmoid,
  kTanh,
  kLeakyRelu,    ///< params: alpha (absent: 0.01)
  kHardSigmoid,  ///< params: alpha, beta (absent: 0.2, 0.5): max(0, min(1, alpha x + beta))
  kHardSwish,    ///< x * max(0, min(1, x / 6 + 0.5))
  kSiLU,         ///< x * sigmoid(x)
  kGelu,         ///< 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,     ///< 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};

/// An activation with its parameters resolved (defaults filled in).
struct Activation {
  FusedActivation kind = FusedActivation::kNone;
  float alpha = 0;  ///< Clip min, LeakyRelu alpha, HardSigmoid alpha
  float beta = 0;   ///< Clip max, HardSigmoid beta
};

/// The attribute value naming `a` ("" for none, "Relu", "Clip", ...).
std::string_view activation_name(FusedActivation a);

/// Reads `activation` and `activation_params` of a fused node. Throws onyx::Error
/// (kInvalidModel) naming the node for an unknown name or a wrong number of parameters.
Activation parse_activation(const ir::Node& node);

}  // namespace onyx::kernels
