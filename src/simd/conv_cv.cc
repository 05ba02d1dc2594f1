// The channel-vector direct convolution (see conv_cv.h), compiled once per SIMD target
// through Highway's foreach_target.h; the code after HWY_ONCE is target-independent.
// Not built into the WebAssembly module (nothing there calls it).
#ifndef __EMSCRIPTEN__
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/conv_cv.cc"
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "simd/conv_epilogue-inl.h"

#ifndef ONYX_SIMD_CONV_CV_ONCE
#define ONYX_SIMD_CONV_CV_ONCE
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "simd/conv_cv.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// A tile: NV vectors of output channels times NC output positions, NV * NC accumulators
// beside NV vectors of W and a broadcast. With 32 registers: 4 x 6 (24 accumulators; per
// depth step 4 loads of W and 6 broadcasts for 24 FMAs) for blocks of 64 channels, 2 x 12
// for narrower layers (DenseNet's 32); with 16 registers: 2 x 6.
#if HWY_MAX_BYTES >= 64
constexpr int kWideNV = 4;
constexpr int kMaxCols2 = 12;
constexpr int kMaxCols4 = 6;
#else
constexpr int kWideNV = 2;
constexpr int kMaxCols2 = 6;
constexpr int kMaxCols4 = 6;
#endif
constexpr int kMaxCols = kMaxCols2 > kMaxCols4 ? kMaxCols2 : kMaxCols4;

using TileFn = void (*)(const float*, int64_t, const int64_t*, const float*, const int64_t*,
                        float*, bool);

/// The sums of one tile over depths [0, K) of a and koff: out[j * CB + r] (+)= sum over p
/// of a[p * CB + r] * x[coff[j] + koff[p]] (CB = NV vectors); accumulate: add to out (a
/// later depth block).
template <int NV, int NC>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT a, int64_t K, const int64_t* HWY_RESTRICT koff,
                       const float* HWY_RESTRICT x, const int64_t* HWY_RESTRICT coff,
                       float* HWY_RESTRICT out, bool accumulate) {
  const DF d;
  const size_t L = hn::Lanes(d);
  const float* xp[NC];
  for (int j = 0; j < NC; ++j) xp[j] = x + coff[j];
  VF acc[NC][NV];
  for (int j = 0; j < NC; ++j)
    for (int v = 0; v < NV; ++v)
      acc[j][v] = accumulate ? hn::Load(d, out + (j * NV + v) * L) : hn::Zero(d);
  for (int64_t p = 0; p < K; ++p, a += NV * L) {
    VF av[NV];
    for (int v = 0; v < NV; ++v) av[v] = hn::Load(d, a + v * L);
    const int64_t o = koff[p];
    for (int j = 0; j < NC; ++j) {
      const VF b = hn::Set(d, xp[j][o]);
      for (int v = 0; v < NV; ++v) acc[j][v] = hn::MulAdd(av[v], b, acc[j][v]);
    }
  }
  for (int j = 0; j < NC; ++j)
    for (int v = 0; v < NV; ++v) hn::Store(acc[j][v], d, out + (j * NV + v) * L);
}

template <int NV, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> TileTable(std::index_sequence<I...>) {
  return {&Tile<NV, static_cast<int>(I) + 1>...};
}

// Depth per block: the block's W ([KC][CB], 32-64 KiB with 512-bit vectors) stays near
// L1 while every tile of a group multiplies it.
constexpr int64_t kKC = 256;
// Tiles whose sums are kept between depth blocks.
constexpr int64_t kGroupTiles = 16;

