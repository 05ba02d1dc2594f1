// Direct 2-D float convolution as an implicit GEMM (see conv.h): a task copies the input
// rows its output rows read, for every input channel of its group, once into a
// zero-padded buffer whose rows are split into `stride_w` column phases; then every
// kernel tap (channel, kernel row, kernel column) of an output row is a contiguous run of
// that buffer, and the GEMM reads those runs as its B rows through a table of offsets:
// Y[m, oy, :] = sum over taps of W[m, tap] * buffer[tap offset + oy * stride_h * row + :].
// No im2col matrix is written, which pays off when the taps are few (the C = 3 first layer
// of a CNN: about half the time of im2col + GEMM); with many taps the GEMM's B rows spread
// over many pages and im2col's contiguous panels are as fast.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv.h"
#include "runtime/thread_pool.h"
#include "simd/gemm_conv.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {

namespace {

/// The padded, phase-split layout of one task's input rows.
struct PadLayout {
  int64_t pl = 0;    ///< floats per phase of a padded row
  int64_t rs = 0;    ///< floats per padded row (stride_w phases)
  int64_t rows = 0;  ///< padded rows per channel
};

}  // namespace

void padded_phase_row(const float* xr, int64_t IW, int64_t pw, int64_t sw, int64_t f, float* dst,
                      int64_t len, const float* x_end) {
  // q with 0 <= q * sw + f - pw < IW.
  const int64_t lo = std::min(len, pw - f > 0 ? (pw - f + sw - 1) / sw : int64_t(0));
  const int64_t hi = std::clamp(IW + pw - f > 0 ? (IW + pw - f + sw - 1) / sw : int64_t(0), lo, len);
  std::fill(dst, dst + lo, 0.0f);
  const float* src = xr + lo * sw + f - pw;
  const int64_t n = hi - lo;
  if (sw == 1)
    std::copy(src, src + n, dst + lo);
  else if (sw == 2 && n >= 8)  // (scalar, a stride-2 stem spent 20% of its time here)
    simd::row_gather_even(src, n, dst + lo, x_end - src);
  else
    for (int64_t i = 0; i < n; ++i) dst[lo + i] = src[i * sw];
  std::fill(dst + hi, dst + len, 0.0f);
}

bool direct_suits(const ConvShape& s) {
  const WindowGeom& g = s.g;
  if (g.nsp != 2 || g.kernel_size == 1) return false;  // 1x1: the GEMM reads X in place
  const int64_t nr = simd::conv_gemm_nr();
  // Each GEMM call covers one output row: it must fill a few panels.
  if (g.out[1] < 2 * nr) return false;
  // Few taps (a first layer): no im2col matrix of 12544 x 147 floats to write and read.
  return s.kdepth <= 160;
}

void conv_direct(const ConvShape& s, const float* w, const float* packed, const ConvIO& io,
                 ThreadPool* pool) {
  const WindowGeom& g = s.g;
  const int64_t IH = g.in[0], IW = g.in[1], OH = g.out[0], OW = g.out[1], OS = g.out_size;
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
  const int64_t nr = simd::conv_gemm_nr(), mr = simd::conv_gemm_mr();
  const int64_t cg = s.cg, K = s.kdepth;
  PadLayout pad;
  pad.pl = (OW + nr - 1) / nr * nr + (kw - 1) * dw / sw + 1;
  pad.rs = pad.pl * sw;
  // Tasks: (image, group, block of output rows, block of output channels).
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t units = s.batch * s.group;
  int64_t rblocks = 1;
  if (threads > 1) rblocks = std::min(OH, (4 * threads + units - 1) / units);
  // Rows per task: also keep a task's padded rows within about 256 KiB.
  const int64_t max_rows =
      std::max<int64_t>(1, ((int64_t(1) << 16) / (cg * pad.rs) - (kh - 1) * dh) / sh);
  int64_t rows_per = std::min((OH + rblocks - 1) / rblocks, max_rows);
  rblocks = (OH + rows_per - 1) / rows_per;
  const int64_t strips = (s.mg + mr - 1) / mr;
  int64_t msplit = 1;
  if (threads > 1 && units * rblocks < 3 * threads)
    msplit = std::min(strips, (3 * threads + units * rblocks - 1) / (units * rblocks));
  const int64_t mrows = (strips + msplit - 1) / msplit * mr;
  const float* x_end = io.x + s.batch * s.channels * g.in_size;
  conv_parallel(pool, units * rblocks * msplit, conv_macs(s), [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> buf;
    std::vector<int64_t> offs(static_cast<size_t>(K));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t part = t % msplit, u = t / msplit;
      const int64_t rb = u % rblocks, ng = u / rblocks, gi = ng % s.group, n = ng / s.group;
      const int64_t m0 = part * mrows, m1 = std::min(s.mg, m0 + mrows);
      const int64_t oy0 = rb * rows_per, oy1 = std::min(OH, oy0 + rows_per);
      if (m0 >= m1 || oy0 >= oy1) continue;
      const int64_t r0 = oy0 * sh, rows = (oy1 - 1 - oy0) * sh + (kh - 1) * dh + 1;
      if (static_cast<int64_t>(buf.size()) < cg * rows * pad.rs)
        buf.resize(static_cast<size_t>(cg * rows * pad.rs));
      // Padded row r of channel c holds input row r0 + r - ph; phase f, index q of it
      // holds input column q * sw + f - pw.
      const float* xg = io.x + (n * s.channels + gi * cg) * g.in_size;
      for (int64_t c = 0; c < cg; ++c) {
        const float* xc = xg + c * g.in_size;
        for (int64_t r = 0; r < rows; ++r) {
          float* dst = buf.data() + (c * rows + r) * pad.rs;
          const int64_t iy = r0 + r - ph;
          if (iy < 0 || iy >= IH) {
            std::fill(dst, dst + pad.rs, 0.0f);
            continue;
          }
          const float* xr = xc + iy * IW;
          for (int64_t f = 0; f < sw; ++f)
            padded_phase_row(xr, IW, pw, sw, f, dst + f * pad.pl, pad.pl, x_end);
        }
      }
      // Tap (c, i, j) of output row oy starts at (oy - oy0) * sh rows plus its offset.
      for (int64_t c = 0, p = 0; c < cg; ++c)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j, ++p)
            offs[static_cast<size_t>(p)] =
                (c * rows + i * dh) * pad.rs + (j * dw % sw) * pad.pl + j * dw / sw;
      const ConvA a = group_a(s, w, packed, gi, K);
      float* yg = io.y + (n * s.maps + gi * s.mg) * OS;
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        poll_cancel();
        const simd::Epilogue ep = rows_epilogue(io, s, n, gi, m0, oy * OW, OS);
        const simd::BMatrix b{simd::BMatrix::Layout::kOffsets,
                              buf.data() + (oy - oy0) * sh * pad.rs, 0, offs.data()};
        gemm_a(K, a, 0, m0, m1, b, OW, yg + m0 * OS + oy * OW, OS, false, &ep);
      }
    }
  });
}

}  // namespace onyx::kernels::cpu
