// The random family (RandomNormal, RandomUniform, *Like, Bernoulli, Multinomial): their
// values cannot match the conformance suite's, so these tests check dtype, shape, seed
// determinism and the distributions' moments on large samples. Bounds are 6 standard
// errors wide: a false failure has odds of about 1e-9 per check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/half.h"
#include "ir/graph.h"
#include "onyx/error.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"

namespace onyx {
namespace {

ir::Attribute attr_i(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_f(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}

/// A model of one node `op` with the given attributes, an optional input "x" of
/// type `in`, and one output "y".
std::unique_ptr<Session> one_node(const std::string& op, std::vector<ir::Attribute> attrs,
                                  const ir::TypeInfo* in = nullptr, int opset = 22) {
  auto m = std::make_shared<ir::Model>();
  m->ir_version = 10;
  m->opset_imports[""] = opset;
  m->graph = std::make_shared<ir::Graph>();
  ir::Node n;
  n.op_type = op;
  n.name = "n0";
  n.opset = opset;
  n.attrs = std::move(attrs);
  if (in) {
    n.inputs = {"x"};
    m->graph->inputs.push_back({"x", *in});
  }
  n.outputs = {"y"};
  m->graph->nodes.push_back(n);
  m->graph->outputs.push_back({"y", ir::TypeInfo{}});
  return session_from_model(m);
}

Tensor run(Session& s, const Tensor* x = nullptr) {
  std::vector<std::pair<std::string, Value>> feeds;
  if (x) feeds.emplace_back("x", Value(*x));
  std::vector<Value> out = s.run(feeds);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0).tensor();
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat: v[i] = t.data<float>()[i]; break;
      case DType::kDouble: v[i] = t.data<double>()[i]; break;
      case DType::kFloat16: v[i] = static_cast<float>(t.data<Float16>()[i]); break;
      case DType::kBFloat16: v[i] = static_cast<float>(t.data<BFloat16>()[i]); break;
      case DType::kInt32: v[i] = t.data<int32_t>()[i]; break;
      case DType::kInt64: v[i] = static_cast<double>(t.data<int64_t>()[i]); break;
      case DType::kBool:
      case DType::kUint8: v[i] = t.data<uint8_t>()[i]; break;
      default: ADD_FAILURE() << "unexpected dtype " << dtype_name(t.dtype()); return v;
    }
  }
  return v;
}

struct Moments {
  double mean = 0, var = 0;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Random, UniformShapeRangeAndMoments) {
  const int64_t n = 200000;
  auto s = one_node("RandomUniform", {attr_ints("shape", {n / 400, 400}), attr_f("low", -2),
                                      attr_f("high", 3), attr_f("seed", 5)});
  Tensor y = run(*s);
  EXPECT_EQ(y.dtype(), DType::kFloat);
  EXPECT_EQ(y.dims(), (Dims{n / 400, 400}));
  std::vector<double> v = as_doubles(y);
  for (double x : v) {
    ASSERT_GE(x, -2.0);
    ASSERT_LE(x, 3.0);
  }
  // U(a, b): mean (a+b)/2, variance (b-a)^2/12, fourth central moment (b-a)^4/80
  const Moments m = moments(v);
  const double var = 25.0 / 12, mu4 = 625.0 / 80;
  EXPECT_NEAR(m.mean, 0.5, 6 * std::sqrt(var / n));
  EXPECT_NEAR(m.var, var, 6 * std::sqrt((mu4 - var * var) / n));
  // every tenth of the range holds a tenth of the sample
  std::vector<int64_t> bins(10);
  for (double x : v) ++bins[std::min<size_t>(9, static_cast<size_t>((x + 2) / 0.5))];
  for (int64_t b : bins) EXPECT_NEAR(static_cast<double>(b) / n, 0.1, 6 * std::sqrt(0.09 / n));
}

