// Winograd F(4x4, 3x3) and F(2x2, 3x3) transforms (see winograd.h), compiled once per SIMD
// target through Highway's foreach_target.h.
//
// F(4x4, 3x3):
//   B^T = | 4  0 -5  0  1  0 |   G = |  1/4     0     0 |   A^T = | 1  1  1  1  1  0 |
//         | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6 |         | 0  1 -1  2 -2  0 |
//         | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6 |         | 0  1  1  4  4  0 |
//         | 0 -2 -1  2  1  0 |       | 1/24  1/12   1/6 |         | 0  1 -1  8 -8  1 |
//         | 0  2 -1 -2  1  0 |       | 1/24 -1/12   1/6 |
//         | 0  4  0 -5  0  1 |       |    0     0     1 |
//
// F(2x2, 3x3):
//   B^T = | 1  0 -1  0 |   G = |   1    0    0 |   A^T = | 1  1  1  0 |
//         | 0  1  1  0 |       | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//         | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |       |   0    0    1 |
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/winograd.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "simd/conv_epilogue-inl.h"
#include "simd/tail-inl.h"

#ifndef ONYX_SIMD_WINOGRAD_ONCE
#define ONYX_SIMD_WINOGRAD_ONCE
#include <algorithm>
#include <cstring>

#include "simd/gemm_conv.h"
#include "simd/winograd.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

/// out = B^T s (one 6-vector).
HWY_INLINE void BT6(DF d, const VF* s, VF* out) {
  const VF four = hn::Set(d, 4.0f), five = hn::Set(d, 5.0f), two = hn::Set(d, 2.0f);
  const VF t1 = hn::NegMulAdd(four, s[2], s[4]);  // s4 - 4 s2
  const VF t2 = hn::NegMulAdd(four, s[1], s[3]);  // s3 - 4 s1
  const VF t3 = hn::Sub(s[4], s[2]);
  const VF t4 = hn::Mul(two, hn::Sub(s[3], s[1]));
  out[0] = hn::Add(hn::NegMulAdd(five, s[2], hn::Mul(four, s[0])), s[4]);
  out[1] = hn::Add(t1, t2);
  out[2] = hn::Sub(t1, t2);
  out[3] = hn::Add(t3, t4);
  out[4] = hn::Sub(t3, t4);
  out[5] = hn::Add(hn::NegMulAdd(five, s[3], hn::Mul(four, s[1])), s[5]);
}

/// out = A^T s (6 -> 4).
HWY_INLINE void AT6(DF d, const VF* s, VF* out) {
  const VF a = hn::Add(s[1], s[2]), b = hn::Sub(s[1], s[2]);
  const VF c = hn::Add(s[3], s[4]), e = hn::Sub(s[3], s[4]);
  out[0] = hn::Add(hn::Add(s[0], a), c);
  out[1] = hn::MulAdd(hn::Set(d, 2.0f), e, b);
  out[2] = hn::MulAdd(hn::Set(d, 4.0f), c, a);
  out[3] = hn::Add(hn::MulAdd(hn::Set(d, 8.0f), e, b), s[5]);
}

/// out = B^T s for F(2x2, 3x3) (one 4-vector).
HWY_INLINE void BT4(const VF* s, VF* out) {
  out[0] = hn::Sub(s[0], s[2]);
  out[1] = hn::Add(s[1], s[2]);
  out[2] = hn::Sub(s[2], s[1]);
  out[3] = hn::Sub(s[1], s[3]);
}

/// out = A^T s for F(2x2, 3x3) (4 -> 2).
HWY_INLINE void AT4(const VF* s, VF* out) {
  out[0] = hn::Add(hn::Add(s[0], s[1]), s[2]);
  out[1] = hn::Sub(hn::Sub(s[1], s[2]), s[3]);
}

int64_t WinoLanes() {
  return static_cast<int64_t>(hn::Lanes(DF()));
}

