// Concat in place (src/runtime/plan.h, Step::concat_slices; executor.cc): from the second
// run of an input signature, the producers of a Concat's inputs write straight into its
// output, and a Concat whose inputs already lie side by side in one buffer takes a view
// of them. These tests run each model several times per signature, interleaving shapes
// where in place is possible (nothing but 1s before the axis) and where it is not, and
// check every output against values computed here from the inputs; one test looks into
// the executor's frame to see that the in-place path is the one taken.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/executor.h"
#include "runtime/memory.h"
#include "runtime/plan.h"
#include "runtime/run_context.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

/// A dense float array for the expected values.
struct Arr {
  Dims dims;
  std::vector<float> v;
};

Arr map(const Arr& a, const std::function<float(float)>& f) {
  Arr r = a;
  for (float& x : r.v) x = f(x);
  return r;
}

/// Concatenation along `axis` (any rank, any axis).
Arr concat(const std::vector<Arr>& xs, size_t axis) {
  Arr r;
  r.dims = xs[0].dims;
  r.dims[axis] = 0;
  for (const Arr& x : xs) r.dims[axis] += x.dims[axis];
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= r.dims[k];
  for (size_t k = axis + 1; k < r.dims.size(); ++k) inner *= r.dims[k];
  for (int64_t o = 0; o < outer; ++o)
    for (const Arr& x : xs) {
      const int64_t row = x.dims[axis] * inner;
      r.v.insert(r.v.end(), x.v.begin() + o * row, x.v.begin() + (o + 1) * row);
    }
  return r;
}

Arr random_arr(Dims dims, uint32_t seed) {
  Arr a{std::move(dims), {}};
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < dims_numel(a.dims); ++i) {
    s = s * 1664525u + 1013904223u;
    a.v.push_back(static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 250.0f);
  }
  return a;
}

void expect_equal(const Tensor& t, const Arr& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(t.dims(), want.dims);
  const std::vector<float> got = values_of<float>(t);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.v[i], 1e-6f * (1 + std::fabs(want.v[i]))) << "element " << i;
}

std::unique_ptr<Session> session_of(const ModelSpec& m, GraphOptimization level, int threads = 1) {
  std::string bytes = m.serialize();
  SessionOptions o;
  o.optimize = level;
  o.threads = threads;
  return session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), o);
}

TensorSpec scalar(const std::string& name, float v) { return TensorSpec::floats(name, {}, {v}); }

/// Runs `s` on each shape of `shapes` (several times each, interleaved) and checks its
/// outputs against `expect(x)`.
void run_shapes(Session& s, const std::vector<Dims>& shapes,
                const std::function<std::vector<Arr>(const Arr&)>& expect,
                const std::vector<std::string>& names) {
  uint32_t seed = 1;
  for (int round = 0; round < 4; ++round)
    for (const Dims& d : shapes) {
      const Arr x = random_arr(d, seed++);
      SCOPED_TRACE(testing::Message() << "round " << round << ", x " << dims_str(d));
      auto out = s.run({{"x", make_float(d, x.v)}});
      const std::vector<Arr> want = expect(x);
      ASSERT_EQ(out.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) expect_equal(out[i].tensor(), want[i], names[i]);
    }
}

