// im2col + GEMM float convolution (see conv.h). A task is (image, group, tile of output
// positions, block of output-channel rows): it builds the im2col rows of its tile one depth
// block at a time, straight into the GEMM's panel layout, and multiplies each block by the
// packed weights before building the next, so a block is used while it is in L2; the last
// block's GEMM applies the epilogue. A pointwise convolution (1x1, stride 1, no pads) has
// X itself as the im2col matrix and the GEMM reads it in place.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/conv.h"
#include "runtime/thread_pool.h"
#include "simd/gemm_conv.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {

namespace {

constexpr int64_t kDepthBlock = 256;       // im2col rows built at a time
constexpr int64_t kPanelFloats = 1 << 15;  // one depth block of a tile: 128 KiB, in L2 with A and C
constexpr int64_t kMaxTile = 1024;         // output positions per tile at most

/// Moves of 8 floats (two SSE or one AVX move, inlined: the runs of an im2col row are
/// often a handful of floats, where a memcpy or memset call costs more than the copy).
constexpr int64_t kRunChunk = 8;
inline void copy_chunk(float* d, const float* s) {
  std::memcpy(d, s, kRunChunk * sizeof(float));
}
inline int64_t chunks_of(int64_t n) {
  return (n + kRunChunk - 1) / kRunChunk;
}
/// d[0, n) = 0, writing up to kRunChunk - 1 floats past n (later runs overwrite them).
inline void zero_run(float* d, int64_t n) {
  static constexpr float kZeros[kRunChunk] = {};
  for (int64_t q = 0, nq = chunks_of(n); q < nq; ++q) copy_chunk(d + q * kRunChunk, kZeros);
}

/// im2col rows [p0, p1) (row p: input channel p / kernel_size, kernel position p %
/// kernel_size) of the tile's nt columns into ceil(nt / nr) panels of rows [p1 - p0][nr],
/// panel q at panels + q * pstride, columns past nt zero. Each row is built in a line
/// buffer (zero and copied runs in whole chunks of 8, each overwriting the slack the one
/// before left), then moved into the panels; x_end: the end of X (no chunk reads past it).
void im2col_block(const WindowGeom& g, const float* xg, const float* x_end,
                  const std::vector<int64_t>& koffs, const Segments& seg, int64_t nt, int64_t p0,
                  int64_t p1, int64_t nr, int64_t pstride, float* panels) {
  const size_t nsp = g.nsp, last = nsp - 1, nseg = seg.jj0.size();
  const int64_t npanels = (nt + nr - 1) / nr, width = npanels * nr;
  const int64_t in_last = g.in[last], s_last = g.strides[last], p_last = g.pad_begin[last];
  thread_local std::vector<float> line_buf;
  if (static_cast<int64_t>(line_buf.size()) < width + kRunChunk)
    line_buf.resize(static_cast<size_t>(width + kRunChunk));
  float* line = line_buf.data();
  const bool whole_chunks = nr % kRunChunk == 0;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t c = p / g.kernel_size, k = p % g.kernel_size;
    const float* xc = xg + c * g.in_size;
    const int64_t* ko = koffs.data() + k * static_cast<int64_t>(nsp);
    for (size_t si = 0; si < nseg; ++si) {
      // Leading axes: one input row for the whole segment (or padding).
      const int64_t row = flat_index(seg.base.data() + si * last, ko, g.in, last);
      const int64_t len = seg.len[si];
      float* d = line + seg.jj0[si];
      if (row < 0) {
        zero_run(d, len);
        continue;
      }
      // Zeros before and after the run of columns inside the row (i in [lo, hi): column
      // ci + i * s_last inside it), a strided copy in between.
      const int64_t ci = seg.o_last[si] * s_last - p_last + ko[last];
      const int64_t lo = ci >= 0 ? 0 : std::min(len, (-ci + s_last - 1) / s_last);
      const int64_t hi = ci + (len - 1) * s_last < in_last
                             ? len
                             : std::clamp((in_last - ci + s_last - 1) / s_last, lo, len);
      zero_run(d, lo);
      const float* src = xc + row * in_last + ci + lo * s_last;
      const int64_t n = hi - lo;
      if (s_last == 1 && x_end - src >= chunks_of(n) * kRunChunk) {
        for (int64_t q = 0, nq = chunks_of(n); q < nq; ++q)
          copy_chunk(d + lo + q * kRunChunk, src + q * kRunChunk);
      } else if (s_last == 2 && n >= 32) {  // (shorter runs: the call costs more than it saves)
        simd::row_gather_even(src, n, d + lo, x_end - src);
      } else {
        for (int64_t i = 0; i < n; ++i) d[lo + i] = src[i * s_last];
      }
      zero_run(d + hi, len - hi);
    }
    std::fill(line + nt, line + width, 0.0f);  // columns past nt in the last panel
    float* prow = panels + (p - p0) * nr;      // row p of panel 0
    for (int64_t q = 0; q < npanels; ++q) {
      float* dq = prow + q * pstride;
      const float* lq = line + q * nr;
      if (whole_chunks)
        for (int64_t j = 0; j < nr; j += kRunChunk) copy_chunk(dq + j, lq + j);
      else
        std::copy(lq, lq + nr, dq);
    }
  }
}

