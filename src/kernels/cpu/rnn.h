// Optimized kernels of the rnn family (float), twins of src/kernels/reference/rnn.cc.
#pragma once
#include "kernels/kernel.h"

namespace onyx::kernels::cpu {

/// Float LSTM with GEMM input projections and a packed recurrence matrix. Returns false,
/// without touching the outputs, for a case it does not cover (any dtype but float,
/// non-default activations, shapes the reference would reject); the reference runs it.
bool lstm_f32(KernelContext& ctx);

}  // namespace onyx::kernels::cpu
