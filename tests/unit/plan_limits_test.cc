// Bounds of planning that a small hostile file must not get past: the nodes that inlining
// model-local functions may make, and the bytes of constants folding may keep in the
// session. Both were met while writing the fuzz targets of tests/fuzz.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/plan.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

std::shared_ptr<ir::Model> model_of(const ModelSpec& m) {
  std::string bytes = m.serialize();
  return format::load_model_from_bytes(bytes.data(), bytes.size());
}

/// Functions f0 .. f{levels-1} of domain "local": f0 is Neg, f(k) calls f(k-1) twice, so
/// the main graph's one call of f{levels-1} inlines to 2^(levels-1) Neg nodes.
ModelSpec doubling_functions(int levels) {
  ModelSpec m;
  m.opsets = {{"", 17}, {"local", 1}};
  FunctionSpec f0;
  f0.name = "f0";
  f0.domain = "local";
  f0.inputs = {"x"};
  f0.outputs = {"y"};
  f0.nodes = {NodeSpec("Neg", {"x"}, {"y"})};
  m.functions.push_back(f0);
  for (int k = 1; k < levels; ++k) {
    FunctionSpec f;
    f.name = "f" + std::to_string(k);
    f.domain = "local";
    f.inputs = {"x"};
    f.outputs = {"y"};
    std::string callee = "f" + std::to_string(k - 1);
    f.nodes = {NodeSpec(callee, {"x"}, {"t"}, {}, "", "local"), NodeSpec(callee, {"t"}, {"y"}, {}, "", "local")};
    f.opsets = {{"", 17}, {"local", 1}};
    m.functions.push_back(f);
  }
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2})};
  g.outputs = {tensor_info("y", kFloat, {2})};
  g.nodes = {NodeSpec("f" + std::to_string(levels - 1), {"x"}, {"y"}, {}, "call", "local")};
  m.graph = g;
  return m;
}

TEST(PlanLimits, InliningIsBoundedInNodes) {
  // 31 levels: 2^30 nodes from a 3 KB file.
  ModelSpec m = doubling_functions(31);
  try {
    onyx::session_from_model(model_of(m));
    FAIL() << "a model inlining to 2^30 nodes was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("more than 1000000 nodes"), std::string::npos) << e.what();
  }
}

TEST(PlanLimits, RecursiveFunctionsAreRefusedWithoutCountingForever) {
  // f0 calls itself twice: counting its nodes must not follow the recursion (2^32 calls
  // to the depth limit); the inliner refuses it as a recursion.
  ModelSpec m = doubling_functions(1);
  m.functions[0].nodes = {NodeSpec("f0", {"x"}, {"t"}, {}, "", "local"), NodeSpec("f0", {"t"}, {"y"}, {}, "", "local")};
  m.functions[0].opsets = {{"", 17}, {"local", 1}};
  try {
    onyx::session_from_model(model_of(m));
    FAIL() << "a recursive function was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("more than 32 levels deep"), std::string::npos) << e.what();
  }
}

TEST(PlanLimits, InliningWithinTheBoundRuns) {
  // 4 levels: 8 Neg nodes, an even number, so y = x.
  auto s = onyx::session_from_model(model_of(doubling_functions(4)));
  Tensor x(DType::kFloat, {2});
  x.data<float>()[0] = 1.5f;
  x.data<float>()[1] = -2.0f;
  auto out = s->run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor().data<float>()[0], 1.5f);
  EXPECT_EQ(out[0].tensor().data<float>()[1], -2.0f);
}

/// ConstantOfShape [n] of ones, then `negs` Neg nodes, then ReduceSum: every node folds.
ModelSpec fold_chain(int64_t n, int negs) {
  GraphSpec g;
  g.initializers = {TensorSpec::int64s("shape", {1}, {n})};
  TensorSpec one = TensorSpec::floats("one", {1}, {1.0f});
  g.nodes.push_back(NodeSpec("ConstantOfShape", {"shape"}, {"c0"}, {AttrSpec::Tensor("value", one)}));
  for (int k = 0; k < negs; ++k)
    g.nodes.push_back(NodeSpec("Neg", {"c" + std::to_string(k)}, {"c" + std::to_string(k + 1)}));
  g.nodes.push_back(NodeSpec("ReduceSum", {"c" + std::to_string(negs)}, {"y"}, {AttrSpec::Int("keepdims", 0)}));
  g.outputs = {tensor_info("y", kFloat, {})};
  return ModelSpec(g);
}

TEST(PlanLimits, FoldedConstantsKeepWithinTheirBudget) {
  // 20 nodes of 4 MiB each (1M floats) with a 16 MiB budget: the first four fold, the
  // rest are left to the run.
  auto model = model_of(fold_chain(1 << 20, 20));
  runtime::PlanOptions po;
  po.fold_total_bytes = uint64_t{16} << 20;
  auto plan = runtime::compile_graph(*model->graph, po);
  uint64_t kept = 0;
  int folded = 0;
  for (const auto& step : plan->steps) {
    if (!step.folded) continue;
    ++folded;
    for (int s : step.out)
      if (s >= 0 && plan->slots[s].constant.is_tensor()) kept += plan->slots[s].constant.tensor().nbytes();
  }
  EXPECT_LE(kept, po.fold_total_bytes);
  EXPECT_EQ(folded, 4);
}

TEST(PlanLimits, ChainPastTheFoldBudgetStillComputes) {
  // 40 nodes of 16 MiB (640 MiB if all were kept): the session keeps at most 256 MiB
  // and the run computes the rest. Each of the 4M ones is negated 40 times: the sum is 4M.
  auto s = onyx::session_from_model(model_of(fold_chain(1 << 22, 40)));
  auto out = s->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor().data<float>()[0], static_cast<float>(1 << 22));
}

}  // namespace
}  // namespace onyx::test