/// Stores out (one transformed position of n tiles) into the panel layout of WinoInput.
HWY_INLINE void StorePanel(DF d, VF out, float* dst, bool whole, int64_t n, int64_t n1,
                           int64_t lane, int64_t panel_stride) {
  if (whole) {
    hn::StoreU(out, d, dst);
    return;
  }
  HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
  hn::Store(out, d, tmp);
  constexpr size_t kMax = HWY_MAX_BYTES / sizeof(float);
  CopyFew<kMax>(dst, tmp, static_cast<size_t>(n1));
  if (n1 < n) CopyFew<kMax>(dst - lane + panel_stride, tmp + n1, static_cast<size_t>(n - n1));
}

void WinoInput(const float* const rows[6], int64_t n, float* v, int64_t xi_stride,
               int64_t panel_stride, int64_t first) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), NR = 2 * L;
  VF w[6][6];  // w[r][k] = (d B)[r][k] for input row r
  for (int r = 0; r < 6; ++r) {
    VF s[6], unused0, unused1;
    hn::LoadInterleaved4(d, rows[r], s[0], s[1], s[2], s[3]);  // s[j][t] = row[4t + j]
    hn::LoadInterleaved4(d, rows[r] + 4, s[4], s[5], unused0, unused1);
    BT6(d, s, w[r]);
  }
  const int64_t lane = first % NR;
  float* base = v + (first / NR) * panel_stride + lane;
  const bool whole = n == L && lane + L <= NR;
  const int64_t n1 = std::min(n, NR - lane);
  for (int k = 0; k < 6; ++k) {
    VF col[6], out[6];
    for (int r = 0; r < 6; ++r) col[r] = w[r][k];
    BT6(d, col, out);
    for (int i = 0; i < 6; ++i)
      StorePanel(d, out[i], base + (6 * i + k) * xi_stride, whole, n, n1, lane, panel_stride);
  }
}

// The output transforms take a run of tiles (one call per output channel and tile row,
// not per winograd_lanes() tiles) and are a function per activation (WithAct: none, ReLU,
// Clip, SiLU without a switch per vector; the others through ActFn<kAnyAct>), each
// noinline: a JIT (WebAssembly) compiles and optimizes only those a model runs, and none
// carries every activation's polynomial inlined four times (WinoOutput was 16 KB of wasm
// with them).

/// winograd_lanes() tiles or fewer: columns [0, cols) of the 4 x 4 L block.
template <class F>
HWY_INLINE void WinoOutputBlock(const float* m, int64_t xi_stride, float bias, const float* z,
                                int64_t ldz, const F& act, float* y, int64_t ldy, int64_t rows,
                                int64_t cols) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  VF t[4][6];  // t[i][j] = (A^T M)[i][j]
  for (int j = 0; j < 6; ++j) {
    VF s[6], out[4];
    for (int r = 0; r < 6; ++r) s[r] = hn::LoadU(d, m + (6 * r + j) * xi_stride);
    AT6(d, s, out);
    for (int i = 0; i < 4; ++i) t[i][j] = out[i];
  }
  const VF vb = hn::Set(d, bias);
  const bool whole = cols == 4 * L;
  HWY_ALIGN float buf[4 * HWY_MAX_BYTES / sizeof(float)];
  for (int64_t i = 0; i < rows; ++i) {
    VF o[4];
    AT6(d, t[i], o);
    for (int k = 0; k < 4; ++k) o[k] = hn::Add(o[k], vb);
    if (z) {
      const float* zr = z + i * ldz;
      VF z0, z1, z2, z3;
      if (whole) {
        hn::LoadInterleaved4(d, zr, z0, z1, z2, z3);
      } else {
        std::fill(buf, buf + 4 * L, 0.0f);
        CopyFew<4 * HWY_MAX_BYTES / sizeof(float)>(buf, zr, static_cast<size_t>(cols));
        hn::LoadInterleaved4(d, buf, z0, z1, z2, z3);
      }
      o[0] = hn::Add(o[0], z0);
      o[1] = hn::Add(o[1], z1);
      o[2] = hn::Add(o[2], z2);
      o[3] = hn::Add(o[3], z3);
    }
    for (int k = 0; k < 4; ++k) o[k] = act(d, o[k]);
    float* yr = y + i * ldy;
    if (whole) {
      hn::StoreInterleaved4(o[0], o[1], o[2], o[3], d, yr);
    } else {
      hn::StoreInterleaved4(o[0], o[1], o[2], o[3], d, buf);
      CopyFew<4 * HWY_MAX_BYTES / sizeof(float)>(yr, buf, static_cast<size_t>(cols));
    }
  }
}

