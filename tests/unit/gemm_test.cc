// src/simd/gemm: the Highway SGEMM against a loop in double precision, through every path:
// B packed per call, prepacked (pack_b + sgemm_packed), given as panels (sgemm_panels) and
// read in place (few rows); the blocked path and the few-rows (GEMV) path; transposes;
// alpha/beta; every epilogue term (row and column biases, a residual, each activation);
// odd shapes (1, primes, sizes not a multiple of the vector width, depths past one pass);
// leading dimensions wider than the matrix; no thread pool and a pool of 3; every SIMD
// target compiled in and supported here.
#include "simd/gemm.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "runtime/thread_pool.h"

namespace onyx {
namespace {

using simd::Activation;

/// How a case hands B to the GEMM.
enum class Via { kSgemm, kPacked, kPanels };

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
};

/// Which epilogue terms a case uses.
struct EpiSpec {
  bool row_bias = false, col_bias = false, residual = false;
  Activation act = Activation::kNone;
  float p0 = 0.0f, p1 = 0.0f;
};

double act_ref(const EpiSpec& e, double x) {
  switch (e.act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kClip:
      return std::min<double>(std::max<double>(x, e.p0), e.p1);
    case Activation::kLeakyRelu:
      return x < 0 ? e.p0 * x : x;
    case Activation::kHardSigmoid:
      return std::clamp(e.p0 * x + e.p1, 0.0, 1.0);
    case Activation::kHardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kSiLU:
      return x / (1 + std::exp(-x));
    case Activation::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x *
             (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

std::string act_name(Activation a) {
  static const char* names[] = {"none",    "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
                                "Sigmoid", "Tanh", "SiLU", "Gelu",      "GeluTanh"};
  return names[static_cast<int>(a)];
}

/// Packs op(B) into the panels sgemm_panels takes, by the layout gemm.h states.
std::vector<float> make_panels(const Case& c, const std::vector<float>& b, int64_t ldb) {
  const int64_t nr = simd::gemm_panel_width(), np = (c.N + nr - 1) / nr;
  std::vector<float> p(static_cast<size_t>(np * c.K * nr), 0.0f);
  for (int64_t q = 0; q < np; ++q)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t t = 0; t < nr && q * nr + t < c.N; ++t) {
        const int64_t j = q * nr + t;
        p[static_cast<size_t>((q * c.K + k) * nr + t)] =
            b[static_cast<size_t>(c.tb ? j * ldb + k : k * ldb + j)];
      }
  return p;
}

/// Runs one case and checks every element of C against the double-precision result within
/// 1e-5 of sum |alpha * a * b| + |beta * c| (times 1.5 through an activation, plus 2e-6 for
/// the activation's own approximation), and that C past N is untouched.
void check(const Case& c, Via via, const EpiSpec& e, ThreadPool* pool, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  const int64_t ar = c.ta ? c.K : c.M, ac = c.ta ? c.M : c.K;  // stored A extents
  const int64_t br = c.tb ? c.N : c.K, bc = c.tb ? c.K : c.N;
  const int64_t lda = ac + 3, ldb = bc + 1, ldc = c.N + 2, ldr = c.N + 5;
  std::vector<float> a(static_cast<size_t>(ar * lda)), b(static_cast<size_t>(br * ldb));
  std::vector<float> cm(static_cast<size_t>(c.M * ldc));
  std::vector<float> rb(static_cast<size_t>(c.M)), cb(static_cast<size_t>(c.N));
  std::vector<float> res(static_cast<size_t>(c.M * ldr));
  for (float& v : a) v = nd(rng);
  for (float& v : b) v = nd(rng);
  for (float& v : rb) v = nd(rng);
  for (float& v : cb) v = nd(rng);
  for (float& v : res) v = nd(rng);
  for (float& v : cm) v = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : nd(rng);
  simd::Epilogue ep;
  if (e.row_bias) ep.row_bias = rb.data();
  if (e.col_bias) ep.col_bias = cb.data();
  if (e.residual) {
    ep.residual = res.data();
    ep.ldr = ldr;
  }
  ep.act = e.act;
  ep.p0 = e.p0;
  ep.p1 = e.p1;
  std::vector<float> got = cm;
  if (via == Via::kPacked) {
    simd::PackedB pb = simd::pack_b(c.tb, c.K, c.N, b.data(), ldb, pool);
    ASSERT_EQ(pb.k(), c.K);
    ASSERT_EQ(pb.n(), c.N);
    simd::sgemm_packed(c.ta, c.M, c.alpha, a.data(), lda, pb, c.beta, got.data(), ldc, pool, &ep);
  } else if (via == Via::kPanels) {
    const std::vector<float> panels = make_panels(c, b, ldb);
    simd::sgemm_panels(c.ta, c.M, c.N, c.K, c.alpha, a.data(), lda, panels.data(), c.beta,
                       got.data(), ldc, pool, &ep);
  } else {
    simd::sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                got.data(), ldc, pool, &ep);
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
      double v = double(c.alpha) * s, tol = 1e-5 * std::fabs(double(c.alpha)) * mag + 1e-6;
      if (c.beta != 0.0f) {
        v += double(c.beta) * old;
        tol += 1e-6 * std::fabs(double(c.beta) * old);
      }
      if (e.row_bias) v += rb[static_cast<size_t>(i)];
      if (e.col_bias) v += cb[static_cast<size_t>(j)];
      if (e.residual) v += res[static_cast<size_t>(i * ldr + j)];
      tol += 1e-6 * std::fabs(v);
      double want = v;
      if (e.act != Activation::kNone) {
        want = act_ref(e, v);
        tol = 1.5 * tol + 2e-6 * (1 + std::fabs(want));
      }
      ASSERT_NEAR(g, want, tol) << "M " << c.M << " N " << c.N << " K " << c.K << " ta " << c.ta
                                << " tb " << c.tb << " alpha " << c.alpha << " beta " << c.beta
                                << " via " << static_cast<int>(via) << " act " << act_name(e.act)
                                << " rb " << e.row_bias << " cb " << e.col_bias << " res "
                                << e.residual << " pool " << (pool != nullptr) << " at " << i << ","
                                << j;
    }
}

const Activation kActs[] = {
    Activation::kNone,        Activation::kRelu,      Activation::kClip,    Activation::kLeakyRelu,
    Activation::kHardSigmoid, Activation::kHardSwish, Activation::kSigmoid, Activation::kTanh,
    Activation::kSiLU,        Activation::kGelu,      Activation::kGeluTanh};

EpiSpec epi_of(int n) {
  EpiSpec e;
  e.act = kActs[n % 11];
  e.row_bias = (n / 11) % 2 == 1;
  e.col_bias = (n / 3) % 2 == 1;
  e.residual = (n / 5) % 3 == 1;
  if (e.act == Activation::kClip) {
    e.p0 = -0.5f;
    e.p1 = 0.75f;
  } else if (e.act == Activation::kLeakyRelu) {
    e.p0 = 0.1f;
  } else if (e.act == Activation::kHardSigmoid) {
    e.p0 = 0.2f;
    e.p1 = 0.5f;
  }
  return e;
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
        check({ta, tb, M, N, K, alpha, beta}, static_cast<Via>(n % 3), {}, nullptr, rng);
        ++n;
      }
}

// Every row count of the few-rows path (1 .. the strip height) and the first strips of the
// blocked one, against every column remainder of a panel, through each way of giving B.
TEST(Sgemm, FewRowsAndGemv) {
  std::mt19937 rng(8);
  int n = 0;
  for (int64_t M = 1; M <= 10; ++M)
    for (int64_t N : {1, 5, 8, 16, 17, 31, 64, 67, 131})
      for (Via via : {Via::kSgemm, Via::kPacked, Via::kPanels}) {
        const int64_t K = n % 4 == 0 ? 1 : (n % 4 == 1 ? 7 : (n % 4 == 2 ? 64 : 301));
        check({n % 5 == 0, n % 3 == 0, M, N, K, n % 2 ? 1.0f : -0.5f, n % 7 == 0 ? 0.5f : 0.0f},
              via, {}, nullptr, rng);
        ++n;
      }
}

TEST(Sgemm, EpiloguesMatchDoubleLoop) {
  std::mt19937 rng(9);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n = 0; n < 132; ++n) {
    const int64_t M = n % 4 == 0 ? ri(1, 5) : ri(1, 70), N = ri(1, 70),
                  K = n % 9 == 0 ? 1 : ri(1, 150);
    const float beta = n % 3 == 0 ? 0.0f : (n % 3 == 1 ? 1.0f : 0.5f);
    check({n % 7 == 3, n % 5 == 2, M, N, K, n % 4 == 1 ? 0.5f : 1.0f, beta},
          static_cast<Via>(n % 3), epi_of(n), nullptr, rng);
  }
}