// SqueezeNet's fire module: two branches concatenated on the channels, then read on.
ModelSpec fire() {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", "C", "H", "W"})};
  g.outputs = {tensor_info("out", kFloat, {"N", "C2", "H", "W"})};
  g.initializers = {scalar("two", 2.0f), scalar("one", 1.0f)};
  g.nodes = {NodeSpec("Relu", {"x"}, {"a"}),
             NodeSpec("Mul", {"x", "two"}, {"b"}),
             NodeSpec("Concat", {"a", "b"}, {"y"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Add", {"y", "one"}, {"out"})};
  return ModelSpec(g);
}

TEST(ConcatInPlace, FireModuleEveryBatchAndShape) {
  for (GraphOptimization level : {GraphOptimization::kNone, GraphOptimization::kAll})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "optimize " << static_cast<int>(level) << ", " << threads << " threads");
      auto s = session_of(fire(), level, threads);
      // Batch 1 (in place), batch 2 (the inputs are not slabs of the output), other sizes.
      run_shapes(*s, {{1, 3, 4, 5}, {2, 3, 4, 5}, {1, 2, 7, 3}, {1, 3, 4, 5}},
                 [](const Arr& x) {
                   Arr y = concat({map(x, [](float v) { return v > 0 ? v : 0.0f; }),
                                   map(x, [](float v) { return 2 * v; })}, 1);
                   return std::vector<Arr>{map(y, [](float v) { return v + 1; })};
                 },
                 {"out"});
    }
}

// DenseNet's block: each layer concatenates all the features before it, and the block's
// last Concat (a graph output here) holds them all; c1's inputs are then adjacent in it.
ModelSpec dense_block() {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", "C", "H", "W"})};
  g.outputs = {tensor_info("o1", kFloat, {"N", "C2", "H", "W"}), tensor_info("c2", kFloat, {"N", "C3", "H", "W"})};
  g.initializers = {scalar("two", 2.0f), scalar("one", 1.0f), scalar("three", 3.0f), scalar("half", 0.5f)};
  g.nodes = {NodeSpec("Mul", {"x", "two"}, {"f0"}),
             NodeSpec("Add", {"f0", "one"}, {"f1"}),
             NodeSpec("Concat", {"f0", "f1"}, {"c1"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Add", {"c1", "half"}, {"o1"}),
             NodeSpec("Mul", {"f1", "three"}, {"f2"}),
             NodeSpec("Concat", {"f0", "f1", "f2"}, {"c2"}, {AttrSpec::Int("axis", 1)})};
  return ModelSpec(g);
}

std::vector<Arr> dense_expect(const Arr& x) {
  Arr f0 = map(x, [](float v) { return 2 * v; });
  Arr f1 = map(f0, [](float v) { return v + 1; });
  Arr f2 = map(f1, [](float v) { return 3 * v; });
  return {map(concat({f0, f1}, 1), [](float v) { return v + 0.5f; }), concat({f0, f1, f2}, 1)};
}

TEST(ConcatInPlace, DenseBlockSharesOneBuffer) {
  for (GraphOptimization level : {GraphOptimization::kNone, GraphOptimization::kAll}) {
    auto s = session_of(dense_block(), level);
    run_shapes(*s, {{1, 2, 3, 4}, {3, 2, 3, 4}, {1, 5, 2, 2}}, dense_expect, {"o1", "c2"});
  }
}

// A Concat's output concatenated again and read on (Relu), an input read on after the
// Concat (Abs of b: a slice of c2's buffer by then, which the executor's in-place rule,
// can_take_buffer, must not hand to an output since its storage is shared), a graph input,
// a value computed from shapes only (memoized, not written in place), an input read twice
// and a producer's output that is also a graph output (neither may be written in place).
ModelSpec nested() {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1, "C", "H", "W"})};
  g.outputs = {tensor_info("c2", kFloat, {1, "D", "H", "W"}), tensor_info("r", kFloat, {1, "E", "H", "W"}),
               tensor_info("z", kFloat, {1, "C", "H", "W"}), tensor_info("t", kFloat, {1, "F", "H", "W"}),
               tensor_info("a", kFloat, {1, "C", "H", "W"})};
  g.initializers = {scalar("one", 1.0f), scalar("three", 3.0f)};
  g.nodes = {NodeSpec("Add", {"x", "one"}, {"a"}),
             NodeSpec("Mul", {"x", "three"}, {"b"}),
             NodeSpec("Concat", {"a", "b"}, {"c1"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Neg", {"x"}, {"d"}),
             NodeSpec("Concat", {"c1", "d"}, {"c2"}, {AttrSpec::Int("axis", -3)}),
             NodeSpec("Relu", {"c1"}, {"r"}),
             NodeSpec("Sub", {"x", "one"}, {"e"}),
             NodeSpec("Concat", {"e", "x", "e", "three3"}, {"t"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Abs", {"b"}, {"z"})};
  // A constant input of the last Concat: [1, 1, H, W] needs H and W fixed, so it is made
  // from x's shape instead (Expand of a scalar).
  g.nodes.insert(g.nodes.begin(), NodeSpec("Shape", {"x"}, {"xs"}));
  g.nodes.insert(g.nodes.begin() + 1, NodeSpec("Gather", {"xs", "i23"}, {"hw"}, {AttrSpec::Int("axis", 0)}));
  g.nodes.insert(g.nodes.begin() + 2, NodeSpec("Concat", {"ones2", "hw"}, {"shp"}, {AttrSpec::Int("axis", 0)}));
  g.nodes.insert(g.nodes.begin() + 3, NodeSpec("Expand", {"three", "shp"}, {"three3"}));
  g.initializers.push_back(TensorSpec::int64s("i23", {2}, {2, 3}));
  g.initializers.push_back(TensorSpec::int64s("ones2", {2}, {1, 1}));
  return ModelSpec(g);
}

TEST(ConcatInPlace, NestedSharedAndIneligibleInputs) {
  for (GraphOptimization level : {GraphOptimization::kNone, GraphOptimization::kAll}) {
    auto s = session_of(nested(), level);
    run_shapes(*s, {{1, 2, 3, 4}, {1, 3, 1, 5}},
               [](const Arr& x) {
                 Arr a = map(x, [](float v) { return v + 1; });
                 Arr b = map(x, [](float v) { return 3 * v; });
                 Arr c1 = concat({a, b}, 1);
                 Arr c2 = concat({c1, map(x, [](float v) { return -v; })}, 1);
                 Arr e = map(x, [](float v) { return v - 1; });
                 Arr k{{1, 1, x.dims[2], x.dims[3]}, std::vector<float>(static_cast<size_t>(x.dims[2] * x.dims[3]), 3.0f)};
                 return std::vector<Arr>{c2, map(c1, [](float v) { return v > 0 ? v : 0.0f; }),
                                         map(b, [](float v) { return std::fabs(v); }), concat({e, x, e, k}, 1), a};
               },
               {"c2", "r", "z", "t", "a"});
  }
}

// Concats over later axes: in place only where every dim before the axis is 1.
ModelSpec inner_axis(int64_t axis) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", "C", "H", "W"})};
  g.outputs = {tensor_info("y", kFloat, {"N", "C", "H", "W2"})};
  g.initializers = {scalar("two", 2.0f)};
  g.nodes = {NodeSpec("Sigmoid", {"x"}, {"a"}),
             NodeSpec("Mul", {"x", "two"}, {"b"}),
             NodeSpec("Concat", {"b", "a"}, {"c"}, {AttrSpec::Int("axis", axis)}),
             NodeSpec("Neg", {"c"}, {"y"})};
  return ModelSpec(g);
}

TEST(ConcatInPlace, LaterAxes) {
  for (int64_t axis : {2, 3, -1}) {
    SCOPED_TRACE(testing::Message() << "axis " << axis);
    auto s = session_of(inner_axis(axis), GraphOptimization::kAll);
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
    run_shapes(*s, {{1, 1, 3, 4}, {1, 1, 1, 5}, {1, 2, 3, 4}, {2, 1, 1, 3}},
               [ax](const Arr& x) {
                 Arr c = concat({map(x, [](float v) { return 2 * v; }),
                                 map(x, [](float v) { return 1 / (1 + std::exp(-v)); })}, ax);
                 return std::vector<Arr>{map(c, [](float v) { return -v; })};
               },
               {"y"});
  }
}

// A detection head: each scale's map transposed to channels last and reshaped to
// [1, positions, C], then concatenated over the positions. The Transposes write into the
// Concat's output through the Reshape views; t3 is read by a second node, so its Reshape's
// slice is copied.
ModelSpec heads() {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1, 2, "H", "W"})};
  g.outputs = {tensor_info("y", kFloat, {1, "P", 2}), tensor_info("n", kFloat, {1, "H", "W", 2})};
  g.initializers = {scalar("two", 2.0f), scalar("one", 1.0f), TensorSpec::int64s("shape", {3}, {1, -1, 2})};
  const std::vector<int64_t> nhwc = {0, 2, 3, 1};
  g.nodes = {NodeSpec("Transpose", {"x"}, {"t1"}, {AttrSpec::Ints("perm", nhwc)}),
             NodeSpec("Reshape", {"t1", "shape"}, {"r1"}),
             NodeSpec("Mul", {"x", "two"}, {"x2"}),
             NodeSpec("Transpose", {"x2"}, {"t2"}, {AttrSpec::Ints("perm", nhwc)}),
             NodeSpec("Reshape", {"t2", "shape"}, {"r2"}),
             NodeSpec("Add", {"x", "one"}, {"x3"}),
             NodeSpec("Transpose", {"x3"}, {"t3"}, {AttrSpec::Ints("perm", nhwc)}),
             NodeSpec("Reshape", {"t3", "shape"}, {"r3"}),
             NodeSpec("Neg", {"t3"}, {"n"}),
             NodeSpec("Concat", {"r1", "r2", "r3"}, {"y"}, {AttrSpec::Int("axis", 1)})};
  return ModelSpec(g);
}

TEST(ConcatInPlace, ThroughReshapeViews) {
  for (GraphOptimization level : {GraphOptimization::kNone, GraphOptimization::kAll}) {
    auto s = session_of(heads(), level);
    run_shapes(*s, {{1, 2, 3, 4}, {1, 2, 5, 1}},
               [](const Arr& x) {
                 const int64_t h = x.dims[2], w = x.dims[3];
                 auto nhwc = [&](const std::function<float(float)>& f) {
                   Arr r{{1, h * w, 2}, {}};
                   for (int64_t p = 0; p < h * w; ++p)
                     for (int64_t c = 0; c < 2; ++c) r.v.push_back(f(x.v[static_cast<size_t>(c * h * w + p)]));
                   return r;
                 };
                 Arr r3 = nhwc([](float v) { return v + 1; });
                 Arr n{{1, h, w, 2}, {}};
                 for (float v : r3.v) n.v.push_back(-v);
                 return std::vector<Arr>{concat({nhwc([](float v) { return v; }), nhwc([](float v) { return 2 * v; }), r3}, 1), n};
               },
               {"y", "n"});
  }
}

// The executor itself: after a signature's first two runs, the dense block's c1 is a view
// of c2's buffer (its inputs were written there), seen through an Identity of c1.
TEST(ConcatInPlace, ProducersWriteIntoTheConcatOutput) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1, 2, 3, 4})};
  g.outputs = {tensor_info("c2", kFloat, {1, 6, 3, 4}), tensor_info("v", kFloat, {1, 4, 3, 4})};
  g.initializers = {scalar("two", 2.0f), scalar("one", 1.0f)};
  g.nodes = {NodeSpec("Mul", {"x", "two"}, {"f0"}),
             NodeSpec("Add", {"f0", "one"}, {"f1"}),
             NodeSpec("Concat", {"f0", "f1"}, {"c1"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Identity", {"c1"}, {"v"}),
             NodeSpec("Neg", {"f1"}, {"f2"}),
             NodeSpec("Concat", {"f0", "f1", "f2"}, {"c2"}, {AttrSpec::Int("axis", 1)})};
  std::string bytes = ModelSpec(g).serialize();
  auto model = format::load_model_from_bytes(bytes.data(), bytes.size());
  auto plan = runtime::compile_graph(*model->graph, runtime::PlanOptions{});
  runtime::MemoryPlanner planner;
  const Arr x = random_arr({1, 2, 3, 4}, 7);
  const Arr f0 = map(x, [](float v) { return 2 * v; });
  const Arr f1 = map(f0, [](float v) { return v + 1; });
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(testing::Message() << "run " << r);
    runtime::RunContext run(SessionOptions{}, nullptr, &planner, runtime::Signature{1, 2, 3, 4});
    runtime::Frame f;
    runtime::init_frame(f, *plan, nullptr, &run);
    f.is_main = true;
    f.values[static_cast<size_t>(plan->inputs[0])] = Value(make_float({1, 2, 3, 4}, x.v));
    runtime::run_frame(f, nullptr);
    const Tensor& c2 = runtime::frame_value(f, plan->outputs[0]).tensor();
    const Tensor& v = runtime::frame_value(f, plan->outputs[1]).tensor();
    expect_equal(c2, concat({f0, f1, map(f1, [](float u) { return -u; })}, 1), "c2");
    expect_equal(v, concat({f0, f1}, 1), "v");
    // The first run learns the shapes (its tensors are separate); from the second on, c1
    // (and so v) lies at the start of c2's buffer.
    if (r == 0)
      EXPECT_NE(v.storage(), c2.storage());
    else
      EXPECT_TRUE(v.storage() == c2.storage() && v.raw() == c2.raw());
    run.finish();
  }
}

}  // namespace
}  // namespace onyx::test
