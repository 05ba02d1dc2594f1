// The transforms of Winograd F(4x4, 3x3) (Lavin & Gray's points 0, +-1, +-2, infinity) on
// Highway, vectorized across tiles: one vector holds the same element of L consecutive
// 4x4 output tiles of a tile row. The input transform V = B^T d B takes 6x6 input patches
// (tiles overlap by 2), the output transform Y = A^T M A gives 4x4 outputs and applies the
// fused epilogue. The GEMMs between them (one per transform position) are simd::conv_gemm.
#pragma once
#include <cstdint>

#include "simd/conv_epilogue.h"

namespace onyx::simd {

/// Tiles one transform call handles at most (the vector width in floats).
int64_t winograd_lanes();

/// Input transform of n <= winograd_lanes() consecutive tiles of one tile row of one
/// channel. rows[r] (r < 6) is input row 4 * tile_row + r - pad_top, already zero-padded,
/// at the first tile's first column; 4 * winograd_lanes() + 4 floats of it are read.
/// Position xi = 6 * i + k of local tile t (t < n) goes to
/// v[xi * xi_stride + ((first + t) / nr) * panel_stride + (first + t) % nr], where nr =
/// conv_gemm_nr() (the GEMM's B panel layout, one channel's row).
void winograd_input(const float* const rows[6], int64_t n, float* v, int64_t xi_stride,
                    int64_t panel_stride, int64_t first);

/// Output transform of n <= winograd_lanes() consecutive tiles of one tile row of one
/// output channel: m[xi * xi_stride + t] is the GEMM result of position xi for local tile
/// t (winograd_lanes() floats are read from each). Writes rows [0, rows) and columns
/// [0, cols) of the 4 x 4n block at y (row stride ldy) as act(value + bias + z), z (may
/// be null) at the same place as y with row stride ldz.
void winograd_output(const float* m, int64_t xi_stride, int64_t n, float bias, const float* z,
                     int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                     int64_t cols);

/// The 6x6 transformed kernel G g G^T of a 3x3 kernel g (row-major), in double.
void winograd_kernel(const float* g, double out[36]);

}  // namespace onyx::simd
