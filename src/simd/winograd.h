// The transforms of Winograd F(4x4, 3x3) (Lavin & Gray's points 0, +-1, +-2, infinity) and
// F(2x2, 3x3) (points 0, +-1, infinity) on Highway, vectorized across tiles: one vector
// holds the same element of L consecutive output tiles of a tile row. The input transform V = B^T d
// B takes 6x6 input patches (tiles overlap by 2), the output transform Y = A^T M A gives 4x4
// outputs and applies the fused epilogue. The GEMMs between them (one per transform position) are
// simd::conv_gemm.
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

/// Output transform of `run` consecutive tiles of one tile row of one output channel:
/// m[xi * xi_stride + t] is the GEMM result of position xi for local tile t (read
/// winograd_lanes() floats at a time, so up to winograd_lanes() - 1 past the run). Writes
/// rows [0, rows) and columns [0, min(4 run, width)) of the 4 x 4 run block at y (row
/// stride ldy) as act(value + bias + z), z (may be null) at the same place as y with row
/// stride ldz.
void winograd_output(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                     int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                     int64_t width);

/// The 6x6 transformed kernel G g G^T of a 3x3 kernel g (row-major), in double.
void winograd_kernel(const float* g, double out[36]);

// F(2x2, 3x3): the same contracts with 4x4 input patches (tiles overlap by 2), 16 transform
// positions (xi = 4 * i + k) and 2x2 output tiles. Its transforms only add and halve, so
// its rounding error is about that of a direct float convolution.

/// Input transform of F(2x2, 3x3): rows[r] (r < 4) is input row 2 * tile_row + r -
/// pad_top at the first tile's first column; 2 * winograd_lanes() + 2 floats are read.
void winograd_input2(const float* const rows[4], int64_t n, float* v, int64_t xi_stride,
                     int64_t panel_stride, int64_t first);
/// Output transform of F(2x2, 3x3): writes rows [0, rows) (rows <= 2) and columns
/// [0, min(2 run, width)) of the 2 x 2 run block at y.
void winograd_output2(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                      int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                      int64_t width);
/// The 4x4 transformed kernel G g G^T of F(2x2, 3x3), in double.
void winograd_kernel2(const float* g, double out[16]);

}  // namespace onyx::simd