/// The input of a 2-D convolution, padded and split by row and column phase (strides) so
/// that every tap's im2col row is made of contiguous runs with no padding to test: channel block (n, c) holds
/// sh * sw planes of R x Q floats, plane (a, b) element (r, q) being X[n, c, r * sh + a -
/// pad_h, q * sw + b - pad_w] (0 in the padding). Tap (ki, kj) of output (oy, ox) then
/// reads plane ((ki dh) % sh, (kj dw) % sw) at row oy + ki dh / sh, column ox + kj dw / sw.
/// Gathering every stride-2 run of every tap (9 per input element for 3x3) took 20-27% of
/// a 3x3 stride-2 layer's time; this gathers each input element once (3x3 stride 2, 64 ->
/// 128 at 40x40: 0.92 -> 0.84 ms). At stride 1 the runs skip the padding tests and zero
/// fills (5x5, 32 -> 32 at 40x40: 1.53 -> 1.39 ms).
struct Phased {
  const float* planes = nullptr;
  int64_t q = 0;                 ///< Q: floats per plane row
  int64_t chan = 0;              ///< floats per channel block (sh * sw * R * Q)
  std::vector<int64_t> toff;     ///< per kernel tap ki * kw + kj: its offset in a block
};

/// Floats of the phased copy of X for the shape, or 0 when it does not apply (not 2-D, or
/// a copy much larger than X: strides far beyond the kernel, pads far beyond the image).
int64_t phased_floats(const ConvShape& s) {
  const WindowGeom& g = s.g;
  if (g.nsp != 2) return 0;
  const int64_t sh = g.strides[0], sw = g.strides[1];
  const double r = double(g.out[0]) + double((g.kernel[0] - 1) * g.dilations[0] / sh);
  const double q = double(g.out[1]) + double((g.kernel[1] - 1) * g.dilations[1] / sw);
  const double floats = double(s.batch) * double(s.channels) * double(sh) * double(sw) * r * q;
  const double x_floats = double(s.batch) * double(s.channels) * double(g.in_size);
  if (floats > std::max(double(1 << 22), 2.0 * x_floats)) return 0;
  return static_cast<int64_t>(floats);
}