// Depths past one pass (the epilogue applies on the last pass only), and blocks of rows
// and panels split over a pool of 3 threads.
TEST(Sgemm, DeepAndWideBlocksWithThreads) {
  std::mt19937 rng(11);
  ThreadPool pool(3);
  const Case cases[] = {
      {false, false, 300, 129, 517, 1.0f, 0.0f}, {true, false, 97, 250, 300, 0.5f, 1.0f},
      {false, true, 5, 1000, 257, 1.0f, 0.25f},  {true, true, 130, 70, 600, -1.0f, 0.0f},
      {false, false, 1, 64, 512, 1.0f, 1.0f},    {false, false, 13, 37, 2053, 1.0f, 0.5f},
      {true, false, 7, 41, 4099, 0.5f, 0.0f},    {false, true, 200, 3, 2500, 1.0f, 0.0f},
      {false, false, 1, 1000, 2048, 1.0f, 0.0f}, {false, true, 3, 700, 97, 1.0f, -1.0f},
      // A transposed and packed once for all column chunks (run_gemm's PackAAll): a
      // pointwise convolution's 49 positions, and rows past a strip over two depth passes.
      {true, false, 49, 320, 960, 1.0f, 0.0f},   {true, false, 41, 96, 4500, 1.0f, 0.5f},
  };
  int n = 0;
  for (const Case& c : cases) {
    for (Via via : {Via::kSgemm, Via::kPacked, Via::kPanels}) {
      check(c, via, epi_of(n), &pool, rng);
      ++n;
    }
    check(c, Via::kSgemm, epi_of(n++), nullptr, rng);
  }
}