void WinoInput2(const float* const rows[4], int64_t n, float* v, int64_t xi_stride,
                int64_t panel_stride, int64_t first) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), NR = 2 * L;
  VF w[4][4];  // w[r][k] = (d B)[r][k] for input row r
  for (int r = 0; r < 4; ++r) {
    VF s[4];
    hn::LoadInterleaved2(d, rows[r], s[0], s[1]);  // s[j][t] = row[2t + j]
    hn::LoadInterleaved2(d, rows[r] + 2, s[2], s[3]);
    BT4(s, w[r]);
  }
  const int64_t lane = first % NR;
  float* base = v + (first / NR) * panel_stride + lane;
  const bool whole = n == L && lane + L <= NR;
  const int64_t n1 = std::min(n, NR - lane);
  for (int k = 0; k < 4; ++k) {
    VF col[4], out[4];
    for (int r = 0; r < 4; ++r) col[r] = w[r][k];
    BT4(col, out);
    for (int i = 0; i < 4; ++i)
      StorePanel(d, out[i], base + (4 * i + k) * xi_stride, whole, n, n1, lane, panel_stride);
  }
}

template <class F>
HWY_INLINE void WinoOutput2Block(const float* m, int64_t xi_stride, const float bias, const float* z,
                                 int64_t ldz, const F& act, float* y, int64_t ldy, int64_t rows,
                                 int64_t cols) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  VF t[2][4];  // t[i][j] = (A^T M)[i][j]
  for (int j = 0; j < 4; ++j) {
    VF s[4], out[2];
    for (int r = 0; r < 4; ++r) s[r] = hn::LoadU(d, m + (4 * r + j) * xi_stride);
    AT4(s, out);
    t[0][j] = out[0];
    t[1][j] = out[1];
  }
  const VF vb = hn::Set(d, bias);
  const bool whole = cols == 2 * L;
  HWY_ALIGN float buf[2 * HWY_MAX_BYTES / sizeof(float)];
  for (int64_t i = 0; i < rows; ++i) {
    VF o[2];
    AT4(t[i], o);
    o[0] = hn::Add(o[0], vb);
    o[1] = hn::Add(o[1], vb);
    if (z) {
      const float* zr = z + i * ldz;
      VF z0, z1;
      if (whole) {
        hn::LoadInterleaved2(d, zr, z0, z1);
      } else {
        std::fill(buf, buf + 2 * L, 0.0f);
        CopyFew<2 * HWY_MAX_BYTES / sizeof(float)>(buf, zr, static_cast<size_t>(cols));
        hn::LoadInterleaved2(d, buf, z0, z1);
      }
      o[0] = hn::Add(o[0], z0);
      o[1] = hn::Add(o[1], z1);
    }
    o[0] = act(d, o[0]);
    o[1] = act(d, o[1]);
    float* yr = y + i * ldy;
    if (whole) {
      hn::StoreInterleaved2(o[0], o[1], d, yr);
    } else {
      hn::StoreInterleaved2(o[0], o[1], d, buf);
      CopyFew<2 * HWY_MAX_BYTES / sizeof(float)>(yr, buf, static_cast<size_t>(cols));
    }
  }
}

/// A run of tiles of one tile row (kTile = 4: F(4x4, 3x3); 2: F(2x2, 3x3)), L tiles per
/// block; a function per tile size and activation (WithAct).
template <int kTile, class F>
HWY_NOINLINE void WinoOutputRun(const float* m, int64_t xi_stride, int64_t run, float bias,
                                const float* z, int64_t ldz, const F& act, float* y, int64_t ldy,
                                int64_t rows, int64_t width) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t k = 0; k < run; k += L) {
    const int64_t col = kTile * k, cols = std::min(kTile * std::min(L, run - k), width - col);
    const float* zk = z ? z + col : nullptr;
    if constexpr (kTile == 4)
      WinoOutputBlock(m + k, xi_stride, bias, zk, ldz, act, y + col, ldy, rows, cols);
    else
      WinoOutput2Block(m + k, xi_stride, bias, zk, ldz, act, y + col, ldy, rows, cols);
  }
}

