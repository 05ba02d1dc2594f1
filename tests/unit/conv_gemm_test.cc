// The float Conv and ConvTranspose kernels take an im2col + blocked GEMM path (and a
// depthwise 2-D path); their direct-loop references are the oracle. These tests run
// both on random shapes, groups, strides, dilations and pads and compare.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels {
// Test hooks defined in src/kernels/reference/conv.cc.
void conv_f32_for_test(bool reference, const Dims& x_dims, const Dims& w_dims, const Dims& y_dims,
                       const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                       const std::vector<int64_t>& pads_begin, int64_t group, const float* x,
                       const float* w, const float* b, float* y);
void conv_transpose_f32_for_test(bool reference, const Dims& x_dims, const Dims& w_dims, const Dims& y_dims,
                                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                                 const std::vector<int64_t>& pads_begin, int64_t group, const float* x,
                                 const float* w, const float* b, float* y);
}  // namespace onyx::kernels

namespace onyx {
namespace {

using ConvFn = void (*)(bool, const Dims&, const Dims&, const Dims&, const std::vector<int64_t>&,
                        const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, const float*,
                        const float*, const float*, float*);

/// Runs both paths on random data and returns the largest error relative to 1 + |ref|.
double compare(ConvFn fn, const Dims& xd, const Dims& wd, const Dims& yd, const std::vector<int64_t>& st,
               const std::vector<int64_t>& dl, const std::vector<int64_t>& pb, int64_t group, int64_t maps,
               bool bias, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(dims_numel(xd))), w(static_cast<size_t>(dims_numel(wd)));
  std::vector<float> b(static_cast<size_t>(maps)), ref(static_cast<size_t>(dims_numel(yd)), -7.0f), got(ref);
  for (float& v : x) v = nd(rng);
  for (float& v : w) v = nd(rng);
  for (float& v : b) v = nd(rng);
  fn(true, xd, wd, yd, st, dl, pb, group, x.data(), w.data(), bias ? b.data() : nullptr, ref.data());
  fn(false, xd, wd, yd, st, dl, pb, group, x.data(), w.data(), bias ? b.data() : nullptr, got.data());
  double err = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    err = std::max(err, std::fabs(double(ref[i]) - double(got[i])) / (1.0 + std::fabs(double(ref[i]))));
  return err;
}

TEST(ConvGemm, MatchesDirectReference) {
  std::mt19937 rng(1234);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 400; ++it) {
    int nsp = ri(1, 3);
    int64_t group = ri(1, 3), cg = ri(1, it % 10 == 0 ? 70 : 5), mg = ri(1, 9), batch = ri(1, 2);
    if (it % 4 == 1) {  // depthwise 2-D
      nsp = 2;
      cg = mg = 1;
      group = ri(1, 6);
    }
    Dims xd{batch, cg * group}, wd{mg * group, cg}, yd{batch, mg * group};
    std::vector<int64_t> st, dl, pb;
    bool ok = true;
    for (int d = 0; d < nsp; ++d) {
      int64_t in = ri(1, nsp == 3 ? 7 : 20), k = ri(1, 4), s = ri(1, 3), dil = ri(1, 2), p0 = ri(0, 2), p1 = ri(0, 2);
      if (it % 7 == 0) k = s = 1, p0 = p1 = 0;  // pointwise
      const int64_t ek = (k - 1) * dil + 1;
      if (in + p0 + p1 < ek) ok = false;
      xd.push_back(in);
      wd.push_back(k);
      yd.push_back((in + p0 + p1 - ek) / s + 1);
      st.push_back(s);
      dl.push_back(dil);
      pb.push_back(p0);
    }
    if (!ok) continue;
    ++runs;
    double err = compare(kernels::conv_f32_for_test, xd, wd, yd, st, dl, pb, group, mg * group, it % 2, rng);
    ASSERT_LT(err, 1e-4) << "x " << dims_str(xd) << " w " << dims_str(wd) << " group " << group;
  }
  EXPECT_GT(runs, 300);
}

TEST(ConvTransposeGemm, MatchesScatterReference) {
  std::mt19937 rng(99);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 300; ++it) {
    int nsp = ri(1, 3);
    int64_t group = ri(1, 3), cg = ri(1, it % 10 == 0 ? 300 : 5), mg = ri(1, 6), batch = ri(1, 2);
    Dims xd{batch, cg * group}, wd{cg * group, mg}, yd{batch, mg * group};
    std::vector<int64_t> st, dl, pb;
    bool ok = true;
    for (int d = 0; d < nsp; ++d) {
      // Negative pads stand for an output_shape larger than the natural extent.
      int64_t in = ri(1, nsp == 3 ? 5 : 12), k = ri(1, 4), s = ri(1, 3), dil = ri(1, 2);
      int64_t p0 = ri(-1, 2), p1 = ri(-1, 2), op = ri(0, static_cast<int>(s) - 1);
      const int64_t out = s * (in - 1) + op + (k - 1) * dil + 1 - p0 - p1;
      if (out < 1) ok = false;
      xd.push_back(in);
      wd.push_back(k);
      yd.push_back(out);
      st.push_back(s);
      dl.push_back(dil);
      pb.push_back(p0);
    }
    if (!ok) continue;
    ++runs;
    double err = compare(kernels::conv_transpose_f32_for_test, xd, wd, yd, st, dl, pb, group, mg * group, it % 2, rng);
    ASSERT_LT(err, 1e-4) << "x " << dims_str(xd) << " w " << dims_str(wd) << " group " << group;
  }
  EXPECT_GT(runs, 200);
}

}  // namespace
}  // namespace onyx
