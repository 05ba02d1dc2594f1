// The per-signature memo of the executor (src/runtime/memory.h, StepMemo): later runs with
// an input signature reuse the output types the first one inferred and the values it
// computed from shapes alone. These tests change shapes and values between runs and check
// every output against values computed here from the inputs (never against another run).
#include <gtest/gtest.h>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

std::unique_ptr<Session> session_of(const ModelSpec& m, GraphOptimization level = GraphOptimization::kAll) {
  std::string bytes = m.serialize();
  SessionOptions o;
  o.optimize = level;
  return session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), o);
}

/// PyTorch's pattern: x float[N, M] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)),
/// Unsqueeze(Gather(Shape(x), 0)))) * 2 as y [M, N]; the target shape as output `target`
/// (made by its own node), and a view (Unsqueeze) of the one Reshape reads as `view` [1, 2].
ModelSpec reshape_by_shape() {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", "M"})};
  g.outputs = {tensor_info("y", kFloat, {"M", "N"}), tensor_info("target", kInt64, {2}),
               tensor_info("view", kInt64, {1, 2})};
  g.initializers = {TensorSpec::int64s("i0", {}, {0}), TensorSpec::int64s("i1", {}, {1}),
                    TensorSpec::int64s("ax", {1}, {0}), TensorSpec::floats("two", {}, {2.0f})};
  g.nodes = {NodeSpec("Shape", {"x"}, {"s"}),
             NodeSpec("Gather", {"s", "i0"}, {"n"}),
             NodeSpec("Gather", {"s", "i1"}, {"m"}),
             NodeSpec("Unsqueeze", {"n", "ax"}, {"un"}),
             NodeSpec("Unsqueeze", {"m", "ax"}, {"um"}),
             NodeSpec("Concat", {"um", "un"}, {"target"}, {AttrSpec::Int("axis", 0)}),
             NodeSpec("Concat", {"um", "un"}, {"t2"}, {AttrSpec::Int("axis", 0)}),
             NodeSpec("Unsqueeze", {"t2", "ax"}, {"view"}),
             NodeSpec("Reshape", {"x", "t2"}, {"r"}),
             NodeSpec("Mul", {"r", "two"}, {"y"})};
  return ModelSpec(g);
}

std::vector<float> iota_floats(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

void check_reshape_run(Session& s, int64_t n, int64_t m, float start) {
  SCOPED_TRACE(testing::Message() << "x [" << n << ", " << m << "]");
  std::vector<float> x = iota_floats(n * m, start);
  auto out = s.run({{"x", make_float({n, m}, x)}});
  ASSERT_EQ(out.size(), 3u);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = 2 * x[i];
  EXPECT_EQ(out[0].tensor().dims(), (Dims{m, n}));
  EXPECT_EQ(values_of<float>(out[0].tensor()), want);
  EXPECT_EQ(values_of<int64_t>(out[1].tensor()), (std::vector<int64_t>{m, n}));
  EXPECT_EQ(out[2].tensor().dims(), (Dims{1, 2}));
  EXPECT_EQ(values_of<int64_t>(out[2].tensor()), (std::vector<int64_t>{m, n}));
  // The caller owns the outputs: writing them must not reach later runs.
  out[1].tensor().data<int64_t>()[0] = -7;
  out[2].tensor().data<int64_t>()[1] = -9;
}

TEST(SignatureMemo, ShapeChainFollowsEveryShape) {
  for (GraphOptimization level : {GraphOptimization::kNone, GraphOptimization::kAll}) {
    auto s = session_of(reshape_by_shape(), level);
    // Each signature first, then again (memoized), interleaved.
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{2, 3}, {4, 5}, {2, 3}, {4, 5}, {2, 3}, {1, 7}, {4, 5}};
    float start = 0;
    for (const auto& [n, m] : shapes) check_reshape_run(*s, n, m, start += 10);
  }
}

TEST(SignatureMemo, MoreSignaturesThanThePlannerKeeps) {
  auto s = session_of(reshape_by_shape());
  // The planner keeps 256 signatures: 300 push the first ones out; all stay right.
  for (int round = 0; round < 2; ++round)
    for (int64_t n = 1; n <= 300; ++n) check_reshape_run(*s, n, 1 + n % 3, static_cast<float>(round));
}