void WinoOutput(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                int64_t width) {
  WithAct(act, [&](const auto& f) { WinoOutputRun<4>(m, xi_stride, run, bias, z, ldz, f, y, ldy, rows, width); });
}

void WinoOutput2(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                 int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                 int64_t width) {
  WithAct(act, [&](const auto& f) { WinoOutputRun<2>(m, xi_stride, run, bias, z, ldz, f, y, ldy, rows, width); });
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(WinoLanes);
HWY_EXPORT(WinoInput);
HWY_EXPORT(WinoOutput);
HWY_EXPORT(WinoInput2);
HWY_EXPORT(WinoOutput2);

int64_t winograd_lanes() {
  static const int64_t l = HWY_DYNAMIC_DISPATCH(WinoLanes)();
  return l;
}

void winograd_input(const float* const rows[6], int64_t n, float* v, int64_t xi_stride,
                    int64_t panel_stride, int64_t first) {
  HWY_DYNAMIC_DISPATCH(WinoInput)(rows, n, v, xi_stride, panel_stride, first);
}

void winograd_output(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                     int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                     int64_t width) {
  HWY_DYNAMIC_DISPATCH(WinoOutput)(m, xi_stride, run, bias, z, ldz, act, y, ldy, rows, width);
}

void winograd_input2(const float* const rows[4], int64_t n, float* v, int64_t xi_stride,
                     int64_t panel_stride, int64_t first) {
  HWY_DYNAMIC_DISPATCH(WinoInput2)(rows, n, v, xi_stride, panel_stride, first);
}

void winograd_output2(const float* m, int64_t xi_stride, int64_t run, float bias, const float* z,
                      int64_t ldz, const Activation& act, float* y, int64_t ldy, int64_t rows,
                      int64_t width) {
  HWY_DYNAMIC_DISPATCH(WinoOutput2)(m, xi_stride, run, bias, z, ldz, act, y, ldy, rows, width);
}

void winograd_kernel2(const float* g, double out[16]) {
  // G g G^T with G's rows (1, 0, 0), (1, 1, 1) / 2, (1, -1, 1) / 2, (0, 0, 1).
  auto col = [](double a, double b, double c, double* o, int step) {
    o[0] = a;
    o[step] = (a + b + c) * 0.5;
    o[2 * step] = (a - b + c) * 0.5;
    o[3 * step] = c;
  };
  double gg[4 * 3];  // G g, row-major 4 x 3
  for (int j = 0; j < 3; ++j) col(g[j], g[3 + j], g[6 + j], gg + j, 3);
  for (int i = 0; i < 4; ++i) col(gg[3 * i], gg[3 * i + 1], gg[3 * i + 2], out + 4 * i, 1);
}

void winograd_kernel(const float* g, double out[36]) {
  // G g G^T with G's rows (1/4, 0, 0), -(1, 1, 1)/6, -(1, -1, 1)/6, (1/24, 1/12, 1/6),
  // (1/24, -1/12, 1/6), (0, 0, 1), applied with the shared sums of those rows (about a
  // third of the operations of the plain products: at session creation this transform
  // took half of the digit reader's instructions).
  auto col = [](double a, double b, double c, double* o, int step) {
    const double s = a + c, t = a * (1.0 / 24) + c * (1.0 / 6), u = b * (1.0 / 12);
    o[0] = a * 0.25;
    o[step] = -(s + b) / 6;
    o[2 * step] = -(s - b) / 6;
    o[3 * step] = t + u;
    o[4 * step] = t - u;
    o[5 * step] = c;
  };
  double gg[6 * 3];  // G g, row-major 6 x 3
  for (int j = 0; j < 3; ++j) col(g[j], g[3 + j], g[6 + j], gg + j, 3);
  for (int i = 0; i < 6; ++i) col(gg[3 * i], gg[3 * i + 1], gg[3 * i + 2], out + 6 * i, 1);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
