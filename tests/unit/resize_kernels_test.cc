// Twin tests of the optimized Resize (src/kernels/cpu/resize.cc): nearest (every
// nearest_mode) and linear over the coordinate modes it takes, up- and downsampling by
// scales or sizes, against the reference kernels at 1 and 3 threads (kernel_twins.h);
// the cases it declines (cubic, tf_crop_and_resize, a resized channel axis) run too.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_twins.h"

namespace onyx::test {
namespace {

TEST(ResizeKernels, MatchesReference) {
  std::mt19937 rng(401);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* ctms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                        "tf_crop_and_resize"};
  const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const float factors[] = {2.0f, 0.5f, 3.0f, 1.5f, 0.75f, 1.0f, 2.0f};
  int k = 0;
  for (int it = 0; it < 160; ++it) {
    const bool linear = it % 3 == 1, cubic = it % 17 == 16;
    const std::string ctm = ctms[it % 5 == 4 && it % 2 == 0 ? 4 : (it / 3) % 4];
    const Dims xd{ri(1, 2), ri(1, 4), ri(1, 17), it % 4 == 0 ? ri(20, 50) : ri(1, 17)};
    const float fh = factors[ri(0, 6)], fw = factors[ri(0, 6)];
    Tensor x = random_floats(xd, rng);
    if (++k % 5 == 0) sprinkle_specials(x, rng);
    TwinCase t;
    t.op = "Resize";
    t.opset = it % 2 ? 13 : 19;
    t.attrs = {AttrSpec::String("mode", cubic    ? "cubic"
                                        : linear ? "linear"
                                                 : "nearest"),
               AttrSpec::String("coordinate_transformation_mode", ctm)};
    if (!linear) t.attrs.push_back(AttrSpec::String("nearest_mode", nearest[it % 4]));
    std::vector<TwinInput> ins = {{"x", x}};
    ins.push_back({ctm == "tf_crop_and_resize" ? "roi" : "",
                   make_float({8}, {0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 0.8f}), true});
    const bool by_sizes = it % 5 == 2;
    const bool channel = it % 23 == 11;  // a resized C axis: the reference
    if (by_sizes) {
      std::vector<int64_t> sizes = {xd[0], channel ? xd[1] + 1 : xd[1],
                                    std::max<int64_t>(1, int64_t(xd[2] * fh)),
                                    std::max<int64_t>(1, int64_t(xd[3] * fw))};
      ins.push_back({"", Tensor()});
      ins.push_back({"sizes", make_tensor<int64_t>(DType::kInt64, {4}, sizes), it % 3 == 0});
    } else {
      ins.push_back(
          {"scales", make_float({4}, {1.0f, channel ? 2.0f : 1.0f, fh, fw}), it % 3 == 0});
    }
    t.inputs = ins;
    std::string what = "Resize " + dims_str(xd) +
                       (linear  ? " linear "
                        : cubic ? " cubic "
                                : " nearest ") +
                       ctm + (by_sizes ? " sizes" : " scales") + " " + std::to_string(fh) + " x " +
                       std::to_string(fw);
    expect_twins(t, 1e-5, 1e-5, what);
  }
}

TEST(ResizeKernels, DetectorUpsamplesMatchReference) {
  // nn.Upsample(scale_factor=2) as torch exports it, at the detector's sizes.
  std::mt19937 rng(402);
  for (const Dims& d : {Dims{1, 128, 20, 20}, Dims{1, 64, 40, 40}, Dims{2, 3, 7, 9}}) {
    for (const char* mode : {"nearest", "linear"}) {
      TwinCase t;
      t.op = "Resize";
      t.attrs = {
          AttrSpec::String("mode", mode),
          AttrSpec::String("coordinate_transformation_mode",
                           std::string(mode) == "nearest" ? "asymmetric" : "pytorch_half_pixel"),
          AttrSpec::String("nearest_mode", "floor")};
      t.inputs = {{"x", random_floats(d, rng)},
                  {"", Tensor()},
                  {"scales", make_float({4}, {1, 1, 2, 2}), true}};
      expect_twins(t, 1e-5, 1e-5, std::string("Resize 2x ") + mode + " " + dims_str(d));
    }
  }
}

}  // namespace
}  // namespace onyx::test