/// Builds the phased copy of X (see Phased) into buf (phased_floats + kRunChunk floats;
/// the last kRunChunk stay readable for the chunked copies).
void build_phased(const ConvShape& s, const float* x, ThreadPool* pool, std::vector<float>& buf,
                  Phased& out_ph) {
  const WindowGeom& g = s.g;
  const int64_t sh = g.strides[0], sw = g.strides[1], IH = g.in[0], IW = g.in[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t R = g.out[0] + (kh - 1) * dh / sh, Q = g.out[1] + (kw - 1) * dw / sw;
  const int64_t plane = R * Q, chan = sh * sw * plane, blocks = s.batch * s.channels;
  const int64_t need = blocks * chan + kRunChunk;
  if (static_cast<int64_t>(buf.size()) < need) buf.resize(static_cast<size_t>(need));
  std::fill(buf.end() - kRunChunk, buf.end(), 0.0f);
  float* out = buf.data();
  const float* x_end = x + blocks * g.in_size;
  const int64_t ph = g.pad_begin[0], pw = g.pad_begin[1];
  conv_prepass_parallel(pool, blocks, s, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const float* xc = x + blk * g.in_size;
      for (int64_t a = 0; a < sh; ++a)
        for (int64_t r = 0; r < R; ++r) {
          const int64_t iy = r * sh + a - ph;
          for (int64_t b = 0; b < sw; ++b) {
            float* dst = out + blk * chan + ((a * sw + b) * R + r) * Q;
            if (iy < 0 || iy >= IH) {
              std::fill(dst, dst + Q, 0.0f);
              continue;
            }
            padded_phase_row(xc + iy * IW, IW, pw, sw, b, dst, Q, x_end);
          }
        }
    }
  });
  out_ph.planes = out;
  out_ph.q = Q;
  out_ph.chan = chan;
  out_ph.toff.resize(static_cast<size_t>(kh * kw));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      out_ph.toff[static_cast<size_t>(i * kw + j)] =
          ((i * dh % sh) * sw + j * dw % sw) * plane + (i * dh / sh) * Q + j * dw / sw;
}

/// im2col_block from the phased copy: rows [p0, p1) of the tile of nt output positions
/// from j0, of image n, group gi, into the same panel layout.
void im2col_block_phased(const WindowGeom& g, const Phased& ph, int64_t block0, int64_t j0,
                         int64_t nt, int64_t p0, int64_t p1, int64_t nr, int64_t pstride,
                         float* panels) {
  const int64_t npanels = (nt + nr - 1) / nr, width = npanels * nr, OW = g.out[1];
  thread_local std::vector<float> line_buf;
  if (static_cast<int64_t>(line_buf.size()) < width + kRunChunk)
    line_buf.resize(static_cast<size_t>(width + kRunChunk));
  float* line = line_buf.data();
  const bool whole_chunks = nr % kRunChunk == 0;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t c = p / g.kernel_size, k = p % g.kernel_size;
    const float* base = ph.planes + (block0 + c) * ph.chan + ph.toff[static_cast<size_t>(k)];
    for (int64_t jj = 0; jj < nt;) {
      const int64_t j = j0 + jj, oy = j / OW, ox = j - oy * OW;
      const int64_t len = std::min(nt - jj, OW - ox);
      const float* src = base + oy * ph.q + ox;
      float* d = line + jj;
      for (int64_t q = 0, nq = chunks_of(len); q < nq; ++q)
        copy_chunk(d + q * kRunChunk, src + q * kRunChunk);
      jj += len;
    }
    std::fill(line + nt, line + width, 0.0f);
    float* prow = panels + (p - p0) * nr;
    for (int64_t q = 0; q < npanels; ++q) {
      float* dq = prow + q * pstride;
      const float* lq = line + q * nr;
      if (whole_chunks)
        for (int64_t jn = 0; jn < nr; jn += kRunChunk) copy_chunk(dq + jn, lq + jn);
      else
        std::copy(lq, lq + nr, dq);
    }
  }
}

/// Floats of conv_im2col_shared's panels at most (4 MiB: ResNet's last stages need 1-2.4).
constexpr int64_t kSharedFloats = int64_t(1) << 20;

bool is_pointwise(const WindowGeom& g) {
  for (size_t d = 0; d < g.nsp; ++d)
    if (g.kernel[d] != 1 || g.strides[d] != 1 || g.pad_begin[d] != 0 || g.in[d] != g.out[d])
      return false;
  return true;
}