TEST(Random, NormalMoments) {
  const int64_t n = 200000;
  auto s = one_node("RandomNormal", {attr_ints("shape", {n}), attr_f("mean", 1),
                                     attr_f("scale", 2), attr_f("seed", 1)});
  std::vector<double> v = as_doubles(run(*s));
  const Moments m = moments(v);
  // N(1, 2^2): Var(sample variance) = 2 sigma^4 / n
  EXPECT_NEAR(m.mean, 1.0, 6 * 2 / std::sqrt(n));
  EXPECT_NEAR(m.var, 4.0, 6 * std::sqrt(2 * 16.0 / n));
  // 68.27% within one sigma, 95.45% within two
  double in1 = 0, in2 = 0;
  for (double x : v) {
    in1 += std::fabs(x - 1) < 2;
    in2 += std::fabs(x - 1) < 4;
  }
  EXPECT_NEAR(in1 / n, 0.682689, 6 * std::sqrt(0.2166 / n));
  EXPECT_NEAR(in2 / n, 0.954500, 6 * std::sqrt(0.0434 / n));
  // skewness near 0
  double m3 = 0;
  for (double x : v) m3 += std::pow((x - m.mean) / 2, 3);
  EXPECT_NEAR(m3 / n, 0.0, 6 * std::sqrt(15.0 / n));
}

TEST(Random, SeedIsReproducible) {
  auto make = [](float seed) {
    return one_node("RandomNormal", {attr_ints("shape", {64}), attr_f("seed", seed)});
  };
  auto a = make(3), b = make(3), c = make(4);
  Tensor a1 = run(*a), a2 = run(*a), b1 = run(*b), c1 = run(*c);
  EXPECT_TRUE(same_bytes(a1, a2)) << "a seeded node draws the same values on every run";
  EXPECT_TRUE(same_bytes(a1, b1)) << "two sessions with one seed agree";
  EXPECT_FALSE(same_bytes(a1, c1)) << "another seed gives other values";
}

TEST(Random, UnseededRunsDiffer) {
  auto s = one_node("RandomUniform", {attr_ints("shape", {64})});
  Tensor a = run(*s), b = run(*s);
  EXPECT_FALSE(same_bytes(a, b));
}

TEST(Random, OutputDtypes) {
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16}) {
    auto s = one_node("RandomNormal", {attr_ints("shape", {2, 3}), attr_i("dtype", static_cast<int>(dt)),
                                       attr_f("seed", 0)});
    Tensor y = run(*s);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(y.dims(), (Dims{2, 3}));
    for (double v : as_doubles(y)) EXPECT_TRUE(std::isfinite(v));
  }
  // Only float types are valid outputs.
  EXPECT_THROW(one_node("RandomUniform", {attr_ints("shape", {2}), attr_i("dtype", 6)}), Error);
}

TEST(Random, LikeOpsCopyShapeAndType) {
  const ir::TypeInfo f32 = ir::TypeInfo::tensor(DType::kFloat, {3, 4, 5});
  Tensor x(DType::kFloat, {3, 4, 5});
  auto n = one_node("RandomNormalLike", {attr_f("seed", 2)}, &f32);
  Tensor y = run(*n, &x);
  EXPECT_EQ(y.dtype(), DType::kFloat);
  EXPECT_EQ(y.dims(), (Dims{3, 4, 5}));

  // An int input needs 'dtype'; the shape is still the input's.
  const ir::TypeInfo i64 = ir::TypeInfo::tensor(DType::kInt64, {7, 2});
  Tensor xi(DType::kInt64, {7, 2});
  auto u = one_node("RandomUniformLike", {attr_i("dtype", 10), attr_f("low", 5), attr_f("high", 6)}, &i64);
  Tensor yu = run(*u, &xi);
  EXPECT_EQ(yu.dtype(), DType::kFloat16);
  EXPECT_EQ(yu.dims(), (Dims{7, 2}));
  for (double v : as_doubles(yu)) {
    EXPECT_GE(v, 5.0);
    EXPECT_LE(v, 6.0);
  }
  EXPECT_THROW(one_node("RandomUniformLike", {}, &i64), Error);

  // Symbolic input dims resolve at run time.
  ir::TypeInfo sym = ir::TypeInfo::tensor(DType::kDouble, {ir::Dim::symbol("N"), 2});
  auto d = one_node("RandomNormalLike", {}, &sym);
  Tensor xd(DType::kDouble, {9, 2});
  Tensor yd = run(*d, &xd);
  EXPECT_EQ(yd.dtype(), DType::kDouble);
  EXPECT_EQ(yd.dims(), (Dims{9, 2}));
}

