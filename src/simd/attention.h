// Row primitives of the fused attention kernel (src/kernels/cpu/attention.cc): a block of
// scores is scaled, capped and biased with its maximum found in one pass, then
// exponentiated and summed in a second. Natively the widest SIMD target the CPU has;
// SIMD128 in the WebAssembly build.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// s[j] = c(s[j] * scale) + bias[j] for j < n, where c(x) = softcap * tanh(x / softcap)
/// when softcap > 0 and x otherwise, and bias may be null (no bias). Returns the maximum
/// of the results (-inf when n == 0 or every result is -inf).
float attention_scores(float* s, int64_t n, float scale, float softcap, const float* bias);

/// s[j] = exp(s[j] - m) for j < n (0 where s[j] is -inf); returns the sum. m is finite.
float attention_exp_sum(float* s, int64_t n, float m);

}  // namespace onyx::simd
