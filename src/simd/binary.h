// Elementwise float binary arithmetic on Highway: one row of a broadcast (both operands
// running, or one of them a single value). src/kernels/cpu/elementwise.cc splits a
// broadcast into such rows.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// A binary float op; Max, Min and PRelu follow the reference kernels on NaN.
enum class Binary : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,    ///< NaN in either operand gives NaN
  kMin,    ///< NaN in either operand gives NaN
  kPRelu,  ///< a < 0 ? b * a : a (a = X, b = slope)
};

/// y[i] = op(a[i * a_step], b[i * b_step]) for i < n, each step 0 (one value) or 1. y may
/// be an operand that steps by 1 (in place); it must not overlap one that does not.
void binary(Binary op, const float* a, int a_step, const float* b, int b_step, float* y, int64_t n);

}  // namespace onyx::simd
