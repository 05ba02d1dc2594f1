// The fusion passes of the graph optimizer (kAll, into the ai.onyx ops): activations,
// residual Adds and attention. Each pattern is checked to be rewritten (op counts) and
// to give the unoptimized outputs (opt_testing.h); the near misses to stay as they are.
#include <gtest/gtest.h>

#include <random>

#include "opt_testing.h"

namespace onyx::test {
namespace {

using GO = GraphOptimization;

/// Conv [1, 3, 6, 6] -> [1, 4, 6, 6] on x, with weights w / b.
GraphSpec conv_graph(std::mt19937& rng) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 3, 6, 6})};
  g.outputs = {tensor_info("y", kFloat, {"N", 4, 6, 6})};
  g.initializers = {random_init("w", {4, 3, 3, 3}, rng), random_init("b", {4}, rng)};
  g.nodes = {
      NodeSpec("Conv", {"x", "w", "b"}, {"c"},
               {AttrSpec::Ints("kernel_shape", {3, 3}), AttrSpec::Ints("pads", {1, 1, 1, 1})})};
  return g;
}

struct ActCase {
  std::string name;             ///< the expected activation attribute
  std::vector<NodeSpec> nodes;  ///< from "c" to "y"
  std::vector<TensorSpec> inits;
  int64_t opset = 17;
};

std::vector<ActCase> activation_cases() {
  return {
      {"Relu", {NodeSpec("Relu", {"c"}, {"y"})}, {}},
      {"Clip",
       {NodeSpec("Clip", {"c", "lo", "hi"}, {"y"})},
       {scalar_init("lo", 0.0f), scalar_init("hi", 6.0f)}},
      {"Clip", {NodeSpec("Clip", {"c", "", "hi"}, {"y"})}, {scalar_init("hi", 0.5f)}},
      {"Clip",
       {NodeSpec("Clip", {"c"}, {"y"},
                 {AttrSpec::Float("min", -1.0f), AttrSpec::Float("max", 1.0f)})},
       {},
       6},
      {"Sigmoid", {NodeSpec("Sigmoid", {"c"}, {"y"})}, {}},
      {"Tanh", {NodeSpec("Tanh", {"c"}, {"y"})}, {}},
      {"LeakyRelu", {NodeSpec("LeakyRelu", {"c"}, {"y"}, {AttrSpec::Float("alpha", 0.2f)})}, {}},
      {"HardSigmoid", {NodeSpec("HardSigmoid", {"c"}, {"y"})}, {}},
      {"HardSwish", {NodeSpec("HardSwish", {"c"}, {"y"})}, {}},
      {"HardSwish",
       {NodeSpec("HardSigmoid", {"c"}, {"hs"},
                 {AttrSpec::Float("alpha", 1.0f / 6), AttrSpec::Float("beta", 0.5f)}),
        NodeSpec("Mul", {"hs", "c"}, {"y"})},
       {}},
      {"SiLU", {NodeSpec("Sigmoid", {"c"}, {"s"}), NodeSpec("Mul", {"c", "s"}, {"y"})}, {}},
      {"Gelu", {NodeSpec("Gelu", {"c"}, {"y"})}, {}, 20},
      {"GeluTanh",
       {NodeSpec("Gelu", {"c"}, {"y"}, {AttrSpec::String("approximate", "tanh")})},
       {},
       20},
  };
}

TEST(OptActivation, ConvGemmMatMulTakeEveryActivation) {
  std::mt19937 rng(21);
  for (const ActCase& a : activation_cases()) {
    for (const char* producer : {"Conv", "Gemm", "MatMul"}) {
      if (a.opset < 7 && std::string(producer) == "Gemm")
        continue;  // Gemm-6 broadcasts differently
      GraphSpec g;
      Dims xd;
      if (std::string(producer) == "Conv") {
        g = conv_graph(rng);
        xd = {2, 3, 6, 6};
      } else {
        const bool gemm = std::string(producer) == "Gemm";
        g.inputs = {tensor_info(
            "x", kFloat, gemm ? std::vector<DimSpec>{"N", 7} : std::vector<DimSpec>{2, "N", 7})};
        g.outputs = {tensor_info(
            "y", kFloat, gemm ? std::vector<DimSpec>{"N", 5} : std::vector<DimSpec>{2, "N", 5})};
        g.initializers = {random_init("w", {7, 5}, rng), random_init("b", {5}, rng)};
        g.nodes = {gemm ? NodeSpec("Gemm", {"x", "w", "b"}, {"c"})
                        : NodeSpec("MatMul", {"x", "w"}, {"c"})};
        xd = gemm ? Dims{3, 7} : Dims{2, 3, 7};
      }
      for (const auto& n : a.nodes) g.nodes.push_back(n);
      for (const auto& t : a.inits) g.initializers.push_back(t);
      ModelSpec m(g, a.opset);
      const std::string what =
          std::string(producer) + " + " + a.name + " (opset " + std::to_string(a.opset) + ")";
      Optimized o = optimize_spec(m, GO::kAll);
      ASSERT_EQ(o.size(), 1u) << what;
      const ir::Node& f = o.graph.nodes[0];
      EXPECT_EQ(f.domain, "ai.onyx") << what;
      EXPECT_EQ(f.op_type, std::string("Fused") + producer) << what;
      EXPECT_EQ(f.attr_s("activation", "?"), a.name) << what;
      EXPECT_EQ(f.outputs[0], "y");
      EXPECT_EQ(optimize_spec(m, GO::kBasic).count(std::string("ai.onyx.Fused") + producer), 0)
          << what;
      expect_equivalent(m, {{"x", random_tensor(xd, rng, -3, 3)}}, what, 1e-5, 1e-5);
    }
  }
}

