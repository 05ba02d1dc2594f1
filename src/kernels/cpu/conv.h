// Optimized float convolution kernels (src/kernels/cpu/conv*.cc), twins of the direct
// loops in src/kernels/reference/conv.cc: Conv and ai.onyx FusedConv (conv.cc, choosing
// per shape among the algorithms below), ConvTranspose (conv_transpose.cc).
//
// Every algorithm computes, per image n and group gi, Y[Mg x OS] = W_g[Mg x K] X_col[K x OS]
// (K = Cg * prod(kernel), OS = output positions) followed by the fused epilogue
// act(. + bias + Z), written once per output tile while it is in cache:
//  - pointwise (1x1, stride 1, no pads): the GEMM reads X in place (conv_im2col.cc);
//  - im2col + GEMM for any rank (conv_im2col.cc), the im2col built per tile and depth
//    block straight into the GEMM's panel layout (2-D: from a padded, phase-split copy of
//    X, so each tap's rows are contiguous runs);
//  - Winograd F(2x2, 3x3) or F(4x4, 3x3) for 2-D 3x3 stride-1 convolutions with enough
//    channels (conv_winograd.cc);
//  - a direct 2-D implicit GEMM over a padded, phase-split copy of the input rows for few
//    taps (the C = 3 first layer of a CNN; conv_direct.cc);
//  - direct 2-D loops for one input channel per group (depthwise, channel multipliers,
//    the C = 1 first layer of a CNN): src/simd/depthwise.cc;
//  - natively, the channel-vector direct convolution (conv_cv.cc, simd/conv_cv.h): output
//    channels in the vector lanes, positions broadcast from X (padded once), for small
//    images, strided windows and deep layers of 32 output channels or fewer, where the GEMM's
//    column panels go partly empty or an im2col matrix is built (cv_preferred).
// The GEMM reads W packed at planning into its microkernel's row strips
// (simd::conv_pack_a: the broadcasts of a strip read one contiguous stream) when W is
// at most 2 MiB, in place otherwise (the model's buffer, row m = output channel: a copy of
// every W would add ~100 MB to a ResNet-50's peak RSS); Winograd's transformed W is made
// and packed once at planning. A layer whose static shape (the batch aside) takes conv_cv
// gets only conv_cv's packed W (output channels in blocks of 2 or 4 vectors), and the
// pages of the model file that held W leave the resident set (base/mmap_file.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/reference/window.h"
#include "kernels/registry.h"
#include "simd/conv_epilogue.h"
#include "simd/gemm_conv.h"

namespace onyx {
class ThreadPool;
}

