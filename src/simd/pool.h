// Pooling microkernels on Highway for src/kernels/cpu/pool.cc, which pools a plane in two
// passes: every input row along the width (pool_row), then the rows of each window
// (row_accumulate of rows.h).
#pragma once
#include <cstdint>

namespace onyx::simd {

/// h[ox] for ox < ow folds x[ox * sw - pw + k * dw], k < kw, over the taps inside
/// [0, iw): the largest value (max; NaN when any is NaN; -inf when no tap is inside) or
/// the sum (0 when none is). Whole vectors of outputs are loaded directly for strides 1
/// and 2 where every tap is inside the row.
void pool_row(const float* x, int64_t iw, float* h, int64_t ow, int64_t kw, int64_t sw, int64_t pw,
              int64_t dw, bool max);

/// y[i] *= s * v[i] (an average pool's divisors: one per output row times one per column).
void scale_row(float* y, const float* v, float s, int64_t n);

}  // namespace onyx::simd