TEST(OptActivation, NearMissesStay) {
  std::mt19937 rng(22);
  {  // Clip with a non-constant max
    GraphSpec g = conv_graph(rng);
    g.inputs.push_back(tensor_info("hi", kFloat, {}));
    g.initializers.push_back(scalar_init("lo", 0.0f));
    g.nodes.push_back(NodeSpec("Clip", {"c", "lo", "hi"}, {"y"}));
    ModelSpec m(g, 13);
    Optimized o = optimize_spec(m);
    EXPECT_EQ(o.count("Clip"), 1);
    EXPECT_EQ(o.count("Conv"), 1);
    EXPECT_EQ(o.count("ai.onyx.FusedConv"), 0);
    expect_equivalent(
        m, {{"x", random_tensor({1, 3, 6, 6}, rng)}, {"hi", Tensor::scalar(DType::kFloat, 0.25f)}},
        "clip input max");
  }
  {  // the Conv output is read twice
    GraphSpec g = conv_graph(rng);
    g.outputs.push_back(tensor_info("c", kFloat, {"N", 4, 6, 6}));
    g.nodes.push_back(NodeSpec("Relu", {"c"}, {"y"}));
    ModelSpec m(g, 13);
    Optimized o = optimize_spec(m);
    EXPECT_EQ(o.count("Relu"), 1);
    EXPECT_EQ(o.count("Conv"), 1);
    expect_equivalent(m, {{"x", random_tensor({1, 3, 6, 6}, rng)}}, "conv output read twice");
  }
  {  // x * Sigmoid(x) where x is also read elsewhere
    GraphSpec g = conv_graph(rng);
    g.outputs.push_back(tensor_info("z", kFloat, {"N", 4, 6, 6}));
    g.nodes.push_back(NodeSpec("Sigmoid", {"c"}, {"s"}));
    g.nodes.push_back(NodeSpec("Mul", {"c", "s"}, {"y"}));
    g.nodes.push_back(NodeSpec("Neg", {"c"}, {"z"}));
    ModelSpec m(g, 13);
    Optimized o = optimize_spec(m);
    EXPECT_EQ(o.count("Sigmoid"), 1);
    EXPECT_EQ(o.count("Mul"), 1);
    expect_equivalent(m, {{"x", random_tensor({1, 3, 6, 6}, rng)}}, "silu read elsewhere");
  }
  {  // LeakyRelu on an integer MatMul stays
    GraphSpec g;
    g.inputs = {tensor_info("x", kInt32, {2, 3})};
    g.outputs = {tensor_info("y", kInt32, {2, 3})};
    g.initializers = {TensorSpec::raw_of(
        "w", kInt32, {3, 3}, raw_bytes(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}))};
    g.nodes = {NodeSpec("MatMul", {"x", "w"}, {"c"}), NodeSpec("Relu", {"c"}, {"y"})};
    ModelSpec m(g, 13);
    EXPECT_EQ(optimize_spec(m).count("ai.onyx.FusedMatMul"), 0);
  }
}