namespace onyx::kernels::cpu {

/// One float convolution at one input shape: X [batch, channels, in...], W [maps, cg,
/// kernel...], Y [batch, maps, out...], pads resolved in g.pad_begin.
struct ConvShape {
  WindowGeom g;
  int64_t batch = 0, channels = 0, maps = 0, group = 1;
  int64_t cg = 0, mg = 0;  ///< input and output channels per group
  int64_t kdepth = 0;      ///< cg * g.kernel_size: the GEMM depth
};

/// The float buffers and epilogue of one run.
struct ConvIO {
  const float* x = nullptr;
  const float* bias = nullptr;  ///< [maps] or null
  const float* z = nullptr;     ///< Y-shaped residual or null
  float* y = nullptr;
  simd::Activation act;
};

/// Runs of tile columns that share every output coordinate but the last: segment i
/// covers tile columns [jj0, jj0 + len) whose last output coordinate starts at o_last,
/// and base[i * (nsp - 1) + d] = o_d * stride_d - pad_d for the leading axes.
struct Segments {
  std::vector<int64_t> jj0, len, o_last, base;
};

/// The segments of the tile of nt output positions starting at flat index j0 of g.out.
void tile_segments(const WindowGeom& g, int64_t j0, int64_t nt, Segments& seg);

/// The row-major flat index over the first n axes of `extent` of base[d] + offs[d]; -1
/// when that lies outside (in the padding).
inline int64_t flat_index(const int64_t* base, const int64_t* offs, const Dims& extent, size_t n) {
  int64_t flat = 0;
  for (size_t d = 0; d < n; ++d) {
    const int64_t c = base[d] + offs[d];
    if (c < 0 || c >= extent[d]) return -1;
    flat = flat * extent[d] + c;
  }
  return flat;
}

/// The weights of one group as the GEMM's A: row-major rows read in place (w, row stride
/// ld), and when made at planning the same rows packed by simd::conv_pack_a (packed, strip
/// stride), which the GEMM then reads instead.
struct ConvA {
  const float* w = nullptr;
  int64_t ld = 0;
  const float* packed = nullptr;
  int64_t strip = 0;
};

/// A for group `gi`: its rows of W [maps, K], and of W's packed strips when W was packed at
/// planning (`packed` non-null).
inline ConvA group_a(const ConvShape& s, const float* w, const float* packed, int64_t gi, int64_t K) {
  ConvA a{w + gi * s.mg * K, K, nullptr, 0};
  if (packed) {
    a.packed = packed + gi * simd::conv_pack_a_size(s.mg, K);
    a.strip = simd::conv_gemm_mr() * K;
  }
  return a;
}

/// The epilogue of output rows from m0 of group `gi` of image `n`, for a C written from
/// column j0 of its OS-wide rows: bias from m0, the residual Z at the same place as C.
inline simd::Epilogue rows_epilogue(const ConvIO& io, const ConvShape& s, int64_t n, int64_t gi, int64_t m0,
                                    int64_t j0, int64_t OS) {
  simd::Epilogue ep;
  ep.bias = io.bias ? io.bias + gi * s.mg + m0 : nullptr;
  ep.z = io.z ? io.z + (n * s.maps + gi * s.mg + m0) * OS + j0 : nullptr;
  ep.ldz = OS;
  ep.act = io.act;
  return ep;
}

/// simd::conv_gemm over depths [p0, p0 + K) of A.
void gemm_a(int64_t K, const ConvA& a, int64_t p0, int64_t m0, int64_t m1,
            const simd::BMatrix& b, int64_t N, float* c, int64_t ldc, bool accumulate,
            const simd::Epilogue* ep);

/// simd::conv_gemm with B = a row-major [K x N] matrix read in place (row stride ldb); the
/// last N % NR columns go through a zero-padded panel in `scratch` so no read passes the
/// matrix's end.
void gemm_rows_in_place(int64_t K, const ConvA& a, int64_t m0, int64_t m1, const float* b,
                        int64_t ldb, int64_t N, float* c, int64_t ldc, const simd::Epilogue* ep,
                        std::vector<float>& scratch);

/// Runs fn(begin, end) over [0, n) on the pool when it has threads and the work (in
/// multiply-adds) is worth waking them; inline otherwise.
void conv_parallel(ThreadPool* pool, int64_t n, double work,
                   const std::function<void(int64_t, int64_t)>& fn);

/// The multiply-adds of the whole convolution s (its batch, all groups).
double conv_macs(const ConvShape& s);

/// For a pass that prepares X for the convolution s (a padded or phase-split copy, a
/// strided gather): threaded whenever the convolution itself will be. Weighed alone, a
/// copy of 64-256 KiB stayed under conv_parallel's threshold and ran on one thread while
/// the helper waited to start the convolution (ResNet-50's 3x3 256 -> 256 at 14x14 padded
/// 256 planes of 16x16 that way, 5% of the layer at 2 threads).
inline void conv_prepass_parallel(ThreadPool* pool, int64_t n, const ConvShape& s,
                                  const std::function<void(int64_t, int64_t)>& fn) {
  conv_parallel(pool, n, conv_macs(s), fn);
}

/// A 1x1 window at strides above 1 whose outputs all lie inside X (no padding read;
/// ResNet's downsampling shortcuts): only every stride-th input element is read, once.
bool is_strided_pointwise(const WindowGeom& g);
/// The elements a strided 1x1 window reads from X (s's [batch, channels, in...]), compact
/// ([batch, channels, out...]), gathered over the pool into a buffer of the calling thread,
/// which stays valid until its next call there.
const float* gather_strided_x(const ConvShape& s, const float* x, ThreadPool* pool);

/// im2col + GEMM (any rank; pointwise convolutions read X in place); w is W as given
/// ([maps, kdepth] row-major); packed, when not null, the same per group packed by
/// simd::conv_pack_a (group gi at packed + gi * conv_pack_a_size(mg, kdepth)).
/// conv_im2col.cc.
void conv_im2col_gemm(const ConvShape& s, const float* w, const float* packed, const ConvIO& io,
                      ThreadPool* pool);

/// Column phase f of one input row xr (IW floats) padded by pw on the left, at column
/// stride sw: dst[q] = xr[q * sw + f - pw] for q in [0, len), 0 where that is outside the
/// row. x_end: the end of X (the stride-2 gather reads no further). The padded,
/// phase-split copies of conv_direct and of conv_im2col_gemm's 2-D path are made of these.
void padded_phase_row(const float* xr, int64_t IW, int64_t pw, int64_t sw, int64_t f, float* dst,
                      int64_t len, const float* x_end);

/// True when conv_direct is worth it for the shape (2-D, not pointwise, output rows of a
/// few panels, few taps).
bool direct_suits(const ConvShape& s);
/// Direct 2-D convolution as an implicit GEMM over a padded copy of the input rows
/// (conv_direct.cc); w and packed as for conv_im2col_gemm.
void conv_direct(const ConvShape& s, const float* w, const float* packed, const ConvIO& io,
                 ThreadPool* pool);

/// True when the channel-vector direct convolution (conv_cv.cc, simd/conv_cv.h) can take
/// the shape (natively; 2-D, column stride 1 or 2, more than one input channel per group,
/// a padded copy of X near X's size).
bool cv_suits(const ConvShape& s);
/// True when it is also the quicker choice for the shape (see conv_cv.cc).
bool cv_preferred(const ConvShape& s);
/// The channel-vector direct convolution; packed: W per group by simd::conv_cv_pack (group
/// gi at packed + gi * conv_cv_pack_size(mg, kdepth)).
void conv_cv_run(const ConvShape& s, const float* packed, const ConvIO& io, ThreadPool* pool);

/// True when conv_winograd takes the shape (2-D, 3x3, stride 1, dilation 1) and is worth it.
bool winograd_suits(const ConvShape& s);
/// The output tile size m of the Winograd F(mxm, 3x3) used for cg input channels per
/// group: 2 or 4 (see conv_winograd.cc for why).
int winograd_tile(int64_t cg);
/// The transformed weights of Winograd F(mxm, 3x3): per group, per transform position
/// xi in [0, (m + 2)^2), the [mg x cg] matrix of (G w G^T)[xi] packed for the GEMM
/// (simd::conv_pack_a). conv_winograd.cc.
struct WinogradW {
  std::vector<float> data;
  int tile = 4;              ///< m
  int64_t xi_stride = 0;     ///< floats per transform position (conv_pack_a_size(mg, cg))
  int64_t group_stride = 0;  ///< floats per group ((m + 2)^2 * xi_stride)
};
WinogradW winograd_weights(const float* w, int64_t group, int64_t mg, int64_t cg);
void conv_winograd(const ConvShape& s, const WinogradW& w, const ConvIO& io, ThreadPool* pool);

/// Registers the ConvTranspose kernel (conv_transpose.cc).
void register_conv_transpose(Registry& r);

}  // namespace onyx::kernels::cpu