/// The elements a strided 1x1 window reads, compact: planes [b0, b1) of X ([in] each) into
/// out ([out] each), element o of a plane from x[sum_d o_d * stride_d * in_stride_d].
void gather_strided_planes(const WindowGeom& g, const float* x, const float* x_end, int64_t b0,
                           int64_t b1, float* out) {
  const size_t last = g.nsp - 1;
  const int64_t OL = g.out[last], sl = g.strides[last];
  const int64_t rows = g.out_size / OL;
  std::vector<int64_t> in_stride(g.nsp, 1);
  for (size_t d = last; d-- > 0;) in_stride[d] = in_stride[d + 1] * g.in[d + 1];
  std::vector<int64_t> o(g.nsp, 0);
  for (int64_t b = b0; b < b1; ++b) {
    const float* xp = x + b * g.in_size;
    float* yp = out + b * g.out_size;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0;
      for (size_t d = 0; d < last; ++d) off += o[d] * g.strides[d] * in_stride[d];
      const float* src = xp + off;
      float* dst = yp + r * OL;
      if (sl == 2 && OL >= 32)
        simd::row_gather_even(src, OL, dst, x_end - src);
      else
        for (int64_t i = 0; i < OL; ++i) dst[i] = src[i * sl];
      for (size_t d = last; d-- > 0;) {  // the next row's leading coordinates
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

/// im2col + GEMM for an output of too few tiles for the threads (deep layers on small
/// images: ResNet's 14x14 and 7x7 stages): the im2col panels of every tile ([panel][K][nr])
/// are built once into one buffer, split over (tile, depth block), then the GEMMs over the
/// whole depth split over (tile, block of output-channel rows) read them. Splitting the
/// rows in the one-pass loop instead had every row block build the tile's whole im2col
/// again: ResNet-18 at 2 threads ran 4.7x the im2col instructions of 1 thread.
void conv_im2col_shared(const ConvShape& s, const float* w, const float* packed, const ConvIO& io,
                        ThreadPool* pool, int64_t nt, int64_t tiles,
                        const std::vector<int64_t>& koffs, const Phased* ph) {
  const WindowGeom& g = s.g;
  const int64_t K = s.kdepth, OS = g.out_size;
  const int64_t nr = simd::conv_gemm_nr(), mr = simd::conv_gemm_mr();
  const int64_t kb = std::min(K, kDepthBlock), kblocks = (K + kb - 1) / kb;
  const int64_t pstride = K * nr, unit_floats = (nt + nr - 1) / nr * pstride;
  const int64_t units = s.batch * s.group * tiles;
  const float* x_end = io.x + s.batch * s.channels * g.in_size;
  const int64_t threads = pool->size(), strips = (s.mg + mr - 1) / mr;
  thread_local std::vector<float> shared;
  if (static_cast<int64_t>(shared.size()) < units * unit_floats)
    shared.resize(static_cast<size_t>(units * unit_floats));
  float* buf = shared.data();
  // A copied element (strided, a load and a store) takes the time of some 16 multiply-adds
  // of the GEMM.
  const double copy_work = 16.0 * static_cast<double>(units * K * nt);
  conv_parallel(pool, units * kblocks, copy_work, [&](int64_t t0, int64_t t1) {
    Segments seg;
    int64_t seg_unit = -1;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t blk = t % kblocks, u = t / kblocks;
      const int64_t tile = u % tiles, ng = u / tiles, gi = ng % s.group, n = ng / s.group;
      const int64_t j0 = tile * nt, cols = std::min(nt, OS - j0);
      const int64_t p0 = blk * kb, p1 = std::min(K, p0 + kb);
      if (ph) {
        im2col_block_phased(g, *ph, n * s.channels + gi * s.cg, j0, cols, p0, p1, nr, pstride,
                            buf + u * unit_floats + p0 * nr);
        continue;
      }
      if (u != seg_unit) {
        tile_segments(g, j0, cols, seg);
        seg_unit = u;
      }
      const float* xg = io.x + (n * s.channels + gi * s.cg) * g.in_size;
      im2col_block(g, xg, x_end, koffs, seg, cols, p0, p1, nr, pstride,
                   buf + u * unit_floats + p0 * nr);
    }
  });
  const int64_t rsplit = std::min(strips, (4 * threads + units - 1) / units);
  const int64_t rows_per = (strips + rsplit - 1) / rsplit * mr;
  conv_parallel(pool, units * rsplit, conv_macs(s), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t % rsplit, u = t / rsplit;
      const int64_t tile = u % tiles, ng = u / tiles, gi = ng % s.group, n = ng / s.group;
      const int64_t m0 = r * rows_per, m1 = std::min(s.mg, m0 + rows_per);
      if (m0 >= m1) continue;
      const int64_t j0 = tile * nt, cols = std::min(nt, OS - j0);
      const ConvA a = group_a(s, w, packed, gi, K);
      const simd::Epilogue ep = rows_epilogue(io, s, n, gi, m0, j0, OS);
      const simd::BMatrix b{simd::BMatrix::Layout::kPanels, buf + u * unit_floats, pstride,
                            nullptr};
      gemm_a(K, a, 0, m0, m1, b, cols, io.y + (n * s.maps + gi * s.mg + m0) * OS + j0, OS, false,
             &ep);
    }
  });
}

}  // namespace

