// Row microkernels on Highway for the softmax, normalization, reduction and global pool
// kernels of src/kernels/cpu/: reductions of one contiguous row (in float, with several
// vector accumulators), softmax of a row or of a strided axis, and the affine maps that
// finish a normalization. Every function that writes y takes y == x (in place).
#pragma once
#include <cstdint>

namespace onyx::simd {

/// x[0] + ... + x[n-1] (0 for n == 0).
float row_sum(const float* x, int64_t n);
/// Sum of (x[i] - c)^2; *sum_dev gets the sum of (x[i] - c).
float row_sum_sq_dev(const float* x, int64_t n, float c, float* sum_dev);
/// Mean and (population) variance of n > 0 values, two passes: the mean, then the
/// deviations from it, whose sum corrects the mean's rounding error. The mean comes as
/// mean + mean_lo (mean_lo below half an ulp of mean: x - mean is exact for x near it,
/// then mean_lo is subtracted). False when the statistics overflow float (values past
/// about 1e19, or NaN/inf among them): the caller computes them otherwise.
bool row_mean_var(const float* x, int64_t n, float* mean, float* mean_lo, float* var);
/// The largest (max) or smallest value; NaN when any value is NaN; -inf (max) or +inf
/// (min) for n == 0.
float row_extreme(const float* x, int64_t n, bool max);

/// y[i] = (x[i] - c) * a + b (a normalization with one scale: subtracting c first keeps
/// the precision that x * a + (b - c * a) would lose when c is large).
void row_affine(const float* x, float* y, int64_t n, float c, float a, float b);
/// dst[i] = src[2 i] for i < n (a stride-2 row of an im2col). Reads src[0, 2 n - 1) and,
/// where `readable` (the floats readable from src) allows, up to a vector's worth more.
void row_gather_even(const float* src, int64_t n, float* dst, int64_t readable);
/// y[i] = (x[i] - mean - mean_lo) * inv * scale[i] + bias[i]; bias may be null (no bias).
void row_normalize(const float* x, float* y, int64_t n, float mean, float mean_lo, float inv,
                   const float* scale, const float* bias);
/// acc[i] = acc[i] op x[i] for op sum (kind 0), max (1, NaN wins) or min (2, NaN wins).
void row_accumulate(float* acc, const float* x, int64_t n, int kind);

/// Softmax (log = false) or LogSoftmax of one row of n values, as the reference computes
/// it: shift by the row's largest value (by 0 when that is infinite), exp, normalize.
void softmax_row(const float* x, float* y, int64_t n, bool log);
/// The same along an axis of length n whose elements are `stride` apart, for `inner`
/// adjacent columns: x[k * stride + j], k < n, j < inner, each column j one softmax.
/// scratch holds 2 * inner floats.
void softmax_columns(const float* x, float* y, int64_t n, int64_t stride, int64_t inner, bool log,
                     float* scratch);

}  // namespace onyx::simd
