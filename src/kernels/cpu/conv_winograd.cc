// Winograd F(mxm, 3x3) float convolution, m = 2 or 4 (see conv.h, src/simd/winograd.h). A
// task is (image, group, block of output tiles, block of output-channel rows): it
// transforms the input patches of its tiles for every input channel into the B panels of
// (m + 2)^2 GEMMs (one per transform position), multiplies each by the transformed
// weights, and turns the results of each tile into its m x m outputs with the epilogue,
// while they are in L2.
//
// Accuracy: F(4x4, 3x3)'s transforms multiply by up to 8 (A^T) and 5 (B^T) and G has
// thirds, so the result is exact in real arithmetic but float rounding is amplified:
// against the direct double-precision reference the error is a few 1e-6 relative to
// 1 + |y| for unit-scale data with up to 512 input channels, about 10x that of im2col +
// GEMM. Through the 16 stacked 3x3 convolutions of a ResNet-50 that is too much: its logits
// differ from onnxruntime's by 1.5e-4 (atol 1e-4, rtol 1e-3 fails), even with F(4x4, 3x3)
// only on the 64-channel layers (ratio to the tolerance 0.94; 0.47 with im2col only). So
// the kernel uses F(2x2, 3x3), whose transforms only add and halve and whose error is that
// of im2col (2.25x fewer multiply-adds than direct instead of 4x), and keeps F(4x4, 3x3) for
// layers with few input channels (cg <= kWino4MaxChannels: 16 natively, 64 in WebAssembly),
// whose sums are short.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/conv.h"
#include "runtime/thread_pool.h"
#include "simd/gemm_conv.h"
#include "simd/prefetch.h"
#include "simd/tier.h"
#include "simd/winograd.h"

namespace onyx::kernels::cpu {

namespace {
constexpr int64_t kBlockFloats = 96 << 10;  // V and M of one tile block: 384 KiB, within L2
// F(4x4, 3x3) only up to this many input channels. In WebAssembly (4 lanes, no FMA, V8's
// 16 vector registers) the GEMMs cost several times more per multiply-add than natively,
// and F(4x4)'s 1.78x fewer of them than F(2x2) are worth its rounding up to 64 channels,
// which still passed ResNet-50's parity with onnxruntime (0.94 of the tolerance, above):
// the digit reader 2.33 -> 2.03 ms warm under Node, resnet18 88 -> 82 ms. The readers'
// outputs are checked against the native reference by scripts/test_wasm.sh.
#if defined(__EMSCRIPTEN__)
constexpr int64_t kWino4MaxChannels = 64;
#else
constexpr int64_t kWino4MaxChannels = 16;
#endif
constexpr int64_t kSharedFloats = int64_t(1) << 20;  // V shared by the threads: 4 MiB at most
}  // namespace

int winograd_tile(int64_t cg) {
  return cg <= kWino4MaxChannels ? 4 : 2;
}

bool winograd_suits(const ConvShape& s) {
  const WindowGeom& g = s.g;
  if (g.nsp != 2 || g.kernel[0] != 3 || g.kernel[1] != 3) return false;
  if (g.strides[0] != 1 || g.strides[1] != 1 || g.dilations[0] != 1 || g.dilations[1] != 1)
    return false;
  // Enough channels that the 36 GEMMs, not the transforms, take the time; few enough
  // that the transformed weights (4x the originals) stay in cache per tile block.
  if (s.cg < 8 || s.mg < 8 || s.cg * s.mg > 256 * 256) return false;
  // Enough tiles to fill the GEMM panels (small images waste the tiles' padding).
  const int64_t m = winograd_tile(s.cg);
  const int64_t tiles = (g.out[0] + m - 1) / m * ((g.out[1] + m - 1) / m);
  return tiles >= 8 && g.out[0] >= 4 && g.out[1] >= 4;
}

namespace {
/// The transforms of the cg filters of one output map (k: cg x 3 x 3): the value of input
/// channel c at position xi goes to rows[xi * xi_stride + c * c_stride]. Out of line in
/// WebAssembly (simd/tier.h): a call per map, so that it runs optimized after the first
/// maps of a session's first convolution.
ONYX_TIER_UNIT void transform_map(const float* k, int64_t cg, int tile, int64_t nxi, float* rows,
                                  int64_t xi_stride, int64_t c_stride) {
  double u[36];
  for (int64_t c = 0; c < cg; ++c, k += 9) {
    if (tile == 4)
      simd::winograd_kernel(k, u);
    else
      simd::winograd_kernel2(k, u);
    for (int64_t xi = 0; xi < nxi; ++xi)
      rows[xi * xi_stride + c * c_stride] = static_cast<float>(u[xi]);
  }
}
}  // namespace

WinogradW winograd_weights(const float* w, int64_t group, int64_t mg, int64_t cg) {
  WinogradW out;
  out.tile = winograd_tile(cg);
  const int64_t nxi = (out.tile + 2) * (out.tile + 2);
  out.xi_stride = simd::conv_pack_a_size(mg, cg);
  out.group_stride = nxi * out.xi_stride;
  out.data.resize(static_cast<size_t>(group * out.group_stride));
  // Straight into the GEMM's packed layout of A (simd::conv_pack_a): strips of mr maps,
  // map m of a strip at m % mr of every depth's mr values; the last strip's rows past mg
  // repeat map mg - 1, as conv_pack_a pads it.
  const int64_t mr = simd::conv_gemm_mr(), mpad = (mg + mr - 1) / mr * mr;
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t m = 0; m < mpad; ++m)
      transform_map(w + (gi * mg + std::min(m, mg - 1)) * cg * 9, cg, out.tile, nxi,
                    out.data.data() + gi * out.group_stride + (m / mr) * mr * cg + m % mr,
                    out.xi_stride, mr);
  return out;
}