TEST(OptResidual, ConvAddReluBecomesOneFusedConv) {
  std::mt19937 rng(23);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 4, 5, 5})};
  g.outputs = {tensor_info("y", kFloat, {"N", 4, 5, 5})};
  g.initializers = {random_init("w1", {4, 4, 3, 3}, rng), random_init("w2", {4, 4, 3, 3}, rng),
                    random_init("b", {4}, rng)};
  const std::vector<AttrSpec> at = {AttrSpec::Ints("kernel_shape", {3, 3}),
                                    AttrSpec::Ints("pads", {1, 1, 1, 1})};
  g.nodes = {NodeSpec("Conv", {"x", "w1", "b"}, {"c1"}, at), NodeSpec("Relu", {"c1"}, {"r1"}),
             NodeSpec("Conv", {"r1", "w2", "b"}, {"c2"}, at), NodeSpec("Add", {"x", "c2"}, {"s"}),
             NodeSpec("Relu", {"s"}, {"y"})};
  ModelSpec m(g, 17);
  Optimized o = optimize_spec(m);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.count("ai.onyx.FusedConv"), 2);
  const ir::Node& last = o.graph.nodes[1];
  ASSERT_EQ(last.inputs.size(), 4u);
  EXPECT_EQ(last.inputs[3], "x");
  EXPECT_EQ(last.attr_s("activation", ""), "Relu");
  EXPECT_EQ(last.outputs[0], "y");
  expect_equivalent(m, {{"x", random_tensor({2, 4, 5, 5}, rng)}}, "residual", 1e-5, 1e-5);
}

TEST(OptResidual, BroadcastingAddOrActivationFirstStays) {
  std::mt19937 rng(24);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1, 4, 5, 5}), tensor_info("z", kFloat, {1, 4, 1, 1})};
  g.outputs = {tensor_info("y", kFloat, {1, 4, 5, 5}), tensor_info("y2", kFloat, {1, 4, 5, 5})};
  g.initializers = {random_init("w", {4, 4, 1, 1}, rng)};
  g.nodes = {NodeSpec("Conv", {"x", "w"}, {"c1"}),
             NodeSpec("Add", {"c1", "z"}, {"y"}),  // z broadcasts
             NodeSpec("Conv", {"x", "w"}, {"c2"}), NodeSpec("Relu", {"c2"}, {"r2"}),
             NodeSpec("Add", {"r2", "x"}, {"y2"})};  // Relu(conv) + x is not Relu(conv + x)
  ModelSpec m(g, 17);
  Optimized o = optimize_spec(m);
  EXPECT_EQ(o.count("Add"), 2);
  for (const auto& n : o.graph.nodes) {
    if (n.op_type == "FusedConv") EXPECT_TRUE(n.inputs.size() < 4 || n.inputs[3].empty());
  }
  expect_equivalent(
      m, {{"x", random_tensor({1, 4, 5, 5}, rng)}, {"z", random_tensor({1, 4, 1, 1}, rng)}},
      "residual misses");
}

/// The attention block of torch 1.13's nn.MultiheadAttention (batch_first) as exported:
/// q, k, v [L, B*H, D] from the projections, Q scaled first, K^T by one Transpose.
GraphSpec mha_graph(int64_t heads, bool mask) {
  GraphSpec g;
  g.inputs = {tensor_info("q0", kFloat, {"L", "BH", 8}), tensor_info("k0", kFloat, {"S", "BH", 8}),
              tensor_info("v0", kFloat, {"S", "BH", 8})};
  if (mask) g.inputs.push_back(tensor_info("mask", kFloat, {"L", "S"}));
  g.outputs = {tensor_info("y", kFloat, {"L", "BH", 8})};
  g.initializers = {scalar_init("sc", std::sqrt(8.0f))};
  g.nodes = {NodeSpec("Transpose", {"q0"}, {"q"}, {AttrSpec::Ints("perm", {1, 0, 2})}),
             NodeSpec("Transpose", {"v0"}, {"v"}, {AttrSpec::Ints("perm", {1, 0, 2})}),
             NodeSpec("Div", {"q", "sc"}, {"qs"}),
             NodeSpec("Transpose", {"k0"}, {"kt"}, {AttrSpec::Ints("perm", {1, 2, 0})}),
             NodeSpec("MatMul", {"qs", "kt"}, {"s"})};
  std::string sm_in = "s";
  if (mask) {
    g.nodes.push_back(NodeSpec("Add", {"s", "mask"}, {"sm"}));
    sm_in = "sm";
  }
  g.nodes.push_back(NodeSpec("Softmax", {sm_in}, {"p"}, {AttrSpec::Int("axis", -1)}));
  g.nodes.push_back(NodeSpec("MatMul", {"p", "v"}, {"o"}));
  g.nodes.push_back(NodeSpec("Transpose", {"o"}, {"y"}, {AttrSpec::Ints("perm", {1, 0, 2})}));
  (void)heads;
  return g;
}

