// Twin tests of the optimized elementwise kernels (src/kernels/cpu/elementwise.cc,
// activation.cc): every op on random shapes (odd sizes, empty tensors, every broadcast
// pattern, NaN/inf/huge inputs) through the reference kernels and through the optimized
// ones at 1 and 3 threads (kernel_twins.h); and an accuracy sweep of the SIMD math
// (src/simd/activations.cc) against the double-precision std:: functions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernel_twins.h"
#include "simd/activations.h"

namespace onyx::test {
namespace {

// Broadcast pairs (a, b) covering the row plans: same shape, scalars on either side,
// per-channel, last-axis vector, outer products, general strided, empty, and sizes that
// thread (many rows; one long row cut into pieces).
const std::vector<std::pair<Dims, Dims>> kPairs = {
    {{1}, {1}},
    {{7}, {7}},
    {{3, 5, 7}, {3, 5, 7}},
    {{2, 3, 17, 19}, {}},
    {{}, {2, 3, 17, 19}},
    {{33}, {1}},
    {{2, 5, 6, 7}, {5, 1, 1}},
    {{5, 1, 1}, {2, 5, 6, 7}},
    {{1, 13, 9, 11}, {1, 13, 1, 1}},
    {{2, 3, 64}, {64}},
    {{61}, {4, 61}},
    {{4, 1, 9}, {4, 7, 1}},
    {{2, 1, 3, 1, 5}, {1, 4, 1, 6, 1}},
    {{3, 1}, {1, 3}},
    {{2, 3, 4, 5}, {3, 1, 5}},
    {{0, 3}, {3}},
    {{2, 0, 3}, {2, 1, 3}},
    {{3, 64, 40, 41}, {64, 1, 1}},
    {{200003}, {}},
    {{2, 100003}, {2, 1}},
    {{70000, 3}, {3}},
};

TwinCase binary_case(const std::string& op, const Tensor& a, const Tensor& b, bool b_const) {
  TwinCase c;
  c.op = op;
  c.inputs = {{"a", a}, {"b", b, b_const}};
  return c;
}

TEST(ElementwiseKernels, BinaryOpsMatchReference) {
  std::mt19937 rng(101);
  int k = 0;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean"}) {
    for (const auto& [ad, bd] : kPairs) {
      Tensor a = random_floats(ad, rng), b = random_floats(bd, rng);
      if (++k % 3 == 0) {
        sprinkle_specials(a, rng);
        sprinkle_specials(b, rng);
      }
      expect_twins(binary_case(op, a, b, k % 4 == 1), 0, 1e-6,
                   std::string(op) + " " + dims_str(ad) + " with " + dims_str(bd));
    }
  }
}

TEST(ElementwiseKernels, PReluMatchesReference) {
  std::mt19937 rng(102);
  const std::vector<std::pair<Dims, Dims>> pairs = {{{2, 5, 6, 7}, {5, 1, 1}},
                                                    {{1, 3, 17}, {3, 1}},
                                                    {{4, 9}, {9}},
                                                    {{4, 9}, {1}},
                                                    {{33}, {33}},
                                                    {{0, 4}, {4}},
                                                    {{2, 64, 50, 50}, {64, 1, 1}}};
  int k = 0;
  for (const auto& [xd, sd] : pairs) {
    Tensor x = random_floats(xd, rng), s = random_floats(sd, rng, -0.5f, 0.5f);
    if (++k % 2 == 0) sprinkle_specials(x, rng);
    expect_twins(binary_case("PRelu", x, s, k % 3 == 0), 0, 1e-6,
                 "PRelu " + dims_str(xd) + " slope " + dims_str(sd));
  }
}

TEST(ElementwiseKernels, VariadicOpsMatchReference) {
  std::mt19937 rng(103);
  const std::vector<std::vector<Dims>> sets = {{{5, 7}},
                                               {{3, 1, 5}, {4, 1}, {5}},
                                               {{2, 3, 4}, {2, 3, 4}, {1}, {3, 1}},
                                               {{0, 2}, {2}, {1}},
                                               {{60000}, {60000}, {}}};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    for (const auto& shapes : sets) {
      TwinCase c;
      c.op = op;
      std::string what = op;
      for (size_t i = 0; i < shapes.size(); ++i) {
        Tensor t = random_floats(shapes[i], rng);
        if (i == 1) sprinkle_specials(t, rng);
        c.inputs.push_back({"x" + std::to_string(i), t});
        what += " " + dims_str(shapes[i]);
      }
      expect_twins(c, 0, 1e-6, what);
    }
  }
}