TEST(Random, BernoulliRate) {
  const int64_t n = 200000;
  const ir::TypeInfo f32 = ir::TypeInfo::tensor(DType::kFloat, {n});
  Tensor p(DType::kFloat, {n});
  for (int64_t i = 0; i < n; ++i) p.data<float>()[i] = i % 2 ? 0.3f : 0.8f;
  auto s = one_node("Bernoulli", {attr_f("seed", 11)}, &f32);
  Tensor y = run(*s, &p);
  EXPECT_EQ(y.dtype(), DType::kFloat);
  std::vector<double> v = as_doubles(y);
  double odd = 0, even = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(v[i] == 0 || v[i] == 1);
    (i % 2 ? odd : even) += v[i];
  }
  EXPECT_NEAR(odd / (n / 2), 0.3, 6 * std::sqrt(0.21 / (n / 2)));
  EXPECT_NEAR(even / (n / 2), 0.8, 6 * std::sqrt(0.16 / (n / 2)));
  EXPECT_TRUE(same_bytes(y, run(*s, &p)));

  // p = 0 and p = 1 are certain; 'dtype' picks the output type.
  for (float q : {0.0f, 1.0f}) {
    for (int64_t i = 0; i < n; ++i) p.data<float>()[i] = q;
    for (DType dt : {DType::kInt32, DType::kBool, DType::kDouble}) {
      auto b = one_node("Bernoulli", {attr_i("dtype", static_cast<int>(dt))}, &f32);
      Tensor yb = run(*b, &p);
      EXPECT_EQ(yb.dtype(), dt);
      for (double x : as_doubles(yb)) ASSERT_EQ(x, q);
    }
  }
}

TEST(Random, MultinomialFrequencies) {
  const int64_t n = 100000;
  const ir::TypeInfo f32 = ir::TypeInfo::tensor(DType::kFloat, {2, 3});
  Tensor logits(DType::kFloat, {2, 3});
  const float probs[2][3] = {{0.2f, 0.3f, 0.5f}, {0.0f, 1.0f, 0.0f}};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      logits.data<float>()[r * 3 + c] = std::log(probs[r][c]) + 7;  // unnormalized, with -inf
  auto s = one_node("Multinomial", {attr_i("sample_size", n), attr_i("dtype", 7), attr_f("seed", 1)}, &f32);
  Tensor y = run(*s, &logits);
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.dims(), (Dims{2, n}));
  for (int r = 0; r < 2; ++r) {
    double count[3] = {0, 0, 0};
    for (int64_t k = 0; k < n; ++k) {
      const int64_t c = y.data<int64_t>()[r * n + k];
      ASSERT_GE(c, 0);
      ASSERT_LT(c, 3);
      ++count[c];
    }
    for (int c = 0; c < 3; ++c) {
      const double p = probs[r][c];
      EXPECT_NEAR(count[c] / n, p, 6 * std::sqrt(p * (1 - p) / n) + 1e-12) << "row " << r << " class " << c;
    }
  }
  // default output type is int32
  auto d = one_node("Multinomial", {attr_i("sample_size", 4)}, &f32);
  Tensor yd = run(*d, &logits);
  EXPECT_EQ(yd.dtype(), DType::kInt32);
  EXPECT_EQ(yd.dims(), (Dims{2, 4}));
}

TEST(Random, OldOpsets) {
  auto s = one_node("RandomUniform", {attr_ints("shape", {5}), attr_f("seed", 1)}, nullptr, 1);
  Tensor y = run(*s);
  EXPECT_EQ(y.dims(), (Dims{5}));
  const ir::TypeInfo f32 = ir::TypeInfo::tensor(DType::kFloat, {4});
  Tensor p(DType::kFloat, {4});
  auto b = one_node("Bernoulli", {}, &f32, 15);
  EXPECT_EQ(run(*b, &p).dims(), (Dims{4}));
}

}  // namespace
}  // namespace onyx
