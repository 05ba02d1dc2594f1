// Twin tests of the optimized pooling kernels (src/kernels/cpu/pool.cc): MaxPool and
// AveragePool over random 1-D and 2-D geometries (kernels, strides 1..3, dilations, pads,
// auto_pad, ceil_mode, count_include_pad) and the global pools, against the reference
// kernels at 1 and 3 threads (kernel_twins.h), NaN and infinities included.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kernel_twins.h"

namespace onyx::test {
namespace {

TEST(PoolKernels, WindowPoolsMatchReference) {
  std::mt19937 rng(301);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 240; ++it) {
    const bool max = it % 2 == 0;
    const size_t nsp = it % 7 == 3 ? 1 : 2;
    // Wide rows so whole vectors (AVX-512: 16 floats, stride 2: 32 inputs) run.
    const int64_t n = ri(1, 2), c = ri(1, 5);
    Dims xd{n, c};
    std::vector<int64_t> kernel, strides, dil, pads(2 * nsp);
    for (size_t i = 0; i < nsp; ++i) {
      const bool wide = i + 1 == nsp && it % 3 == 0;
      xd.push_back(wide ? ri(30, 90) : ri(1, 20));
      kernel.push_back(ri(1, i + 1 == nsp && it % 5 == 0 ? 5 : 3));
      strides.push_back(it % 4 == 1 ? 2 : ri(1, 3));
      dil.push_back(it % 9 == 8 ? 2 : 1);
      pads[i] = std::min<int64_t>(ri(0, 2), kernel[i] - 1);
      pads[i + nsp] = std::min<int64_t>(ri(0, 2), kernel[i] - 1);
    }
    const int auto_pad = it % 11 == 5 ? 1 : it % 13 == 6 ? 2 : it % 17 == 7 ? 3 : 0;
    const bool ceil_mode = it % 4 == 3 && auto_pad == 0;
    bool fits = true;
    for (size_t i = 0; i < nsp; ++i)
      fits = fits &&
             xd[2 + i] + (auto_pad ? 0 : pads[i] + pads[i + nsp]) >= (kernel[i] - 1) * dil[i] + 1;
    if (!fits) continue;
    Tensor x = random_floats(xd, rng);
    if (it % 6 == 2) sprinkle_specials(x, rng);
    TwinCase t;
    t.op = max ? "MaxPool" : "AveragePool";
    t.opset = max ? 12 : 19;  // AveragePool takes dilations from 19
    t.attrs = {AttrSpec::Ints("kernel_shape", kernel), AttrSpec::Ints("strides", strides)};
    if (max || it % 3 != 0) t.attrs.push_back(AttrSpec::Ints("dilations", dil));
    const char* ap[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    if (auto_pad)
      t.attrs.push_back(AttrSpec::String("auto_pad", ap[auto_pad]));
    else
      t.attrs.push_back(AttrSpec::Ints("pads", pads));
    if (ceil_mode) t.attrs.push_back(AttrSpec::Int("ceil_mode", 1));
    if (!max) t.attrs.push_back(AttrSpec::Int("count_include_pad", it % 4 < 2));
    t.inputs = {{"x", x}};
    std::string what = std::string(t.op) + " x " + dims_str(xd) + " kernel " + dims_str(kernel) +
                       " strides " + dims_str(strides) + " dilations " + dims_str(dil) + " pads " +
                       dims_str(pads) + " auto_pad " + ap[auto_pad] + (ceil_mode ? " ceil" : "");
    ++runs;
    expect_twins(t, 1e-6, 1e-5, what);
  }
  EXPECT_GT(runs, 180);
}

TEST(PoolKernels, ModelShapesMatchReference) {
  // The pools of the benchmark models: resnet's 3x3/2 MaxPool, SPPF's 5x5/1, UNet's 2x2/2,
  // densenet's 2x2/2 average, an Inception-style 3x3/1 average with pads, the digit
  // reader's 2x2/2 on odd sizes (the fast path's element-by-element tail) and 2x1/2x1.
  std::mt19937 rng(302);
  struct Case {
    const char* op;
    Dims x;
    std::vector<int64_t> k, s, p;
    int64_t include_pad;
    bool ceil = false;
  };
  const Case cases[] = {
      {"MaxPool", {1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0},
      // SqueezeNet's 3x3/2 with ceil_mode, at 111x111 (no overhang) and 54x54 (overhang).
      {"MaxPool", {1, 16, 111, 111}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 0, true},
      {"MaxPool", {1, 16, 54, 54}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 0, true},
      {"AveragePool", {1, 16, 54, 54}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 0, true},
      {"MaxPool", {1, 32, 20, 20}, {5, 5}, {1, 1}, {2, 2, 2, 2}, 0},
      {"MaxPool", {2, 16, 64, 64}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0},
      {"MaxPool", {1, 8, 17, 75}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0},
      {"AveragePool", {1, 32, 56, 56}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0},
      {"AveragePool", {1, 24, 35, 35}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0},
      {"AveragePool", {1, 24, 35, 35}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
      // The digit reader's 2x1/2x1 pools (one column per window: folded straight from X).
      {"MaxPool", {1, 64, 8, 56}, {2, 1}, {2, 1}, {0, 0, 0, 0}, 0},
      {"MaxPool", {2, 64, 5, 57}, {2, 1}, {2, 1}, {0, 0, 0, 0}, 0},
      {"MaxPool", {1, 8, 9, 40}, {3, 1}, {1, 1}, {1, 0, 1, 0}, 0},
      {"AveragePool", {1, 8, 9, 37}, {3, 1}, {2, 1}, {1, 0, 1, 0}, 0},
      {"AveragePool", {1, 8, 9, 37}, {3, 1}, {2, 1}, {1, 0, 1, 0}, 1},
  };
  for (const Case& c : cases) {
    TwinCase t;
    t.op = c.op;
    t.attrs = {AttrSpec::Ints("kernel_shape", c.k), AttrSpec::Ints("strides", c.s),
               AttrSpec::Ints("pads", c.p)};
    if (std::string(c.op) == "AveragePool")
      t.attrs.push_back(AttrSpec::Int("count_include_pad", c.include_pad));
    if (c.ceil) t.attrs.push_back(AttrSpec::Int("ceil_mode", 1));
    // Each shape plain and with NaN and infinities sprinkled in (whole-vector paths too).
    for (bool specials : {false, true}) {
      Tensor x = random_floats(c.x, rng);
      if (specials) sprinkle_specials(x, rng);
      t.inputs = {{"x", x}};
      expect_twins(t, 1e-6, 1e-5,
                   std::string(c.op) + " " + dims_str(c.x) + " kernel " + dims_str(c.k) +
                       (specials ? " with NaN/inf" : ""));
    }
  }
}

TEST(PoolKernels, GlobalPoolsMatchReference) {
  std::mt19937 rng(303);
  int k = 0;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (const Dims& d : {Dims{1, 1, 1}, Dims{2, 3, 7}, Dims{1, 1280, 7, 7}, Dims{2, 5, 3, 4, 5},
                          Dims{0, 3, 4, 4}, Dims{1, 64, 56, 56}}) {
      Tensor x = random_floats(d, rng);
      if (++k % 2 == 0) sprinkle_specials(x, rng);
      TwinCase t;
      t.op = op;
      t.inputs = {{"x", x}};
      expect_twins(t, 1e-5, 1e-5, std::string(op) + " " + dims_str(d));
    }
}

}  // namespace
}  // namespace onyx::test
