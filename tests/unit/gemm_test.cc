// src/simd/gemm: the Highway SGEMM against a naive triple loop in double, on random and
// odd shapes (1, 3, 17, 63, 65, K not a multiple of the vector width), transposes,
// alpha/beta, leading dimensions wider than the matrix, packed B and a thread pool.
#include "simd/gemm.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "runtime/thread_pool.h"

namespace onyx {
namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
};

/// Runs one case through sgemm (or pack_b + sgemm_packed) and checks every element of C
/// against the double-precision product within 1e-5 of sum |alpha * a * b| + |beta * c|.
void check(const Case& c, bool packed, ThreadPool* pool, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  const int64_t ar = c.ta ? c.K : c.M, ac = c.ta ? c.M : c.K;  // stored A extents
  const int64_t br = c.tb ? c.N : c.K, bc = c.tb ? c.K : c.N;
  const int64_t lda = ac + 3, ldb = bc + 1, ldc = c.N + 2;
  std::vector<float> a(static_cast<size_t>(ar * lda)), b(static_cast<size_t>(br * ldb));
  std::vector<float> cm(static_cast<size_t>(c.M * ldc));
  for (float& v : a) v = nd(rng);
  for (float& v : b) v = nd(rng);
  for (float& v : cm) v = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : nd(rng);
  std::vector<float> got = cm;
  if (packed) {
    simd::PackedB pb = simd::pack_b(c.tb, c.K, c.N, b.data(), ldb, pool);
    simd::sgemm_packed(c.ta, c.M, c.alpha, a.data(), lda, pb, c.beta, got.data(), ldc, pool);
  } else {
    simd::sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                got.data(), ldc, pool);
  }
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float g = got[static_cast<size_t>(i * ldc + j)];
      const float old = cm[static_cast<size_t>(i * ldc + j)];
      if (j >= c.N) {  // past N: untouched
        ASSERT_TRUE(std::isnan(old) ? std::isnan(g) : g == old)
            << "wrote past N at " << i << "," << j;
        continue;
      }
      double s = 0, mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double av = a[static_cast<size_t>(c.ta ? k * lda + i : i * lda + k)];
        const double bv = b[static_cast<size_t>(c.tb ? j * ldb + k : k * ldb + j)];
        s += av * bv;
        mag += std::fabs(av * bv);
      }
      double want = double(c.alpha) * s, tol = 1e-5 * std::fabs(double(c.alpha)) * mag + 1e-6;
      if (c.beta != 0.0f) {
        want += double(c.beta) * old;
        tol += 1e-6 * std::fabs(double(c.beta) * old);
      }
      ASSERT_NEAR(g, want, tol) << "M " << c.M << " N " << c.N << " K " << c.K << " ta " << c.ta
                                << " tb " << c.tb << " alpha " << c.alpha << " beta " << c.beta
                                << " packed " << packed << " at " << i << "," << j;
    }
}

TEST(Sgemm, OddShapesMatchDoubleLoop) {
  std::mt19937 rng(7);
  const int64_t sizes[] = {1, 3, 17, 63, 65};
  int n = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : sizes) {
        const bool ta = (n & 1) != 0, tb = (n & 2) != 0;
        const float alpha = n % 3 == 0 ? 1.0f : 0.75f,
                    beta = n % 4 == 0 ? 0.0f : (n % 4 == 1 ? 1.0f : -0.5f);
        check({ta, tb, M, N, K, alpha, beta}, n % 5 == 0, nullptr, rng);
        ++n;
      }
}

// Every SIMD target compiled in and supported here (AVX-512, AVX2, SSE4, emulated ...).
TEST(Sgemm, EveryTarget) {
  std::mt19937 rng(5);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Case& c :
         {Case{false, false, 17, 65, 63, 1.0f, 0.0f}, Case{true, true, 9, 33, 300, 0.5f, 1.0f},
          Case{false, true, 1, 3, 17, -1.0f, 0.5f}}) {
      check(c, false, nullptr, rng);
      check(c, true, nullptr, rng);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Sgemm, DeepAndWideBlocksWithThreads) {
  std::mt19937 rng(11);
  ThreadPool pool(3);
  // K past one depth block (256), M past one row block, N over several panels.
  const Case cases[] = {
      {false, false, 300, 129, 517, 1.0f, 0.0f}, {true, false, 97, 250, 300, 0.5f, 1.0f},
      {false, true, 5, 1000, 257, 1.0f, 0.25f},  {true, true, 130, 70, 600, -1.0f, 0.0f},
      {false, false, 1, 64, 512, 1.0f, 1.0f},
  };
  for (const Case& c : cases) {
    check(c, false, &pool, rng);
    check(c, true, &pool, rng);
    check(c, false, nullptr, rng);
  }
}

TEST(Sgemm, RandomShapes) {
  std::mt19937 rng(3);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(2);
  for (int it = 0; it < 60; ++it) {
    Case c{ri(0, 1) == 1,
           ri(0, 1) == 1,
           ri(1, 90),
           ri(1, 90),
           ri(1, 300),
           ri(0, 3) == 0 ? 2.0f : 1.0f,
           static_cast<float>(ri(0, 2)) * 0.5f};
    check(c, it % 3 == 0, it % 2 ? &pool : nullptr, rng);
  }
}

TEST(Sgemm, EmptyDepthScalesC) {
  std::vector<float> c{1, 2, 3, 4};
  simd::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  simd::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_NE(std::string(simd::gemm_target_name()), "");
}

}  // namespace
}  // namespace onyx
