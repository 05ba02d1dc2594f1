// simd::depthwise_conv2d, both of its kernels (per-plane and channel-blocked) on every
// shape, against a direct double-precision loop written here: random channel counts
// (partial vectors of channels included), planes from 1x1, kernels 1 to 5, strides 1 to
// 3, dilations, pads, batch 2, bias, residual and activations, on 1 and 3 threads, W as
// given and prepacked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/thread_pool.h"
#include "simd/depthwise.h"

namespace onyx {
namespace {

struct DwCase {
  int64_t n, c, ih, iw, kh, kw, sh, sw, dh, dw, ph, pw, pb, pr;
  bool bias, z;
  simd::Act act;
  int64_t oh() const { return (ih + ph + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (iw + pw + pr - ((kw - 1) * dw + 1)) / sw + 1; }
  std::string str() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " in " + std::to_string(ih) + "x" +
           std::to_string(iw) + " k " + std::to_string(kh) + "x" + std::to_string(kw) + " s " +
           std::to_string(sh) + "," + std::to_string(sw) + " d " + std::to_string(dh) + "," +
           std::to_string(dw) + " pads " + std::to_string(ph) + "," + std::to_string(pw) + "," +
           std::to_string(pb) + "," + std::to_string(pr) + (bias ? " bias" : "") + (z ? " z" : "") +
           " act " + std::to_string(static_cast<int>(act));
  }
};

double activate(simd::Act a, double v) {
  switch (a) {
    case simd::Act::kRelu:
      return v < 0 ? 0 : v;
    case simd::Act::kClip:
      return std::min(6.0, std::max(0.0, v));
    case simd::Act::kSiLU:
      return v / (1.0 + std::exp(-v));
    default:
      return v;
  }
}

/// Largest |got - ref| / (1 + |ref|) over the output.
/// prepack: W given in the blocked kernel's layout too (simd::depthwise_pack_blocked, as the
/// Conv kernel does for a constant W).
double check(const DwCase& k, simd::DwKernel kernel, ThreadPool* pool, std::mt19937& rng,
             bool prepack = false) {
  std::normal_distribution<float> nd;
  const int64_t oh = k.oh(), ow = k.ow();
  std::vector<float> x(static_cast<size_t>(k.n * k.c * k.ih * k.iw)), w(static_cast<size_t>(k.c * k.kh * k.kw));
  std::vector<float> b(static_cast<size_t>(k.c)), z(static_cast<size_t>(k.n * k.c * oh * ow));
  for (auto* v : {&x, &w, &b, &z})
    for (float& f : *v) f = nd(rng);
  // NaN in Y: an output the kernel does not write shows up. Guard values after it: a
  // store past the last output does.
  constexpr size_t kGuard = 64;
  constexpr float kGuardValue = 12345.0f;
  std::vector<float> y(z.size() + kGuard, std::nanf(""));
  std::fill(y.end() - kGuard, y.end(), kGuardValue);
  simd::DepthwiseArgs a;
  a.batch = k.n;
  a.channels = k.c;
  a.x = x.data();
  a.ih = k.ih;
  a.iw = k.iw;
  a.w = w.data();
  a.kh = k.kh;
  a.kw = k.kw;
  a.sh = k.sh;
  a.sw = k.sw;
  a.dh = k.dh;
  a.dw = k.dw;
  a.ph = k.ph;
  a.pw = k.pw;
  a.y = y.data();
  a.oh = oh;
  a.ow = ow;
  a.ep.bias = k.bias ? b.data() : nullptr;
  a.ep.z = k.z ? z.data() : nullptr;
  a.ep.act.kind = k.act;
  a.ep.act.alpha = 0.0f;
  a.ep.act.beta = 6.0f;
  a.kernel = kernel;
  std::vector<float> packed;
  if (prepack) {
    packed = simd::depthwise_pack_blocked(w.data(), k.c, k.kh * k.kw);
    a.w_blocked = packed.data();
  }
  simd::depthwise_conv2d(a, pool);
  double worst = 0;
  for (size_t i = z.size(); i < y.size(); ++i)
    if (y[i] != kGuardValue) worst = INFINITY;  // written past Y's end
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = k.bias ? b[static_cast<size_t>(c)] : 0.0;
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t iy = oy * k.sh - k.ph + i * k.dh, ix = ox * k.sw - k.pw + j * k.dw;
              if (iy < 0 || iy >= k.ih || ix < 0 || ix >= k.iw) continue;
              s += static_cast<double>(x[static_cast<size_t>(((n * k.c + c) * k.ih + iy) * k.iw + ix)]) *
                   w[static_cast<size_t>((c * k.kh + i) * k.kw + j)];
            }
          const size_t at = static_cast<size_t>(((n * k.c + c) * oh + oy) * ow + ox);
          if (k.z) s += z[at];
          s = activate(k.act, s);
          const double err = std::fabs(y[at] - s) / (1.0 + std::fabs(s));
          worst = std::isnan(y[at]) ? INFINITY : std::max(worst, err);
        }
  return worst;
}

