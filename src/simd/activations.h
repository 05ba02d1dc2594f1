// Elementwise float functions and activations on Highway (natively the widest SIMD target
// the CPU has; SIMD128 in the WebAssembly build). Each follows the formula of its ONNX op
// and, for NaN, ±inf and ±0, what the reference kernel (src/kernels/reference/
// elementwise*.cc) returns; the transcendental ones are within a few ulp of libm (see
// src/simd/math-inl.h). Also the epilogue of fused Conv/Gemm kernels: call unary() with
// x == y.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// One elementwise float function. The parameters it reads from UnaryParams are named.
enum class Unary : int32_t {
  kIdentity,
  kRelu,         ///< x < 0 ? 0 : x
  kLeakyRelu,    ///< x < 0 ? a x : x
  kClip,         ///< min(max(x, a), b), NaN passes (a = min, b = max)
  kSigmoid,      ///< 1 / (1 + e^-x)
  kTanh,         ///< tanh x
  kHardSigmoid,  ///< max(0, min(1, a x + b)) with std::min/std::max's NaN behaviour
  kHardSwish,    ///< x * max(0, min(1, x / 6 + 1/2))
  kSwish,        ///< x * sigmoid(a x) (SiLU for a = 1)
  kGelu,         ///< x / 2 * (1 + erf(x / sqrt 2))
  kGeluTanh,     ///< x / 2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kExp,
  kLog,
  kSqrt,
  kReciprocal,  ///< 1 / x
  kNeg,
  kAbs,
  kErf,
  kSoftplus,         ///< log(1 + e^x)
  kMish,             ///< x * tanh(softplus x)
  kElu,              ///< x < 0 ? a (e^x - 1) : x
  kSelu,             ///< x > 0 ? b x : b a (e^x - 1) (a = alpha, b = gamma)
  kCelu,             ///< max(0, x) + min(0, a (e^(x / a) - 1))
  kThresholdedRelu,  ///< x > a ? x : 0
  kSoftsign,         ///< x / (1 + |x|)
  kFloor,
  kCeil,
  kRound,    ///< to nearest, halves to even
  kSign,     ///< 1, -1, or x itself (±0, NaN)
  kSquare,   ///< x^2 (Pow with exponent 2)
  kCube,     ///< x^3 (Pow with exponent 3)
  kSqrtPow,  ///< pow(x, 0.5): sqrt, but +inf at -inf
  kOne,      ///< 1 (Pow with exponent 0, NaN included)
};

/// Parameters of the functions that take some (see Unary).
struct UnaryParams {
  float a = 0, b = 0;
};

/// y[i] = op(x[i]) for i < n. y may be x (in place); otherwise they must not overlap.
void unary(Unary op, UnaryParams p, const float* x, float* y, int64_t n);

/// x[i] = 1 / (1 + exp(-x[i])).
void sigmoid_inplace(float* x, int64_t n);
/// x[i] = tanh(x[i]).
void tanh_inplace(float* x, int64_t n);

}  // namespace onyx::simd