/// y = Reshape(x, shape) with the target shape a graph input: the same signature (dims of
/// both inputs) with other values must give other shapes.
TEST(SignatureMemo, ShapeFromAnInputValueIsNotMemoized) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {6}), tensor_info("shape", kInt64, {2})};
  g.outputs = {tensor_info("y", kFloat, {"A", "B"})};
  g.nodes = {NodeSpec("Reshape", {"x", "shape"}, {"y"})};
  auto s = session_of(ModelSpec(g));
  std::vector<float> x = iota_floats(6, 1);
  for (const auto& [a, b] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {3, 2}, {2, 3}, {6, 1}, {1, 6}}) {
    auto out = s->run({{"x", make_float({6}, x)}, {"shape", make_tensor<int64_t>(DType::kInt64, {2}, {a, b})}});
    EXPECT_EQ(out[0].tensor().dims(), (Dims{a, b}));
    EXPECT_EQ(values_of<float>(out[0].tensor()), x);
  }
}

/// NonZero's output shape depends on the values of x: so do the shapes and values computed
/// from it, at one signature.
TEST(SignatureMemo, DataDependentShapeIsNotMemoized) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N"})};
  g.outputs = {tensor_info("count", kInt64, {2}), tensor_info("ones", kFloat, {"K"})};
  g.initializers = {TensorSpec::int64s("i1", {}, {1}), TensorSpec::int64s("ax", {1}, {0}),
                    TensorSpec::floats("one", {}, {1.0f})};
  g.nodes = {NodeSpec("NonZero", {"x"}, {"nz"}),
             NodeSpec("Shape", {"nz"}, {"count"}),
             NodeSpec("Gather", {"count", "i1"}, {"k"}),
             NodeSpec("Unsqueeze", {"k", "ax"}, {"k1"}),
             NodeSpec("Expand", {"one", "k1"}, {"ones"})};
  auto s = session_of(ModelSpec(g));
  const std::vector<std::vector<float>> xs = {{0, 1, 0, 2, 3}, {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}, {0, 1, 0, 2, 3}, {0, 0, 4, 0, 0}};
  for (const auto& x : xs) {
    int64_t k = 0;
    for (float v : x) k += v != 0;
    auto out = s->run({{"x", make_float({5}, x)}});
    EXPECT_EQ(values_of<int64_t>(out[0].tensor()), (std::vector<int64_t>{1, k}));
    EXPECT_EQ(out[1].tensor().dims(), (Dims{k}));
    EXPECT_EQ(values_of<float>(out[1].tensor()), std::vector<float>(static_cast<size_t>(k), 1.0f));
  }
}

/// An input with a default (an initializer of the same name) feeds the shape chain: the
/// default is fixed by the signature (the input not fed), a fed value is not.
TEST(SignatureMemo, InputDefaultVersusFedValue) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {6}), tensor_info("shape", kInt64, {2})};
  g.initializers = {TensorSpec::int64s("shape", {2}, {3, 2})};
  g.outputs = {tensor_info("y", kFloat, {"A", "B"})};
  g.nodes = {NodeSpec("Reshape", {"x", "shape"}, {"y"})};
  auto s = session_of(ModelSpec(g, 11));
  std::vector<float> x = iota_floats(6, 1);
  for (int i = 0; i < 3; ++i) {
    auto d = s->run({{"x", make_float({6}, x)}});
    EXPECT_EQ(d[0].tensor().dims(), (Dims{3, 2}));
    auto f = s->run({{"x", make_float({6}, x)}, {"shape", make_tensor<int64_t>(DType::kInt64, {2}, {1, 6})}});
    EXPECT_EQ(f[0].tensor().dims(), (Dims{1, 6}));
    auto h = s->run({{"x", make_float({6}, x)}, {"shape", make_tensor<int64_t>(DType::kInt64, {2}, {2, 3})}});
    EXPECT_EQ(h[0].tensor().dims(), (Dims{2, 3}));
    EXPECT_EQ(values_of<float>(h[0].tensor()), x);
  }
}

}  // namespace
}  // namespace onyx::test