TEST(Depthwise, BothKernelsMatchDirectLoopOnRandomShapes) {
  std::mt19937 rng(211);
  auto ri = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  ThreadPool three(3);
  const simd::Act acts[] = {simd::Act::kNone, simd::Act::kRelu, simd::Act::kClip, simd::Act::kSiLU};
  int runs = 0;
  for (int it = 0; it < 300; ++it) {
    DwCase k;
    k.n = it % 7 == 3 ? 2 : 1;
    k.c = it % 3 == 0 ? ri(1, 8) : ri(9, 40);
    k.ih = it % 5 == 0 ? ri(1, 4) : ri(5, it % 4 == 0 ? 70 : 20);
    k.iw = it % 5 == 1 ? ri(1, 4) : ri(5, it % 4 == 1 ? 90 : 20);
    k.kh = ri(1, 5);
    k.kw = it % 6 == 0 ? ri(1, 5) : k.kh;
    k.sh = ri(1, 3) == 3 && it % 2 ? 3 : ri(1, 2);
    k.sw = it % 5 == 2 ? ri(1, 3) : k.sh;
    k.dh = it % 8 == 5 ? 2 : 1;
    k.dw = it % 8 == 5 || it % 11 == 4 ? 2 : 1;
    k.ph = ri(0, 2);
    k.pw = ri(0, 2);
    k.pb = ri(0, 2);
    k.pr = ri(0, 2);
    k.bias = it % 2 == 0;
    k.z = it % 3 == 1;
    k.act = acts[it % 4];
    if (k.oh() < 1 || k.ow() < 1) continue;
    ++runs;
    for (simd::DwKernel kernel : {simd::DwKernel::kPlanes, simd::DwKernel::kBlocked, simd::DwKernel::kAuto})
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
        const double err = check(k, kernel, pool, rng);
        ASSERT_LT(err, 2e-5) << k.str() << " kernel " << static_cast<int>(kernel) << (pool ? " 3 threads" : " 1 thread");
      }
    ASSERT_LT(check(k, simd::DwKernel::kBlocked, &three, rng, true), 2e-5) << k.str() << " prepacked W";
  }
  EXPECT_GT(runs, 200);
}

TEST(Depthwise, WideThreeByThreeRows) {
  // The per-plane kernel's wide rows (DwRows: whole vectors past ow into the next row, never
  // past the call's last row, which the guard values after Y check): rows of whole and
  // partial vectors (64 = four AVX-512 vectors, 56, 71, 130), several row counts, residual
  // and activation, 1 and 3 threads.
  std::mt19937 rng(212);
  ThreadPool three(3);
  int i = 0;
  for (int64_t w : {64, 56, 71, 130}) {
    for (int64_t h : {4, 5, 8, 11, 56}) {
      DwCase k;
      k.n = i % 5 == 4 ? 2 : 1;
      k.c = 3 + i % 4;
      k.ih = h;
      k.iw = w;
      k.kh = k.kw = 3;
      k.sh = k.sw = k.dh = k.dw = 1;
      k.ph = k.pw = k.pb = k.pr = 1;
      k.bias = i % 2 == 0;
      k.z = i % 3 != 2;
      k.act = i % 2 ? simd::Act::kClip : simd::Act::kSiLU;
      ++i;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three})
        ASSERT_LT(check(k, simd::DwKernel::kPlanes, pool, rng), 2e-5) << k.str() << (pool ? " 3 threads" : " 1 thread");
    }
  }
}

TEST(Depthwise, HugeDilationOverPaddingStaysOffTheBlockedKernel) {
  // 16 channels of 5x5, a 3x3 window dilated by 3e5 columns over as much padding: the
  // per-plane kernel needs 3M floats (the Conv kernel accepts that), the channel-blocked one
  // would want 16 times more. It goes to the planes, and the result is right.
  DwCase k{1, 16, 5, 5, 3, 3, 1, 1, 1, 300000, 0, 300000, 0, 300000, true, true, simd::Act::kRelu};
  ASSERT_EQ(k.ow(), 5);
  simd::DepthwiseArgs a;
  a.channels = 16;
  a.ih = a.iw = 5;
  a.kh = a.kw = 3;
  a.dw = 300000;
  a.pw = 300000;
  a.oh = k.oh();
  a.ow = k.ow();
  EXPECT_FALSE(simd::depthwise_uses_blocked(a));
  a.dw = 2;  // the same window dilated by 2 is the blocked kernel's
  a.pw = 2;
  a.ow = 5;
  EXPECT_TRUE(simd::depthwise_uses_blocked(a));
  std::mt19937 rng(212);
  EXPECT_LT(check(k, simd::DwKernel::kAuto, nullptr, rng), 2e-5);
}

}  // namespace
}  // namespace onyx
