// src/simd/activations: SIMD sigmoid and tanh against the double-precision libm
// functions over [-100, 100], lengths that leave a tail, and the infinities.
#include "simd/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace onyx {
namespace {

TEST(SimdActivations, MatchLibm) {
  for (int64_t n : {0, 1, 3, 17, 15385}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] =
          n == 1 ? 0.5f : -100.0f + 200.0f * i / std::max<int64_t>(n - 1, 1);
    if (n > 3) {
      x[1] = INFINITY;
      x[2] = -INFINITY;
    }
    std::vector<float> s = x, t = x;
    simd::sigmoid_inplace(s.data(), n);
    simd::tanh_inplace(t.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[static_cast<size_t>(i)];
      EXPECT_NEAR(s[static_cast<size_t>(i)], 1.0 / (1.0 + std::exp(-v)), 1e-6)
          << "sigmoid(" << v << ")";
      EXPECT_NEAR(t[static_cast<size_t>(i)], std::tanh(v), 1e-6) << "tanh(" << v << ")";
    }
  }
}

}  // namespace
}  // namespace onyx
