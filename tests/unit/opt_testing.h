// Helpers of the graph optimizer tests (tests/unit/opt_*_test.cc): build a model, run it
// unoptimized on the reference kernels (the oracle) and optimized on the reference and on
// the default kernels, compare; look at what the passes made of the graph.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "opt/optimize.h"
#include "test_util.h"

namespace onyx::test {

using Feeds = std::vector<std::pair<std::string, Value>>;

inline std::shared_ptr<ir::Model> load_spec(const ModelSpec& m) {
  std::string bytes = m.serialize();
  return format::load_model_from_bytes(bytes.data(), bytes.size());
}

inline std::vector<Value> run_spec(const ModelSpec& m, const Feeds& feeds, GraphOptimization level,
                                   bool reference, int threads = 1) {
  SessionOptions o;
  o.optimize = level;
  o.reference_kernels = reference;
  o.threads = threads;
  return session_from_model(load_spec(m), o)->run(feeds);
}

/// A tensor of numbers uniform in [lo, hi).
inline Tensor random_tensor(Dims d, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kFloat, std::move(d));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

inline std::vector<DimSpec> dims_spec(const Dims& d) {
  return std::vector<DimSpec>(d.begin(), d.end());
}

/// |got - want| <= atol + rtol * |want| everywhere (float or double outputs).
inline ::testing::AssertionResult close(const Value& want, const Value& got, double rtol,
                                        double atol) {
  if (!want.is_tensor() || !got.is_tensor()) return ::testing::AssertionFailure() << "not tensors";
  const Tensor& a = want.tensor();
  const Tensor& b = got.tensor();
  if (a.dims() != b.dims() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "shape " << dims_str(b.dims()) << " vs " << dims_str(a.dims());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.dtype() == DType::kDouble ? a.data<double>()[i] : a.data<float>()[i];
    const double y = b.dtype() == DType::kDouble ? b.data<double>()[i] : b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(x)))
      return ::testing::AssertionFailure() << "at " << i << ": " << y << " vs " << x;
  }
  return ::testing::AssertionSuccess();
}

/// Runs `m` unoptimized on the reference kernels and compares it with: kBasic and kAll
/// on the reference kernels, kAll on the default kernels with 1 and 2 threads.
inline void expect_equivalent(const ModelSpec& m, const Feeds& feeds, const std::string& what,
                              double rtol = 1e-5, double atol = 1e-6) {
  std::vector<Value> want = run_spec(m, feeds, GraphOptimization::kNone, true);
  struct Variant {
    GraphOptimization level;
    bool reference;
    int threads;
    const char* name;
  };
  const Variant variants[] = {
      {GraphOptimization::kBasic, true, 1, "basic, reference"},
      {GraphOptimization::kAll, true, 1, "all, reference"},
      {GraphOptimization::kAll, false, 1, "all, default kernels"},
      {GraphOptimization::kAll, false, 2, "all, default kernels, 2 threads"}};
  for (const Variant& v : variants) {
    std::vector<Value> got = run_spec(m, feeds, v.level, v.reference, v.threads);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_TRUE(close(want[k], got[k], rtol, atol)) << what << " (" << v.name << ") output " << k;
  }
}

/// The model's graph after optimize_graph at `level`.
struct Optimized {
  ir::Graph graph;
  opt::OptimizeReport report;
  /// Number of nodes of type `op` ("Conv", "ai.onyx.FusedConv").
  int count(const std::string& op) const {
    int n = 0;
    for (const auto& node : graph.nodes)
      if ((node.domain.empty() ? node.op_type : node.domain + "." + node.op_type) == op) ++n;
    return n;
  }
  const ir::Node* find(const std::string& op) const {
    for (const auto& node : graph.nodes)
      if ((node.domain.empty() ? node.op_type : node.domain + "." + node.op_type) == op)
        return &node;
    return nullptr;
  }
  size_t size() const { return graph.nodes.size(); }
};

inline Optimized optimize_spec(const ModelSpec& m,
                               GraphOptimization level = GraphOptimization::kAll,
                               bool fused = true) {
  auto model = load_spec(m);
  Optimized o;
  o.graph = *model->graph;
  opt::OptimizeOptions oo;
  oo.level = level;
  oo.fused_ops = fused;
  auto def = model->opset_imports.find("");
  oo.default_opset = def == model->opset_imports.end() ? 0 : def->second;
  o.report = opt::optimize_graph(o.graph, oo);
  return o;
}

/// A float initializer of random values.
inline TensorSpec random_init(const std::string& name, const Dims& d, std::mt19937& rng,
                              float lo = -1.0f, float hi = 1.0f) {
  return TensorSpec::floats(name, d,
                            random_floats(static_cast<size_t>(dims_numel(d)), rng, lo, hi));
}

/// A float scalar initializer.
inline TensorSpec scalar_init(const std::string& name, float v) {
  return TensorSpec::floats(name, {}, {v});
}

inline TensorSpec ints_init(const std::string& name, const std::vector<int64_t>& v) {
  return TensorSpec::int64s(name, {static_cast<int64_t>(v.size())}, v);
}

}  // namespace onyx::test