void conv_winograd(const ConvShape& s, const WinogradW& w, const ConvIO& io, ThreadPool* pool) {
  const WindowGeom& g = s.g;
  const int64_t IH = g.in[0], IW = g.in[1], OH = g.out[0], OW = g.out[1], OS = g.out_size;
  const int64_t ph = g.pad_begin[0], pw = g.pad_begin[1];
  const int64_t mt = w.tile, alpha = mt + 2, kXi = alpha * alpha;
  // The transforms of the tile size (F(4x4, 3x3) or F(2x2, 3x3)); the same signatures.
  const auto input = mt == 4 ? simd::winograd_input : simd::winograd_input2;
  const auto output = mt == 4 ? simd::winograd_output : simd::winograd_output2;
  const int64_t th_n = (OH + mt - 1) / mt, tw_n = (OW + mt - 1) / mt, T = th_n * tw_n;
  const int64_t nr = simd::conv_gemm_nr(), mr = simd::conv_gemm_mr(), L = simd::winograd_lanes();
  const int64_t cg = s.cg, mg = s.mg;
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t strips = (mg + mr - 1) / mr;
  // Tiles per block: a multiple of the panel width with V and M of the block in L2.
  int64_t tb = std::clamp(kBlockFloats / (kXi * (cg + mg)) / nr * nr, nr, 16 * nr);
  const int64_t blocks0 = (T + tb - 1) / tb;
  tb = std::min((T + blocks0 - 1) / blocks0 + nr - 1, T + nr - 1) / nr * nr;  // near-equal blocks
  const int64_t blocks = (T + tb - 1) / tb;
  const int64_t units = s.batch * s.group * blocks;
  const int64_t npan = tb / nr;
  const int64_t v_xi = npan * cg * nr;  // floats of V per transform position
  const int64_t v_unit = kXi * v_xi;    // floats of V per unit (image, group, tile block)
  const int64_t m_ld = tb + L;          // M rows have room for a whole last vector
  const double work = static_cast<double>(s.batch) * static_cast<double>(s.maps) *
                      static_cast<double>(T) * static_cast<double>(kXi * cg);

  const float* x_end = io.x + s.batch * s.channels * g.in_size;
  // 1. Input transform of channels [c0, c1) of unit u into v (V of the unit).
  auto transform = [&](int64_t u, int64_t c0, int64_t c1, float* v, std::vector<float>& rowbuf) {
    const int64_t blk = u % blocks, ng = u / blocks, gi = ng % s.group, n = ng / s.group;
    const int64_t tile0 = blk * tb, ntiles = std::min(tb, T - tile0);
    const float* xg = io.x + (n * s.channels + gi * cg) * g.in_size;
    // The input rows of the block's tile rows, zero-padded, one channel at a time: row r
    // is input row iy_base + r, column x at [r * prow + pw + x]. Each input row is copied
    // once per channel (copying alpha rows per tile row instead, each row twice for
    // F(2x2), with the fills around them, was a third of a 128 -> 32 channel 56x56
    // convolution). The padding is zeroed once per call and never written.
    const int64_t th_first = tile0 / tw_n, th_last = (tile0 + ntiles - 1) / tw_n;
    const int64_t iy_base = mt * th_first - ph;
    const int64_t prows = mt * (th_last - th_first) + alpha;
    const int64_t prow = pw + mt * tw_n + mt * L + alpha + 4;  // a run's reads fit from any tile
    const int64_t iy_lo = std::max<int64_t>(0, iy_base), iy_hi = std::min(IH, iy_base + prows);
    const int64_t copy_w = std::min(IW, prow - pw);
    const int64_t whole = (copy_w + 7) / 8 * 8;  // copy_w in whole 8-float moves
    if (static_cast<int64_t>(rowbuf.size()) < prows * prow) rowbuf.resize(static_cast<size_t>(prows * prow));
    std::fill(rowbuf.begin(), rowbuf.begin() + prows * prow, 0.0f);
    for (int64_t c = c0; c < c1; ++c) {
      const float* xc = xg + c * g.in_size;
      for (int64_t iy = iy_lo; iy < iy_hi; ++iy) {
        const float* src = xc + iy * IW;
        float* dst = rowbuf.data() + (iy - iy_base) * prow + pw;
        if (x_end - src >= whole && prow - pw >= whole) {
          // Inlined 8-float moves (a library call per row of a few tens of floats cost
          // more than the copy), then the floats past the row zeroed again.
          for (int64_t j = 0; j < whole; j += 8) std::memcpy(dst + j, src + j, 8 * sizeof(float));
          std::fill(dst + copy_w, dst + whole, 0.0f);
        } else {
          std::copy(src, src + copy_w, dst);
        }
      }
      // One run of tiles of a tile row at a time.
      for (int64_t tt = tile0; tt < tile0 + ntiles;) {
        const int64_t th = tt / tw_n, tw0 = tt % tw_n;
        const int64_t run = std::min(tw_n - tw0, tile0 + ntiles - tt);
        // alpha padded rows covering the run's patches: column mt * tw0 - pw onwards.
        const float* rows[6];
        for (int r = 0; r < alpha; ++r)
          rows[r] = rowbuf.data() + (mt * th - ph + r - iy_base) * prow + mt * tw0;
        for (int64_t k = 0; k < run; k += L) {
          const float* shifted[6];
          for (int r = 0; r < alpha; ++r) shifted[r] = rows[r] + mt * k;
          input(shifted, std::min(L, run - k), v + c * nr, v_xi, cg * nr, tt - tile0 + k);
        }
        tt += run;
      }
      // Columns past ntiles in the last panel must be finite zeros for the GEMM.
      if (ntiles % nr != 0)
        for (int64_t xi = 0; xi < kXi; ++xi) {
          float* p = v + xi * v_xi + (ntiles / nr) * cg * nr + c * nr;
          std::fill(p + ntiles % nr, p + nr, 0.0f);
        }
    }
  };
  // 2. The kXi GEMMs M[xi][m][t] = U[xi][m][:] . V[xi][:][t] for rows [m0, m1) of unit u,
  // then 3. the output transform and epilogue.
  auto multiply = [&](int64_t u, int64_t m0, int64_t m1, const float* v, std::vector<float>& mbuf) {
    if (static_cast<int64_t>(mbuf.size()) < kXi * (m1 - m0) * m_ld)
      mbuf.resize(static_cast<size_t>(kXi * (m1 - m0) * m_ld));
    const int64_t blk = u % blocks, ng = u / blocks, gi = ng % s.group, n = ng / s.group;
    const int64_t tile0 = blk * tb, ntiles = std::min(tb, T - tile0);
    const float* wg = w.data.data() + gi * w.group_stride;
    // M is [row][xi][tile]: the output transform of a row reads its kXi rows of tiles
    // from one contiguous run. (As [xi][row][tile] its loads went kXi * rows * m_ld
    // floats apart: 36 streams through L2, and the F(4x4) output transform took 44% of a
    // 16 -> 64 channel 55x55 convolution.)
    const int64_t m_row = kXi * m_ld;  // floats per row of M
    for (int64_t xi = 0; xi < kXi; ++xi) {
      const simd::BMatrix b{simd::BMatrix::Layout::kPanels, v + xi * v_xi, cg * nr, nullptr};
      float* c0 = mbuf.data() + xi * m_ld;  // row m0, position xi
      const simd::PackedA a{wg + xi * w.xi_stride, mr * cg};
      simd::conv_gemm(cg, a, m0, m1, b, ntiles, c0, m_row, false, nullptr);
    }
    // The block's outputs in each plane: one contiguous span, from its first tile's first
    // row and column to its last tile's last row and column. On several threads the next
    // map's span is prefetched for writing while this map's is written: the lines were
    // often last written by another core, and the output transform's stores (rows of
    // tiles into one plane after another) are too many streams for the hardware
    // prefetcher. SqueezeNet's 16 -> 64 layers at 55x55 in a run, 2 threads: output
    // transforms 270-290 -> 210-215 us, as fast as into a private buffer. Runs alternating
    // with and without in one process (medians): 2 threads SqueezeNet 0.92x, UNet 0.94x,
    // ResNet-18 0.97x, YOLO 0.985x; 1 thread 0.995-1.015x, so one thread does without.
    const int64_t tl = tile0 + ntiles - 1;
    const int64_t span0 = mt * (tile0 / tw_n) * OW + mt * (tile0 % tw_n);
    const int64_t span1 = std::min(OS, (mt * (tl / tw_n) + mt - 1) * OW + std::min(OW, mt * (tl % tw_n + 1)));
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t om = gi * mg + m;
      if (threads > 1 && m + 1 < m1)
        simd::prefetch_floats_for_write(io.y + (n * s.maps + om + 1) * OS + span0, span1 - span0);
      const float bias = io.bias ? io.bias[om] : 0.0f;
      float* ym = io.y + (n * s.maps + om) * OS;
      const float* zm = io.z ? io.z + (n * s.maps + om) * OS : nullptr;
      const float* mm = mbuf.data() + (m - m0) * m_row;
      for (int64_t tt = tile0; tt < tile0 + ntiles;) {
        const int64_t th = tt / tw_n, tw0 = tt % tw_n;
        const int64_t run = std::min(tw_n - tw0, tile0 + ntiles - tt);
        const int64_t rows = std::min<int64_t>(mt, OH - mt * th);
        const int64_t at = (mt * th) * OW + mt * tw0;
        output(mm + (tt - tile0), m_ld, run, bias, zm ? zm + at : nullptr, OW, io.act, ym + at, OW,
               rows, OW - mt * tw0);
        tt += run;
      }
    }
  };

  // How the threads share the work. Measured at 2 threads on one Zen 5 (single-convolution
  // models, medians in ms: shared V / units as tasks / 1 thread): a task per unit (image,
  // group, tile block), each transforming its own input, wins wherever there are at least
  // as many units as threads, even when they are few and unequal (SqueezeNet's 64 -> 256
  // at 13x13, 2 units of 32 and 17 tiles: 0.19 / 0.17-0.18 / 0.27-0.31; crnn's 64 -> 64 at
  // 8x56, 4 units: 0.15-0.17 / 0.13 / 0.14-0.15; YOLO's 32 -> 32 at 40x40: 0.20-0.25 /
  // 0.13-0.19 / 0.19-0.21). Splitting the units' output rows over the threads, each
  // transforming the whole unit again, lost to both everywhere; sharing V, made once
  // with its channels split over the threads and then read by every row block, costs
  // each thread about twice a single thread's time for its half of the transform (V's
  // lines move between the cores' caches) and only pays on one unit of enough work
  // (YOLO's 128 -> 128 at 10x10: 0.13-0.15 / 0.16-0.18 on one thread; crnn's 32 -> 64 at
  // 8x56, a third of that work, 0.10-0.11 against 0.08-0.09 on one thread).
  if (threads > units && strips > 1 && units * v_unit <= kSharedFloats &&
      work >= double(1 << 22)) {
    thread_local std::vector<float> shared;
    if (static_cast<int64_t>(shared.size()) < units * v_unit)
      shared.resize(static_cast<size_t>(units * v_unit));
    float* vs = shared.data();
    const int64_t cparts = std::min(cg, (4 * threads + units - 1) / units);
    const int64_t c_per = (cg + cparts - 1) / cparts;
    // An input element of a tile costs some 24 multiply-adds' time to copy and transform
    // (measured: crnn's 32 -> 64 channel 8x56 layer, F(2x2), transformed its 458K
    // element-taps in 30 us, a quarter of the layer, which at the old weight of 8 stayed
    // under conv_parallel's threshold and ran on one thread while the other spun).
    const double t_work = 24.0 * static_cast<double>(units * cg * tb * alpha * alpha);
    conv_parallel(pool, units * cparts, t_work, [&](int64_t t0, int64_t t1) {
      thread_local std::vector<float> rowbuf;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t u = t / cparts, c0 = t % cparts * c_per, c1 = std::min(cg, c0 + c_per);
        if (c0 < c1) transform(u, c0, c1, vs + u * v_unit, rowbuf);
      }
    });
    // One block of rows per thread and unit: each task reads all of the unit's V, and
    // thinner blocks (4 per thread) reused each B micro-panel for fewer strips (crnn's
    // 16 -> 32 channel 16x113 layer: 0.141 -> 0.121 ms on 2 threads).
    const int64_t msplit = std::min(strips, (threads + units - 1) / units);
    const int64_t rows_per = (strips + msplit - 1) / msplit * mr;
    conv_parallel(pool, units * msplit, work, [&](int64_t t0, int64_t t1) {
      thread_local std::vector<float> mbuf;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t u = t / msplit, m0 = t % msplit * rows_per, m1 = std::min(mg, m0 + rows_per);
        if (m0 < m1) multiply(u, m0, m1, vs + u * v_unit, mbuf);
      }
    });
    return;
  }
  // Otherwise a task is a unit, which transforms its input itself.
  conv_parallel(pool, units, work, [&](int64_t u0, int64_t u1) {
    thread_local std::vector<float> vbuf, mbuf, rowbuf;
    if (static_cast<int64_t>(vbuf.size()) < v_unit) vbuf.resize(static_cast<size_t>(v_unit));
    for (int64_t u = u0; u < u1; ++u) {
      transform(u, 0, cg, vbuf.data(), rowbuf);
      multiply(u, 0, mg, vbuf.data(), mbuf);
    }
  });
}

}  // namespace onyx::kernels::cpu