/// BERT-style: [B, T, H, D] -> permute, K^T by perm (0, 2, 3, 1), scale after the MatMul,
/// an additive mask [B, 1, 1, T].
GraphSpec bert_graph() {
  GraphSpec g;
  g.inputs = {
      tensor_info("q0", kFloat, {"B", "T", 2, 4}), tensor_info("k0", kFloat, {"B", "T", 2, 4}),
      tensor_info("v0", kFloat, {"B", "T", 2, 4}), tensor_info("mask", kFloat, {"B", 1, 1, "T"})};
  g.outputs = {tensor_info("y", kFloat, {"B", 2, "T", 4})};
  g.initializers = {scalar_init("sc", 2.0f)};
  g.nodes = {NodeSpec("Transpose", {"q0"}, {"q"}, {AttrSpec::Ints("perm", {0, 2, 1, 3})}),
             NodeSpec("Transpose", {"v0"}, {"v"}, {AttrSpec::Ints("perm", {0, 2, 1, 3})}),
             NodeSpec("Transpose", {"k0"}, {"kt"}, {AttrSpec::Ints("perm", {0, 2, 3, 1})}),
             NodeSpec("MatMul", {"q", "kt"}, {"s"}),
             NodeSpec("Div", {"s", "sc"}, {"ss"}),
             NodeSpec("Add", {"ss", "mask"}, {"sm"}),
             NodeSpec("Softmax", {"sm"}, {"p"}, {AttrSpec::Int("axis", 3)}),
             NodeSpec("MatMul", {"p", "v"}, {"y"})};
  return g;
}

TEST(OptAttention, TorchMultiheadAttentionAndBertPatterns) {
  std::mt19937 rng(25);
  for (bool mask : {false, true}) {
    ModelSpec m(mha_graph(4, mask), 17);
    Optimized o = optimize_spec(m);
    ASSERT_EQ(o.count("ai.onyx.Attention"), 1) << "mask " << mask;
    EXPECT_EQ(o.count("Softmax"), 0);
    EXPECT_EQ(o.count("MatMul"), 0);
    EXPECT_NEAR(o.find("ai.onyx.Attention")->attr_f("scale", 0), 1.0 / std::sqrt(8.0), 1e-6);
    EXPECT_EQ(optimize_spec(m, GO::kBasic).count("ai.onyx.Attention"), 0);
    Feeds f = {{"q0", random_tensor({5, 6, 8}, rng, -2, 2)},
               {"k0", random_tensor({7, 6, 8}, rng, -2, 2)},
               {"v0", random_tensor({7, 6, 8}, rng)}};
    if (mask) f.push_back({"mask", random_tensor({5, 7}, rng, -5, 0)});
    expect_equivalent(m, f, mask ? "mha masked" : "mha", 1e-5, 1e-6);
  }
  ModelSpec m(bert_graph(), 17);
  Optimized o = optimize_spec(m);
  ASSERT_EQ(o.count("ai.onyx.Attention"), 1);
  EXPECT_NEAR(o.find("ai.onyx.Attention")->attr_f("scale", 0), 0.5, 1e-7);
  EXPECT_EQ(o.find("ai.onyx.Attention")->inputs.size(), 4u);
  expect_equivalent(m,
                    {{"q0", random_tensor({2, 5, 2, 4}, rng, -2, 2)},
                     {"k0", random_tensor({2, 5, 2, 4}, rng, -2, 2)},
                     {"v0", random_tensor({2, 5, 2, 4}, rng)},
                     {"mask", random_tensor({2, 1, 1, 5}, rng, -5, 0)}},
                    "bert", 1e-5, 1e-6);
}

TEST(OptAttention, NearMissesStay) {
  std::mt19937 rng(26);
  {  // softmax over another axis
    GraphSpec g = mha_graph(4, false);
    for (auto& n : g.nodes)
      if (n.op_type == "Softmax") n.attrs = {AttrSpec::Int("axis", 1)};
    ModelSpec m(g, 17);
    EXPECT_EQ(optimize_spec(m).count("ai.onyx.Attention"), 0);
    expect_equivalent(m,
                      {{"q0", random_tensor({5, 6, 8}, rng)},
                       {"k0", random_tensor({7, 6, 8}, rng)},
                       {"v0", random_tensor({7, 6, 8}, rng)}},
                      "softmax axis 1");
  }
  {  // the attention weights are also an output
    GraphSpec g = mha_graph(4, false);
    g.outputs.push_back(tensor_info("p", kFloat, {"BH", "L", "S"}));
    ModelSpec m(g, 17);
    EXPECT_EQ(optimize_spec(m).count("ai.onyx.Attention"), 0);
    expect_equivalent(m,
                      {{"q0", random_tensor({5, 6, 8}, rng)},
                       {"k0", random_tensor({7, 6, 8}, rng)},
                       {"v0", random_tensor({7, 6, 8}, rng)}},
                      "weights read");
  }
  {  // scale by a non-constant
    GraphSpec g = bert_graph();
    g.initializers.clear();
    g.inputs.push_back(tensor_info("sc", kFloat, {}));
    ModelSpec m(g, 17);
    Optimized o = optimize_spec(m);
    EXPECT_EQ(o.count("ai.onyx.Attention"), 0);
  }
}

}  // namespace
}  // namespace onyx::test