TEST(ElementwiseKernels, PowMatchesReference) {
  std::mt19937 rng(104);
  for (double e : {0.0, 0.5, 1.0, 2.0, 3.0, -1.0, 1.5}) {
    for (const Dims& d : {Dims{1}, Dims{3, 17}, Dims{0, 5}, Dims{2, 3, 100, 101}}) {
      Tensor x = random_floats(d, rng);
      sprinkle_specials(x, rng);
      TwinCase c;
      c.op = "Pow";
      const bool as_int = e == 2.0 && d.size() == 2;  // an int64 exponent, as exports of x**2 have
      Tensor ex = as_int ? make_tensor<int64_t>(DType::kInt64, {}, {2})
                         : make_float({1}, {static_cast<float>(e)});
      c.inputs = {{"x", x}, {"e", ex, d.size() != 4}};
      expect_twins(c, 0, 1e-6, "Pow " + dims_str(d) + " ^ " + std::to_string(e));
    }
  }
}

struct UnaryCase {
  const char* op;
  std::vector<AttrSpec> attrs;
  int64_t opset = 17;
};

TEST(ElementwiseKernels, UnaryOpsMatchReference) {
  std::mt19937 rng(105);
  const std::vector<UnaryCase> cases = {
      {"Relu", {}},
      {"LeakyRelu", {}},
      {"LeakyRelu", {AttrSpec::Float("alpha", 0.3f)}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"HardSigmoid", {}},
      {"HardSigmoid", {AttrSpec::Float("alpha", 0.4f), AttrSpec::Float("beta", 0.25f)}},
      {"HardSwish", {}},
      {"Exp", {}},
      {"Log", {}},
      {"Sqrt", {}},
      {"Reciprocal", {}},
      {"Neg", {}},
      {"Abs", {}},
      {"Erf", {}},
      {"Softplus", {}},
      {"Mish", {}, 18},
      {"Softsign", {}},
      {"Elu", {}},
      {"Elu", {AttrSpec::Float("alpha", 0.5f)}},
      {"Selu", {}},
      {"Selu", {AttrSpec::Float("alpha", 1.5f), AttrSpec::Float("gamma", 2.0f)}},
      {"Celu", {}},
      {"Celu", {AttrSpec::Float("alpha", 0.7f)}},
      {"ThresholdedRelu", {}},
      {"ThresholdedRelu", {AttrSpec::Float("alpha", -0.5f)}},
      {"Floor", {}},
      {"Ceil", {}},
      {"Round", {}},
      {"Sign", {}},
      {"Gelu", {}, 20},
      {"Gelu", {AttrSpec::String("approximate", "tanh")}, 20},
  };
  const std::vector<Dims> shapes = {{1}, {7}, {3, 11}, {0, 4}, {2, 17, 19}, {3, 100003}};
  for (const UnaryCase& u : cases) {
    for (const Dims& d : shapes) {
      // Wide values, halves for Round, and the special values.
      Tensor x = random_floats(d, rng, -12.0f, 12.0f);
      for (int64_t i = 0; i + 1 < x.numel(); i += 5)
        x.data<float>()[i] = std::round(x.data<float>()[i] * 2) / 2;
      sprinkle_specials(x, rng);
      TwinCase c;
      c.op = u.op;
      c.opset = u.opset;
      c.attrs = u.attrs;
      c.inputs = {{"x", x}};
      // The reference rounds intermediate results in float (Gelu's 1 + erf, Celu's
      // exp(x) - 1), so its error near 0 is some 1e-7 absolute.
      expect_twins(c, 1e-6, 1e-5, std::string(u.op) + " " + dims_str(d));
    }
  }
}

TEST(ElementwiseKernels, ClipMatchesReference) {
  std::mt19937 rng(106);
  for (const Dims& d : {Dims{1}, Dims{5, 13}, Dims{0}, Dims{4, 64, 33, 31}}) {
    Tensor x = random_floats(d, rng);
    sprinkle_specials(x, rng);
    // Clip-6: attributes (one, both, none); Clip-13: optional inputs, fed or constant.
    for (int form = 0; form < 7; ++form) {
      TwinCase c;
      c.op = "Clip";
      c.inputs = {{"x", x}};
      if (form < 3) {
        c.opset = 6;
        if (form != 1) c.attrs.push_back(AttrSpec::Float("min", 0.0f));
        if (form != 2) c.attrs.push_back(AttrSpec::Float("max", 6.0f));
      } else {
        const bool lo = form != 4, hi = form != 5;
        c.inputs.push_back({lo ? "lo" : "", make_float({}, {-1.0f}), form == 6});
        if (hi) c.inputs.push_back({"hi", make_float({}, {form == 6 ? -2.0f : 1.5f}), form == 6});
      }
      expect_twins(c, 0, 0, "Clip form " + std::to_string(form) + " " + dims_str(d));
    }
  }
}

// ---- accuracy of the SIMD math against double-precision libm ----