void Run(const ConvCvArgs& g) {
  static constexpr std::array<TileFn, kMaxCols2> kNarrow =
      TileTable<2>(std::make_index_sequence<kMaxCols2>());
  static constexpr std::array<TileFn, kMaxCols4> kWide =
      TileTable<kWideNV>(std::make_index_sequence<kMaxCols4>());
  const DF d;
  const size_t L = hn::Lanes(d);
  const bool wide = g.cb == static_cast<int64_t>(kWideNV * L) && kWideNV != 2;
  const int64_t CB = g.cb, NV = CB / static_cast<int64_t>(L);
  const int64_t max_cols = wide ? kMaxCols4 : kMaxCols2;
  const TileFn* table = wide ? kWide.data() : kNarrow.data();
  const int64_t TS = max_cols * CB;
  HWY_ALIGN float bias[4 * hn::MaxLanes(DF())] = {};
  if (g.bias) std::copy(g.bias, g.bias + g.rows, bias);
  const bool act = g.act.kind != Act::kNone;
  // The positions of rows [oy0, oy1) in flat order, in tiles of balanced widths.
  const int64_t P = (g.oy1 - g.oy0) * g.OW, pos_base = g.oy0 * g.OW;
  const int64_t tiles = (P + max_cols - 1) / max_cols;
  const int64_t base = P / tiles, wider = P % tiles;
  auto tile_at = [&](int64_t t, int64_t& nc) {  // first position (from pos_base) and width
    nc = base + (t < wider ? 1 : 0);
    return t * base + std::min(t, wider);
  };
  HWY_ALIGN float sums[kGroupTiles * kMaxCols * 4 * hn::MaxLanes(DF())];
  int64_t coff[kGroupTiles][kMaxCols];
  for (int64_t t0 = 0; t0 < tiles; t0 += kGroupTiles) {
    const int64_t t1 = std::min(tiles, t0 + kGroupTiles);
    for (int64_t t = t0; t < t1; ++t) {
      int64_t nc;
      const int64_t q0 = pos_base + tile_at(t, nc);
      for (int64_t j = 0; j < nc; ++j) {
        const int64_t q = q0 + j, oy = q / g.OW, ox = q % g.OW;
        coff[t - t0][j] = oy * g.sh * g.xrow + ox * g.sw;
      }
    }
    for (int64_t k0 = 0; k0 < g.K; k0 += kKC) {
      const int64_t kc = std::min(kKC, g.K - k0);
      for (int64_t t = t0; t < t1; ++t) {
        int64_t nc;
        tile_at(t, nc);
        table[nc - 1](g.a + k0 * CB, kc, g.koff + k0, g.x, coff[t - t0], sums + (t - t0) * TS,
                      k0 > 0);
      }
    }
    for (int64_t t = t0; t < t1; ++t) {
      int64_t nc;
      const int64_t pos0 = pos_base + tile_at(t, nc);
      float* out = sums + (t - t0) * TS;
      if (g.z) {  // (sum + bias) + z, as the reference adds them
        for (int64_t r = 0; r < g.rows; ++r) {
          const float* zr = g.z + r * g.ldy + pos0;
          for (int64_t j = 0; j < nc; ++j) out[j * CB + r] = (out[j * CB + r] + bias[r]) + zr[j];
        }
      }
      if (!g.z || act) {
        for (int64_t j = 0; j < nc; ++j) {
          for (int64_t v = 0; v < NV; ++v) {
            float* o = out + j * CB + v * static_cast<int64_t>(L);
            VF x = hn::Load(d, o);
            if (!g.z) x = hn::Add(x, hn::Load(d, bias + v * static_cast<int64_t>(L)));
            if (act) x = ApplyAct(d, x, g.act);
            hn::Store(x, d, o);
          }
        }
      }
      // The tile transposed into y: channel r's nc positions are contiguous there.
      for (int64_t r = 0; r < g.rows; ++r) {
        float* yr = g.y + r * g.ldy + pos0;
        for (int64_t j = 0; j < nc; ++j) yr[j] = out[j * CB + r];
      }
    }
  }
}

int64_t Block(int64_t rows) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  return rows >= kWideNV * L ? kWideNV * L : 2 * L;
}


}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(Run);
HWY_EXPORT(Block);

int64_t conv_cv_block(int64_t rows) {
  return HWY_DYNAMIC_DISPATCH(Block)(rows);
}

int64_t conv_cv_pack_size(int64_t rows, int64_t K) {
  const int64_t cb = conv_cv_block(rows);
  return (rows + cb - 1) / cb * cb * K;
}

void conv_cv_pack(const float* w, int64_t rows, int64_t K, float* out) {
  const int64_t cb = conv_cv_block(rows);
  // Written in order, read as cb row streams: written a row at a time (stride cb), the
  // stores of a block touched a new cache line each and ResNet-50's packing took ~50 ms
  // of its session creation.
  for (int64_t b = 0; b * cb < rows; ++b) {
    float* dst = out + b * cb * K;
    const int64_t m0 = b * cb, live = std::min(cb, rows - m0);
    const float* src = w + m0 * K;
    for (int64_t p = 0; p < K; ++p, dst += cb) {
      for (int64_t r = 0; r < live; ++r) dst[r] = src[r * K + p];
      for (int64_t r = live; r < cb; ++r) dst[r] = 0.0f;
    }
  }
}

void conv_cv(const ConvCvArgs& args) {
  if (args.rows <= 0 || args.oy1 <= args.oy0 || args.OW <= 0) return;
  HWY_DYNAMIC_DISPATCH(Run)(args);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
#endif  // __EMSCRIPTEN__
