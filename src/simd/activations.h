// Elementwise float activations on Highway (natively the widest SIMD target the CPU has;
// SIMD128 in the WebAssembly build), in place. Within a few ulp of the libm functions.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// x[i] = 1 / (1 + exp(-x[i])).
void sigmoid_inplace(float* x, int64_t n);
/// x[i] = tanh(x[i]).
void tanh_inplace(float* x, int64_t n);

}  // namespace onyx::simd
