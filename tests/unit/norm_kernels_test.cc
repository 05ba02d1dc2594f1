// Twin tests of the optimized row kernels: Softmax/LogSoftmax (src/kernels/cpu/softmax.cc),
// Layer/Batch/Instance/GroupNormalization (norm.cc) and ReduceSum/Mean/Max/Min (reduce.cc),
// each against the reference kernels on random shapes (odd sizes, empty, every axis,
// NaN/inf rows, sizes that thread) at 1 and 3 threads (kernel_twins.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_twins.h"

namespace onyx::test {
namespace {

TEST(NormKernels, SoftmaxMatchesReference) {
  std::mt19937 rng(201);
  struct Shape {
    Dims d;
    std::vector<int64_t> axes;
  };
  const std::vector<Shape> shapes = {
      {{1}, {0, -1}},        {{7}, {0}},
      {{3, 17}, {0, 1, -1}}, {{2, 3, 5}, {0, 1, 2, -2}},
      {{2, 3, 300}, {1}},    {{2, 300, 3}, {1}},
      {{4, 0, 3}, {1, 2}},   {{64, 1000}, {-1}},
      {{3, 9, 40, 41}, {1}}, {{1, 12, 33, 33}, {-1, 2}},
  };
  int k = 0;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const Shape& s : shapes)
      for (int64_t axis : s.axes)
        for (int64_t opset : {11, 13}) {
          Tensor x = random_floats(s.d, rng, -10.0f, 10.0f);
          if (++k % 3 == 0) sprinkle_specials(x, rng);
          if (k % 5 == 0 && x.numel() >= 4) {  // a row of -inf, one with +inf
            const int64_t n = s.d.back();
            for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = -INFINITY;
            x.data<float>()[x.numel() - 1] = INFINITY;
          }
          TwinCase c;
          c.op = op;
          c.opset = opset;
          c.attrs = {AttrSpec::Int("axis", axis)};
          c.inputs = {{"x", x}};
          expect_twins(c, 1e-6, 1e-5,
                       std::string(op) + "-" + std::to_string(opset) + " " + dims_str(s.d) +
                           " axis " + std::to_string(axis));
        }
}

TEST(NormKernels, LayerNormalizationMatchesReference) {
  std::mt19937 rng(202);
  struct Shape {
    Dims x;
    int64_t axis;
    Dims scale;
  };
  const std::vector<Shape> shapes = {
      {{1}, -1, {1}},         {{2, 3, 8}, -1, {8}},      {{2, 3, 8}, -1, {1, 8}},
      {{2, 3, 8}, 1, {3, 8}}, {{2, 3, 8}, 0, {2, 3, 8}}, {{5, 33}, -1, {33}},
      {{0, 8}, -1, {8}},      {{256, 768}, -1, {768}},   {{4, 7, 129}, -1, {129}},
      {{3, 4, 5}, 1, {1, 5}},  // scale broadcast over axis 1: the reference
  };
  int k = 0;
  for (const Shape& s : shapes)
    for (int form = 0; form < 4; ++form) {
      // Values around an offset, so the mean matters.
      Tensor x = random_floats(s.x, rng, -2.0f, 2.0f);
      const float offset = form == 3 ? 1000.0f : 0.5f;
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += offset;
      if (++k % 7 == 0) sprinkle_specials(x, rng);
      TwinCase c;
      c.op = "LayerNormalization";
      c.attrs = {AttrSpec::Int("axis", s.axis)};
      if (form == 2) c.attrs.push_back(AttrSpec::Float("epsilon", 1e-3f));
      const bool constant = form % 2 == 1;
      c.inputs = {{"x", x}, {"scale", random_floats(s.scale, rng, 0.5f, 2.0f), constant}};
      if (form != 2) c.inputs.push_back({"bias", random_floats(s.scale, rng), constant});
      expect_twins(c, 2e-5, 2e-5,
                   "LayerNormalization " + dims_str(s.x) + " axis " + std::to_string(s.axis) +
                       " scale " + dims_str(s.scale) + " form " + std::to_string(form));
    }
}

TEST(NormKernels, BatchNormalizationMatchesReference) {
  std::mt19937 rng(203);
  for (const Dims& d : {Dims{1, 1}, Dims{3, 5}, Dims{2, 7, 9}, Dims{1, 13, 11, 17},
                        Dims{0, 4, 3, 3}, Dims{2, 64, 40, 41}}) {
    for (int form = 0; form < 3; ++form) {
      const int64_t c = d[1];
      Tensor x = random_floats(d, rng);
      if (form == 1) sprinkle_specials(x, rng);
      const bool constant = form != 2;
      TwinCase t;
      t.op = "BatchNormalization";
      t.opset = form == 0 ? 9 : 15;
      if (form == 1) t.attrs = {AttrSpec::Float("epsilon", 1e-3f)};
      t.inputs = {{"x", x},
                  {"scale", random_floats({c}, rng), constant},
                  {"b", random_floats({c}, rng), constant},
                  {"mean", random_floats({c}, rng), constant},
                  {"var", random_floats({c}, rng, 0.1f, 2.0f), constant}};
      expect_twins(t, 1e-5, 1e-5,
                   "BatchNormalization " + dims_str(d) + " form " + std::to_string(form));
    }
  }
}

TEST(NormKernels, InstanceAndGroupNormalizationMatchReference) {
  std::mt19937 rng(204);
  for (const Dims& d :
       {Dims{1, 1, 1}, Dims{2, 3, 7}, Dims{1, 4, 9, 11}, Dims{2, 6, 0}, Dims{2, 32, 30, 31}}) {
    Tensor x = random_floats(d, rng);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 100.0f;
    const int64_t c = d[1];
    TwinCase t;
    t.op = "InstanceNormalization";
    t.inputs = {{"x", x}, {"scale", random_floats({c}, rng)}, {"b", random_floats({c}, rng), true}};
    expect_twins(t, 2e-5, 2e-5, "InstanceNormalization " + dims_str(d));
    for (int64_t groups : {int64_t{1}, c, c % 2 == 0 ? c / 2 : c}) {
      for (int64_t opset : {18, 21}) {
        const int64_t pc = opset < 21 ? groups : c;
        TwinCase g;
        g.op = "GroupNormalization";
        g.opset = opset;
        g.attrs = {AttrSpec::Int("num_groups", groups)};
        g.inputs = {{"x", x}, {"scale", random_floats({pc}, rng)}, {"b", random_floats({pc}, rng)}};
        expect_twins(g, 2e-5, 2e-5,
                     "GroupNormalization-" + std::to_string(opset) + " " + dims_str(d) +
                         " groups " + std::to_string(groups));
      }
    }
  }
}

TEST(NormKernels, ReduceMatchesReference) {
  std::mt19937 rng(205);
  struct Shape {
    Dims d;
    std::vector<std::vector<int64_t>> axes;
  };
  const std::vector<Shape> shapes = {
      {{1}, {{0}, {}}},
      {{7}, {{0}, {-1}}},
      {{3, 17}, {{1}, {0}, {0, 1}}},
      {{2, 3, 5}, {{2}, {1}, {0}, {1, 2}, {0, 1}, {0, 2}}},
      {{2, 1, 5}, {{0, 2}}},  // a run up to the size-1 axis
      {{2, 64, 13, 11}, {{2, 3}, {1}, {-1}}},
      {{128, 768}, {{-1}}},
      {{300, 257}, {{0}}},
      {{4, 0, 3}, {{2}, {1}}},
  };
  int k = 0;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    for (const Shape& s : shapes)
      for (const auto& axes : s.axes)
        for (int64_t keep : {0, 1}) {
          Tensor x = random_floats(s.d, rng);
          if (++k % 4 == 0) sprinkle_specials(x, rng, false);
          const bool sum = std::string(op) == "ReduceSum";
          for (int64_t opset : {int64_t{13}, int64_t{18}}) {
            TwinCase c;
            c.op = op;
            c.opset = opset;
            c.attrs = {AttrSpec::Int("keepdims", keep)};
            c.inputs = {{"x", x}};
            const bool from_input = sum ? opset >= 13 : opset >= 18;
            if (from_input) {
              if (!axes.empty())
                c.inputs.push_back(
                    {"axes",
                     make_tensor<int64_t>(DType::kInt64, {static_cast<int64_t>(axes.size())}, axes),
                     k % 2 == 0});
            } else if (!axes.empty()) {
              c.attrs.push_back(AttrSpec::Ints("axes", axes));
            }
            std::string what =
                std::string(op) + "-" + std::to_string(opset) + " " + dims_str(s.d) + " axes";
            for (int64_t a : axes) what += " " + std::to_string(a);
            // Float sums against the reference's double ones: errors of some ulp of the sum of
            // |x| (up to 300 values of up to 3 here).
            expect_twins(c, 1e-4, 1e-5, what + " keepdims " + std::to_string(keep));
          }
        }
}

}  // namespace
}  // namespace onyx::test