TEST(Sgemm, RandomShapes) {
  std::mt19937 rng(3);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ThreadPool pool(3);
  for (int it = 0; it < 80; ++it) {
    Case c{ri(0, 1) == 1,
           ri(0, 1) == 1,
           it % 4 == 0 ? ri(1, 6) : ri(1, 150),
           ri(1, 90),
           ri(1, 300),
           ri(0, 3) == 0 ? 2.0f : 1.0f,
           static_cast<float>(ri(0, 2)) * 0.5f};
    check(c, static_cast<Via>(it % 3), it % 5 == 0 ? epi_of(it) : EpiSpec{},
          it % 2 ? &pool : nullptr, rng);
  }
}

// Every SIMD target compiled in and supported here (AVX-512, AVX2, SSE4, emulated ...).
TEST(Sgemm, EveryTarget) {
  std::mt19937 rng(5);
  ThreadPool pool(3);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    int n = 0;
    for (const Case& c :
         {Case{false, false, 17, 65, 63, 1.0f, 0.0f}, Case{true, true, 9, 33, 300, 0.5f, 1.0f},
          Case{false, true, 1, 3, 17, -1.0f, 0.5f}, Case{false, false, 3, 70, 40, 1.0f, 0.0f},
          Case{true, false, 2, 9, 5, 1.0f, 1.0f}, Case{false, false, 40, 45, 2100, 1.0f, 0.0f}}) {
      for (Via via : {Via::kSgemm, Via::kPacked, Via::kPanels})
        check(c, via, epi_of(n++), nullptr, rng);
      check(c, Via::kSgemm, epi_of(n++), &pool, rng);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Sgemm, EmptyDepthAppliesBetaAndEpilogue) {
  std::vector<float> c{1, 2, 3, 4};
  simd::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  simd::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
  // C = relu(0 * C + row_bias + col_bias + residual).
  const std::vector<float> rb{1, -5}, cb{0.5f, 2}, res{1, 1, 1, 1};
  simd::Epilogue ep;
  ep.row_bias = rb.data();
  ep.col_bias = cb.data();
  ep.residual = res.data();
  ep.ldr = 2;
  ep.act = Activation::kRelu;
  simd::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2, nullptr, &ep);
  EXPECT_EQ(c, (std::vector<float>{2.5f, 4.0f, 0.0f, 0.0f}));
  EXPECT_NE(std::string(simd::gemm_target_name()), "");
}