/// Distance of got from the double ref in units of the float ulp at ref (0 when ref is
/// below the normal range: there a float has fewer bits, so only the absolute error counts).
double ulps(double ref, float got) {
  const float r = static_cast<float>(ref);
  if (!(std::fabs(ref) >= 1.17549435e-38)) return 0;
  const double ulp = std::nextafter(std::fabs(r), INFINITY) - std::fabs(r);
  return std::fabs(got - ref) / ulp;
}

struct Sweep {
  const char* name;
  simd::Unary op;
  std::function<double(double)> ref;
  double max_ulp;          ///< bound where |y| >= 1e-6
  double max_rel;          ///< bound on the relative error where 1e-30 <= |y| < 1e-6
  double max_abs = 1e-36;  ///< bound on the absolute error below
};

double sigmoid_d(double x) {
  return 1 / (1 + std::exp(-x));
}

TEST(SimdMath, MatchesDoublePrecisionLibm) {
  // Every 1021st float bit pattern (4.2 million values: every magnitude, both signs, the
  // subnormals), plus the special values and a dense grid over [-12, 12].
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 1021) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, sizeof f);
    xs.push_back(f);
  }
  for (int i = -1200000; i <= 1200000; ++i) xs.push_back(static_cast<float>(i) * 1e-5f);
  for (float v :
       {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0.5f, 3.92f, 88.72f, -87.33f, -103.9f})
    xs.push_back(v);
  const std::vector<Sweep> sweeps = {
      {"exp", simd::Unary::kExp, [](double x) { return std::exp(x); }, 1.5, 2e-7},
      {"log", simd::Unary::kLog, [](double x) { return std::log(x); }, 1.5, 2e-7},
      {"erf", simd::Unary::kErf, [](double x) { return std::erf(x); }, 3, 3e-7},
      {"tanh", simd::Unary::kTanh, [](double x) { return std::tanh(x); }, 4, 4e-7},
      {"sigmoid", simd::Unary::kSigmoid, sigmoid_d, 4, 4e-7},
      // 1 + erf(x / sqrt 2) cancels just above x = -sqrt 2, where the erfc form takes over.
      {"gelu", simd::Unary::kGelu,
       [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 10, 1e-6},
      // x * sigmoid(u) inherits the float rounding of u = c x (1 + 0.044715 x^2): some |u| eps
      // relative where u is large and negative.
      {"gelu_tanh", simd::Unary::kGeluTanh,
       [](double x) { return x * sigmoid_d(2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)); },
       24, 2e-5, 1e-34},
      {"softplus", simd::Unary::kSoftplus,
       [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }, 4,
       4e-7},
      // sigmoid flushes below FLT_MIN, so x * sigmoid(x) is 0 below x = -87.3 (|y| < 1e-35).
      {"swish", simd::Unary::kSwish, [](double x) { return x * sigmoid_d(x); }, 4, 4e-7, 1e-35},
      {"mish", simd::Unary::kMish,
       [](double x) {
         const double sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
         return x * std::tanh(sp);
       },
       5, 5e-7},
  };
  std::vector<float> y(xs.size());
  for (const Sweep& s : sweeps) {
    simd::UnaryParams p;
    p.a = 1;  // swish's alpha
    simd::unary(s.op, p, xs.data(), y.data(), static_cast<int64_t>(xs.size()));
    double worst_ulp = 0, worst_rel = 0, worst_abs = 0;
    float ulp_at = 0, rel_at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double r = s.ref(xs[i]);
      const float g = y[i];
      if (std::isnan(r) || std::isinf(r) || std::isinf(static_cast<float>(r))) {
        // NaN, and results past the float range, must come out as such.
        ASSERT_TRUE(std::isnan(r) ? std::isnan(g) : g == static_cast<float>(r))
            << s.name << "(" << xs[i] << ") = " << g << ", expected " << r;
        continue;
      }
      ASSERT_FALSE(std::isnan(g) || std::isinf(g))
          << s.name << "(" << xs[i] << ") = " << g << ", expected " << r;
      const double a = std::fabs(r);
      if (a >= 1e-6) {
        const double u = ulps(r, g);
        if (u > worst_ulp) worst_ulp = u, ulp_at = xs[i];
      } else if (a >= 1e-30) {
        const double e = std::fabs(g - r) / a;
        if (e > worst_rel) worst_rel = e, rel_at = xs[i];
      } else {
        worst_abs = std::max(worst_abs, std::fabs(g - r));
      }
    }
    std::cout << s.name << ": " << worst_ulp << " ulp (x = " << ulp_at
              << ") where |y| >= 1e-6, relative " << worst_rel << " (x = " << rel_at
              << ") down to 1e-30, absolute " << worst_abs << " below\n";
    EXPECT_LE(worst_ulp, s.max_ulp) << s.name << " at x = " << ulp_at;
    EXPECT_LE(worst_rel, s.max_rel) << s.name << " at x = " << rel_at;
    EXPECT_LE(worst_abs, s.max_abs) << s.name;
  }
}

}  // namespace
}  // namespace onyx::test
