// Pooling microkernel on Highway for src/kernels/cpu/pool.cc: a plane is pooled in two
// passes. Strides 1 and 2 fold each output row's window rows first, straight from X, into
// a line padded with the fold's neutral value, then that line along the width, so every
// output is whole vectors (a max over a plane with NaN or infinities is done again the
// other way round, NaN-exact). Otherwise every input row is folded along the width first
// (vectors where every tap is inside the row, scalar loops at the edges), then the partial
// rows of each window's rows together.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// The geometry of a 2-D pooling window over one plane (pads at the top and left; the
/// bottom and right ones follow from the output extents).
struct PoolGeom {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
};

/// Pools one [ih, iw] plane x into the [oh, ow] plane y: the max (NaN when any tap is NaN)
/// or the sum over each window's taps inside the input. A window without a tap inside
/// gives -inf (max) or 0 (sum) — only where a whole output row has none; the caller fixes
/// up output columns without one. With row_scale set, y[oy][ox] is then multiplied by
/// row_scale[oy] * col_scale[ox] (an average's divisors). Strides 1 and 2 copy each input
/// row into a padded line first, so every output is whole vectors without bounds tests;
/// scratch is per thread.
/// Input rows the padded path copies into lines before it reads the first (pool.cc).
inline constexpr int64_t kPoolLines = 4;

void pool_plane(const PoolGeom& g, const float* x, float* y, bool max, const float* row_scale,
                const float* col_scale);

}  // namespace onyx::simd