TEST(Sgemm, PackedBSharedByConcurrentCalls) {
  // A prepacked B is only read: two GEMMs at once on one PackedB give the same answers as
  // one after the other (the contract of constant weights shared by concurrent runs).
  std::mt19937 rng(12);
  std::normal_distribution<float> nd;
  const int64_t M = 33, N = 70, K = 90;
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  for (float& v : a) v = nd(rng);
  for (float& v : b) v = nd(rng);
  const simd::PackedB pb = simd::pack_b(false, K, N, b.data(), N);
  std::vector<float> c1(static_cast<size_t>(M * N)), c2 = c1, want = c1;
  simd::sgemm_packed(false, M, 1.0f, a.data(), K, pb, 0.0f, want.data(), N);
  ThreadPool pool(2);
  pool.parallel_for(2, [&](int64_t b0, int64_t) {
    simd::sgemm_packed(false, M, 1.0f, a.data(), K, pb, 0.0f, (b0 == 0 ? c1 : c2).data(), N);
  });
  EXPECT_EQ(c1, want);
  EXPECT_EQ(c2, want);
}

// The activations alone, over a range that reaches the clamps of exp and erf.
TEST(Sgemm, ActivationInplaceMatchesLibm) {
  std::vector<float> xs;
  for (float x = -120.0f; x <= 120.0f; x += 0.37f) xs.push_back(x);
  for (float x = -4.0f; x <= 4.0f; x += 0.0137f) xs.push_back(x);
  for (float x :
       {0.0f, -0.0f, 1e-6f, -1e-6f, 1.0f, -1.0f, 6.0f, -6.0f, 88.0f, -88.0f, 104.0f, -104.0f})
    xs.push_back(x);
  for (int n = 0; n < 11; ++n) {
    const EpiSpec e = epi_of(n);
    simd::Epilogue ep;
    ep.act = e.act;
    ep.p0 = e.p0;
    ep.p1 = e.p1;
    std::vector<float> y = xs;
    simd::activation_inplace(ep, y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = act_ref(e, xs[i]);
      ASSERT_NEAR(y[i], want, 2e-6 * (1 + std::fabs(want))) << act_name(e.act) << " at " << xs[i];
    }
  }
}

TEST(Sgemm, ParseActivationNames) {
  Activation a;
  const char* names[] = {"",        "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
                         "Sigmoid", "Tanh", "SiLU", "Gelu",      "GeluTanh"};
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(simd::parse_activation(names[i], &a)) << names[i];
    EXPECT_EQ(a, kActs[i]) << names[i];
  }
  EXPECT_FALSE(simd::parse_activation("relu", &a));
  EXPECT_FALSE(simd::parse_activation("Softplus", &a));
}

}  // namespace
}  // namespace onyx