/// A 1x1 window at strides above 1 whose outputs all lie inside X (no padding read;
/// ResNet's downsampling shortcuts): only every stride-th input element is read, once.
bool is_strided_pointwise(const WindowGeom& g) {
  bool strided = false;
  for (size_t d = 0; d < g.nsp; ++d) {
    if (g.kernel[d] != 1 || g.pad_begin[d] != 0 ||
        (g.out[d] - 1) * g.strides[d] >= g.in[d])
      return false;
    strided = strided || g.strides[d] != 1;
  }
  return strided;
}

const float* gather_strided_x(const ConvShape& s, const float* x, ThreadPool* pool) {
  thread_local std::vector<float> xs;
  const int64_t planes = s.batch * s.channels;
  if (static_cast<int64_t>(xs.size()) < planes * s.g.out_size)
    xs.resize(static_cast<size_t>(planes * s.g.out_size));
  const float* x_end = x + planes * s.g.in_size;
  // (The buffer is the calling thread's: a worker naming xs in the task would get its own.)
  float* gathered = xs.data();
  conv_prepass_parallel(pool, planes, s, [&](int64_t b0, int64_t b1) {
    gather_strided_planes(s.g, x, x_end, b0, b1, gathered);
  });
  return gathered;
}

void tile_segments(const WindowGeom& g, int64_t j0, int64_t nt, Segments& seg) {
  const size_t nsp = g.nsp, last = nsp - 1;
  std::vector<int64_t> o(nsp);
  for (size_t d = nsp, rest = static_cast<size_t>(j0); d-- > 0;) {
    o[d] = static_cast<int64_t>(rest % static_cast<size_t>(g.out[d]));
    rest /= static_cast<size_t>(g.out[d]);
  }
  seg.jj0.clear();
  seg.len.clear();
  seg.o_last.clear();
  seg.base.clear();
  for (int64_t jj = 0; jj < nt;) {
    const int64_t len = std::min(nt - jj, g.out[last] - o[last]);
    seg.jj0.push_back(jj);
    seg.len.push_back(len);
    seg.o_last.push_back(o[last]);
    for (size_t d = 0; d < last; ++d) seg.base.push_back(o[d] * g.strides[d] - g.pad_begin[d]);
    jj += len;
    o[last] += len;
    if (o[last] == g.out[last]) {
      o[last] = 0;
      for (size_t d = last; d-- > 0;) {
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

void gemm_a(int64_t K, const ConvA& a, int64_t p0, int64_t m0, int64_t m1,
            const simd::BMatrix& b, int64_t N, float* c, int64_t ldc, bool accumulate,
            const simd::Epilogue* ep) {
  if (a.packed) {
    const simd::PackedA pa{a.packed + p0 * simd::conv_gemm_mr(), a.strip};
    simd::conv_gemm(K, pa, m0, m1, b, N, c, ldc, accumulate, ep);
  } else {
    simd::conv_gemm(K, a.w + p0, a.ld, m0, m1, b, N, c, ldc, accumulate, ep);
  }
}

void gemm_rows_in_place(int64_t K, const ConvA& a, int64_t m0, int64_t m1, const float* b,
                        int64_t ldb, int64_t N, float* c, int64_t ldc, const simd::Epilogue* ep,
                        std::vector<float>& scratch) {
  const int64_t nr = simd::conv_gemm_nr(), full = N - N % nr;
  if (full > 0) {
    const simd::BMatrix bm{simd::BMatrix::Layout::kRows, b, ldb, nullptr};
    gemm_a(K, a, 0, m0, m1, bm, full, c, ldc, false, ep);
  }
  if (full == N) return;
  if (static_cast<int64_t>(scratch.size()) < K * nr) scratch.resize(static_cast<size_t>(K * nr));
  float* pan = scratch.data();
  for (int64_t p = 0; p < K; ++p) {
    const float* src = b + p * ldb + full;
    std::copy(src, src + (N - full), pan + p * nr);
    std::fill(pan + p * nr + (N - full), pan + (p + 1) * nr, 0.0f);
  }
  simd::Epilogue et;
  if (ep) {
    et = *ep;
    if (et.z) et.z += full;
  }
  const simd::BMatrix bm{simd::BMatrix::Layout::kPanels, pan, K * nr, nullptr};
  gemm_a(K, a, 0, m0, m1, bm, N - full, c + full, ldc, false, ep ? &et : nullptr);
}

void conv_im2col_gemm(const ConvShape& s, const float* w, const float* packed, const ConvIO& io,
                      ThreadPool* pool) {
  if (is_strided_pointwise(s.g)) {
    // The elements read gathered once (a quarter of X at stride 2), then a pointwise layer
    // whose GEMM reads them in place. Through the phased copy every phase of X was copied
    // and then the read one again per tile, and at 2 threads the shared-im2col split made
    // ResNet-18's 64 -> 128 shortcut at 56x56 twice as slow as at 1.
    const float* gathered = gather_strided_x(s, io.x, pool);
    ConvShape ps = s;
    ps.g.in = s.g.out;
    ps.g.in_size = s.g.out_size;
    std::fill(ps.g.strides.begin(), ps.g.strides.end(), 1);
    std::fill(ps.g.dilations.begin(), ps.g.dilations.end(), 1);
    ConvIO pio = io;
    pio.x = gathered;
    conv_im2col_gemm(ps, w, packed, pio, pool);
    return;
  }
  const WindowGeom& g = s.g;
  const int64_t K = s.kdepth, OS = g.out_size;
  const int64_t nr = simd::conv_gemm_nr(), mr = simd::conv_gemm_mr();
  const bool pointwise = is_pointwise(g);
  const int64_t kb = std::min(K, kDepthBlock);
  int64_t nt = std::clamp(kPanelFloats / std::max<int64_t>(kb, 1) / nr * nr, 2 * nr, kMaxTile);
  const int64_t tiles0 = (OS + nt - 1) / nt;
  nt = (OS + tiles0 - 1) / tiles0;  // near-equal tiles
  nt = std::min(OS, (nt + nr - 1) / nr * nr);
  const int64_t tiles = (OS + nt - 1) / nt;
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t strips = (s.mg + mr - 1) / mr;
  const int64_t units = s.batch * s.group * tiles;
  const float* x_end = io.x + s.batch * s.channels * g.in_size;
  std::vector<int64_t> koffs = kernel_offsets(g);
  const double macs = conv_macs(s);
  // A 1x1 image (conv_gemv below: the squeeze-excite layers after a global pooling) reads
  // each weight once from memory, where in a run W is rarely still cached: a multiply-add
  // there costs about what 16 do in a GEMM, so the threads share W's reading (MobileNetV3's
  // 576 -> 144 and 144 -> 576 layers, 20-35 us on one thread in a run, 5-10 us when their
  // W is hot).
  const bool gemv = pointwise && OS == 1 && g.in_size == 1;
  const double work = gemv ? 16.0 * macs : macs;
  const int64_t npan = (nt + nr - 1) / nr, unit_floats = npan * nr * K;
  // 2-D: X padded and phase-split once (Phased), the im2col rows copied from it.
  Phased phased;
  const Phased* ph = nullptr;
  if (!pointwise && phased_floats(s) > 0) {
    thread_local std::vector<float> phased_buf;
    build_phased(s, io.x, pool, phased_buf, phased);
    ph = &phased;
  }
  if (!pointwise && threads > 1 && units < 3 * threads && strips > 1 &&
      units * unit_floats <= kSharedFloats && work >= double(1 << 20)) {
    conv_im2col_shared(s, w, packed, io, pool, nt, tiles, koffs, ph);
    return;
  }
  // Too few tiles for the threads: also split the rows (each part builds its own im2col).
  int64_t rsplit = 1;
  if (threads > 1 && units < 3 * threads)
    rsplit = std::min(strips, (3 * threads + units - 1) / units);
  const int64_t rows_per = (strips + rsplit - 1) / rsplit * mr;
  conv_parallel(pool, units * rsplit, work, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> panels;
    const int64_t need = pointwise ? K * nr : (nt + nr - 1) / nr * nr * kb;
    if (static_cast<int64_t>(panels.size()) < need) panels.resize(static_cast<size_t>(need));
    Segments seg;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t % rsplit, u = t / rsplit;
      const int64_t tile = u % tiles, ng = u / tiles, gi = ng % s.group, n = ng / s.group;
      const int64_t m0 = r * rows_per, m1 = std::min(s.mg, m0 + rows_per);
      if (m0 >= m1) continue;
      const int64_t j0 = tile * nt, cols = std::min(nt, OS - j0);
      const float* xg = io.x + (n * s.channels + gi * s.cg) * g.in_size;
      float* yg = io.y + (n * s.maps + gi * s.mg) * OS;
      const ConvA a = group_a(s, w, packed, gi, K);
      const simd::Epilogue ep = rows_epilogue(io, s, n, gi, m0, j0, OS);
      float* yt = yg + m0 * OS + j0;  // row m0 of the tile
      if (pointwise && cols == 1 && g.in_size == 1) {  // X is one vector per image
        simd::conv_gemv(K, a.w, K, m0, m1, xg, yt, OS, &ep);
        continue;
      }
      if (pointwise) {
        gemm_rows_in_place(K, a, m0, m1, xg + j0, g.in_size, cols, yt, OS, &ep, panels);
        continue;
      }
      if (!ph) tile_segments(g, j0, cols, seg);
      for (int64_t p0 = 0; p0 < K; p0 += kb) {
        const int64_t p1 = std::min(K, p0 + kb);
        if (ph)
          im2col_block_phased(g, *ph, n * s.channels + gi * s.cg, j0, cols, p0, p1, nr,
                              (p1 - p0) * nr, panels.data());
        else
          im2col_block(g, xg, x_end, koffs, seg, cols, p0, p1, nr, (p1 - p0) * nr, panels.data());
        const simd::BMatrix b{simd::BMatrix::Layout::kPanels, panels.data(), (p1 - p0) * nr,
                              nullptr};
        gemm_a(p1 - p0, a, p0, m0, m1, b, cols, yt, OS, p0 > 0, p1 == K ? &ep : nullptr);
      }
    }
  });
}

}  // namespace onyx::kernels::cpu
