// The standard-op passes of the graph optimizer (kBasic): each test checks that a pattern
// is rewritten (the op counts after optimize_graph) and that the optimized model gives the
// outputs of the unoptimized one on the reference kernels (opt_testing.h), and that the
// near misses are left alone.
#include <gtest/gtest.h>

#include <random>

#include "opt_testing.h"

namespace onyx::test {
namespace {

using GO = GraphOptimization;

// ---- eliminate_noops ----

TEST(OptNoops, RemovesIdentityDropoutCastReshapeTransposeExpandConcat) {
  std::mt19937 rng(1);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 3, 4})};
  g.outputs = {tensor_info("y", kFloat, {"N", 3, 4})};
  g.initializers = {ints_init("same", {0, 3, -1}), ints_init("ones", {1, 1}),
                    ints_init("full", {3, 4})};
  g.nodes = {NodeSpec("Relu", {"x"}, {"a"}),
             NodeSpec("Identity", {"a"}, {"b"}),
             NodeSpec("Dropout", {"b"}, {"c"}),
             NodeSpec("Cast", {"c"}, {"d"}, {AttrSpec::Int("to", kFloat)}),
             NodeSpec("Reshape", {"d", "same"}, {"e"}),
             NodeSpec("Transpose", {"e"}, {"f"}, {AttrSpec::Ints("perm", {0, 1, 2})}),
             NodeSpec("Expand", {"f", "ones"}, {"h"}),
             NodeSpec("Expand", {"h", "full"}, {"i"}),
             NodeSpec("Concat", {"i"}, {"j"}, {AttrSpec::Int("axis", 1)}),
             NodeSpec("Neg", {"j"}, {"y"})};
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.size(), 2u);
  EXPECT_EQ(o.count("Relu"), 1);
  EXPECT_EQ(o.count("Neg"), 1);
  expect_equivalent(m, {{"x", random_tensor({2, 3, 4}, rng)}}, "noops");
}

TEST(OptNoops, KeepsOpsThatChangeSomething) {
  std::mt19937 rng(2);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2, 3, 4}), tensor_info("train", kBool, {})};
  g.outputs = {tensor_info("y", kFloat, {2, 12}), tensor_info("z", kInt32, {2, 3, 4}),
               tensor_info("w", kFloat, {2, 3, 4})};
  g.initializers = {ints_init("flat", {0, -1}), scalar_init("ratio", 0.5f)};
  g.nodes = {NodeSpec("Reshape", {"x", "flat"}, {"y"}),                      // changes the shape
             NodeSpec("Cast", {"x"}, {"z"}, {AttrSpec::Int("to", kInt32)}),  // another type
             NodeSpec("Dropout", {"x", "ratio", "train"}, {"w"})};           // training may be on
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Reshape"), 1);
  EXPECT_EQ(o.count("Cast"), 1);
  EXPECT_EQ(o.count("Dropout"), 1);
  Tensor off(DType::kBool, {});
  off.data<uint8_t>()[0] = 0;
  expect_equivalent(m, {{"x", random_tensor({2, 3, 4}, rng)}, {"train", off}}, "kept");
}

TEST(OptNoops, IdentityBeforeAGraphOutputKeepsTheOutputName) {
  std::mt19937 rng(3);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {4})};
  g.outputs = {tensor_info("y", kFloat, {4}), tensor_info("x_again", kFloat, {4})};
  g.nodes = {NodeSpec("Relu", {"x"}, {"r"}), NodeSpec("Identity", {"r"}, {"y"}),
             NodeSpec("Identity", {"x"}, {"x_again"})};  // input to output: must stay
  ModelSpec m(g);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Identity"), 1);
  ASSERT_NE(o.find("Relu"), nullptr);
  EXPECT_EQ(o.find("Relu")->outputs[0], "y");
  EXPECT_EQ(o.graph.outputs[0].name, "y");
  expect_equivalent(m, {{"x", random_tensor({4}, rng)}}, "identity to output");
}

// ---- fold_constants ----

TEST(OptConstants, FoldsConstantNodesArithmeticAndStaticShapes) {
  std::mt19937 rng(4);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 6, 4}), tensor_info("s", kFloat, {2, 3})};
  g.outputs = {tensor_info("y", kFloat, {"N", 24}), tensor_info("t", kFloat, {2, 3})};
  TensorSpec two = TensorSpec::floats("", {}, {2.0f});
  g.initializers = {ints_init("idx", {1}), ints_init("minus1", {-1}), ints_init("zero", {0})};
  g.nodes = {NodeSpec("Constant", {}, {"c"}, {AttrSpec::Tensor("value", two)}),
             NodeSpec("Add", {"c", "c"}, {"c4"}),
             NodeSpec("Shape", {"s"}, {"ss"}),  // static: [2, 3]
             NodeSpec("Cast", {"ss"}, {"ssf"}, {AttrSpec::Int("to", kFloat)}),
             NodeSpec("ReduceSum", {"ssf"}, {"sum"}, {AttrSpec::Int("keepdims", 0)}),  // 5
             NodeSpec("Mul", {"s", "c4"}, {"s4"}),
             NodeSpec("Add", {"s4", "sum"}, {"t"}),
             NodeSpec("Shape", {"x"}, {"xs"}),  // dynamic batch, but dims 1 and 2 are known
             NodeSpec("Gather", {"xs", "idx"}, {"d1"}, {AttrSpec::Int("axis", 0)}),
             NodeSpec("Concat", {"zero", "minus1"}, {"shape"}, {AttrSpec::Int("axis", 0)}),
             NodeSpec("Reshape", {"x", "shape"}, {"y0"}),
             NodeSpec("Cast", {"d1"}, {"d1f"}, {AttrSpec::Int("to", kFloat)}),
             NodeSpec("Mul", {"y0", "d1f"}, {"y"})};
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Constant"), 0);
  EXPECT_EQ(o.count("Shape"), 0);
  EXPECT_EQ(o.count("Gather"), 0);
  EXPECT_EQ(o.count("ReduceSum"), 0);
  EXPECT_EQ(o.count("Concat"), 0);
  EXPECT_EQ(o.size(), 4u);  // Mul, Add, Reshape, Mul
  expect_equivalent(m, {{"x", random_tensor({3, 6, 4}, rng)}, {"s", random_tensor({2, 3}, rng)}},
                    "folding");
}

TEST(OptConstants, KeepsLargeRandomAndOutputNodes) {
  std::mt19937 rng(5);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {64, 64})};
  g.outputs = {tensor_info("y", kFloat, {64, 64}), tensor_info("k", kFloat, {2}),
               tensor_info("r", kFloat, {64, 64})};
  g.initializers = {ints_init("shape", {64, 64})};
  TensorSpec one = TensorSpec::floats("", {1}, {1.5f});
  g.nodes = {
      NodeSpec("ConstantOfShape", {"shape"}, {"big"}, {AttrSpec::Tensor("value", one)}),  // 16 KiB
      NodeSpec("Add", {"x", "big"}, {"y"}),
      NodeSpec("Constant", {}, {"k"},
               {AttrSpec::Floats("value_floats", {1, 2})}),  // a graph output
      NodeSpec("RandomUniform", {}, {"ru"},
               {AttrSpec::Ints("shape", {64, 64}), AttrSpec::Int("dtype", kFloat),
                AttrSpec::Float("seed", 3.0f)}),
      NodeSpec("Mul", {"ru", "x"}, {"r"})};
  ModelSpec m(g, 13);
  auto model = load_spec(m);
  ir::Graph graph = *model->graph;
  opt::OptimizeOptions oo;
  oo.level = GO::kBasic;
  oo.default_opset = 13;
  oo.fold_max_bytes = 1024;
  opt::optimize_graph(graph, oo);
  int cos = 0, cst = 0, ru = 0;
  for (const auto& n : graph.nodes) {
    cos += n.op_type == "ConstantOfShape";
    cst += n.op_type == "Constant";
    ru += n.op_type == "RandomUniform";
  }
  EXPECT_EQ(cos, 1) << "above fold_max_bytes: stays a node";
  EXPECT_EQ(cst, 1) << "a graph output stays";
  EXPECT_EQ(ru, 1) << "random ops are never folded";
  // With the default limit (64 MiB) the ConstantOfShape folds.
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("ConstantOfShape"), 0);
  std::vector<Value> a = run_spec(m, {{"x", random_tensor({64, 64}, rng)}}, GO::kNone, true);
}

// ---- eliminate_dead_nodes ----

TEST(OptDeadNodes, RemovesUnreadNodesAndInitializersButNotRandomOps) {
  std::mt19937 rng(6);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {3})};
  g.outputs = {tensor_info("y", kFloat, {3})};
  g.initializers = {random_init("w", {3}, rng), random_init("unused", {3}, rng)};
  g.nodes = {NodeSpec("Relu", {"x"}, {"y"}), NodeSpec("Mul", {"x", "w"}, {"dead1"}),
             NodeSpec("Neg", {"dead1"}, {"dead2"}),
             NodeSpec("RandomNormal", {}, {"noise"}, {AttrSpec::Ints("shape", {3})})};
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Mul"), 0);
  EXPECT_EQ(o.count("Neg"), 0);
  EXPECT_EQ(o.count("RandomNormal"), 1);
  EXPECT_EQ(o.graph.initializers.size(), 0u);
  expect_equivalent(m, {{"x", random_tensor({3}, rng)}}, "dead");
}

// ---- cancel_transpose_reshape ----

TEST(OptCancel, TransposeReshapeAndSqueezePairs) {
  std::mt19937 rng(7);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2, 3, 4})};
  g.outputs = {tensor_info("a", kFloat, {2, 3, 4}), tensor_info("b", kFloat, {4, 2, 3}),
               tensor_info("c", kFloat, {6, 4}), tensor_info("d", kFloat, {2, 3, 4}),
               tensor_info("e", kFloat, {2, 3, 4})};
  g.initializers = {ints_init("s1", {6, 4}), ints_init("s2", {3, 2, 4}), ints_init("s3", {6, 4}),
                    ints_init("ax", {1}), ints_init("ax0", {0})};
  g.nodes = {
      NodeSpec("Transpose", {"x"}, {"t1"}, {AttrSpec::Ints("perm", {1, 2, 0})}),
      NodeSpec("Transpose", {"t1"}, {"a"},
               {AttrSpec::Ints("perm", {2, 0, 1})}),  // identity overall
      NodeSpec("Transpose", {"x"}, {"t2"}, {AttrSpec::Ints("perm", {0, 2, 1})}),
      NodeSpec("Transpose", {"t2"}, {"b"}, {AttrSpec::Ints("perm", {1, 0, 2})}),  // one transpose
      NodeSpec("Reshape", {"x", "s1"}, {"r1"}),
      NodeSpec("Reshape", {"r1", "s2"}, {"r2"}),
      NodeSpec("Reshape", {"r2", "s3"}, {"c"}),  // one reshape
      NodeSpec("Unsqueeze", {"x", "ax"}, {"u"}),
      NodeSpec("Squeeze", {"u", "ax"}, {"d"}),  // cancels
      NodeSpec("Unsqueeze", {"x", "ax0"}, {"u0"}),
      NodeSpec("Squeeze", {"u0", "ax0"}, {"sq0"}),
      NodeSpec("Neg", {"sq0"}, {"e"})};
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Transpose"), 1);
  EXPECT_EQ(o.count("Reshape"), 1);
  EXPECT_EQ(o.count("Squeeze") + o.count("Unsqueeze"), 0);
  EXPECT_EQ(o.count("Identity"), 2) << "graph input to graph output: an Identity is left";
  ASSERT_NE(o.find("Transpose"), nullptr);
  EXPECT_EQ(o.find("Transpose")->attr("perm")->ints, (std::vector<int64_t>{2, 0, 1}));
  expect_equivalent(m, {{"x", random_tensor({2, 3, 4}, rng)}}, "cancel");
}

TEST(OptCancel, KeepsReshapesThatCopyDimsAndDifferentAxes) {
  std::mt19937 rng(8);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2, 3, 4})};
  g.outputs = {tensor_info("c", kFloat, {6, 2, 2}), tensor_info("d", kFloat, {2, 1, 3, 4})};
  g.initializers = {ints_init("s1", {6, 4}), ints_init("s2", {0, 2, 2}), ints_init("ax1", {1}),
                    ints_init("ax2", {0})};
  g.nodes = {NodeSpec("Reshape", {"x", "s1"}, {"r1"}),
             NodeSpec("Reshape", {"r1", "s2"}, {"c"}),  // 0 copies r1's dim 0 (6): not x's (2)
             NodeSpec("Unsqueeze", {"x", "ax1"}, {"u"}),
             NodeSpec("Unsqueeze", {"u", "ax2"}, {"u2"}),
             NodeSpec("Squeeze", {"u2", "ax2"}, {"d"})};
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("Reshape"), 2);
  expect_equivalent(m, {{"x", random_tensor({2, 3, 4}, rng)}}, "kept reshapes");
}

// ---- fold_batch_norm ----

/// Nodes of a BatchNormalization with random statistics (initializers added to g).
NodeSpec batch_norm(GraphSpec& g, const std::string& x, const std::string& y, int64_t c,
                    std::mt19937& rng, const std::string& p) {
  g.initializers.push_back(random_init(p + "scale", {c}, rng, 0.5f, 1.5f));
  g.initializers.push_back(random_init(p + "bias", {c}, rng));
  g.initializers.push_back(random_init(p + "mean", {c}, rng));
  g.initializers.push_back(random_init(p + "var", {c}, rng, 0.5f, 2.0f));
  return NodeSpec("BatchNormalization", {x, p + "scale", p + "bias", p + "mean", p + "var"}, {y},
                  {AttrSpec::Float("epsilon", 1e-3f)});
}

TEST(OptBatchNorm, FoldsIntoConvConvTransposeGemmAndMatMul) {
  std::mt19937 rng(9);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 4, 5, 5}), tensor_info("v", kFloat, {"M", 6})};
  g.outputs = {tensor_info("y1", kFloat, {"N", 6, 5, 5}), tensor_info("y2", kFloat, {"N", 6, 6, 6}),
               tensor_info("y3", kFloat, {"M", 3}), tensor_info("y4", kFloat, {"M", 5}),
               tensor_info("y5", kFloat, {"M", 3})};
  g.initializers = {random_init("w1", {6, 2, 3, 3}, rng), random_init("b1", {6}, rng),
                    random_init("w2", {4, 3, 2, 2}, rng),  // ConvTranspose, group 2: 6 maps
                    random_init("w3", {3, 6}, rng),       random_init("c3", {1, 3}, rng),
                    random_init("w4", {6, 5}, rng),       random_init("w5", {6, 3}, rng)};
  g.nodes = {NodeSpec("Conv", {"x", "w1", "b1"}, {"c1"},
                      {AttrSpec::Ints("kernel_shape", {3, 3}), AttrSpec::Ints("pads", {1, 1, 1, 1}),
                       AttrSpec::Int("group", 2)}),
             batch_norm(g, "c1", "y1", 6, rng, "bn1"),
             NodeSpec("ConvTranspose", {"x", "w2"}, {"c2"},
                      {AttrSpec::Ints("kernel_shape", {2, 2}), AttrSpec::Int("group", 2)}),
             batch_norm(g, "c2", "y2", 6, rng, "bn2"),
             NodeSpec("Gemm", {"v", "w3", "c3"}, {"c3o"},
                      {AttrSpec::Int("transB", 1), AttrSpec::Float("beta", 0.5f)}),
             batch_norm(g, "c3o", "y3", 3, rng, "bn3"),
             NodeSpec("MatMul", {"v", "w4"}, {"c4"}),
             batch_norm(g, "c4", "y4", 5, rng, "bn4"),
             NodeSpec("Gemm", {"v", "w5"}, {"c5"}),  // no C
             batch_norm(g, "c5", "y5", 3, rng, "bn5")};
  ModelSpec m(g, 15);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("BatchNormalization"), 0);
  EXPECT_EQ(o.count("MatMul"), 0);
  EXPECT_EQ(o.count("Gemm"), 3);
  EXPECT_EQ(o.size(), 5u);
  expect_equivalent(m, {{"x", random_tensor({2, 4, 5, 5}, rng)}, {"v", random_tensor({3, 6}, rng)}},
                    "bn folding", 1e-4, 1e-5);
}

TEST(OptBatchNorm, AfterAConcatWithAnActivationBecomesAFusedDepthwiseConv) {
  // DenseNet's pattern: Concat -> BatchNormalization -> Relu, the Concat also read by the
  // next Concat, so no producer absorbs the BatchNormalization. With fused ops it becomes
  // a 1x1 depthwise Conv that the Relu joins; without them, or without an activation after
  // it, it stays.
  std::mt19937 rng(12);
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {"N", 3, 5, 6}), tensor_info("b", kFloat, {"N", 2, 5, 6})};
  g.outputs = {tensor_info("y", kFloat, {"N", 5, 5, 6}), tensor_info("cat2", kFloat, {"N", 7, 5, 6}),
               tensor_info("y2", kFloat, {"N", 5, 5, 6})};
  g.nodes = {NodeSpec("Concat", {"a", "b"}, {"cat"}, {AttrSpec::Int("axis", 1)}),
             batch_norm(g, "cat", "n", 5, rng, "bn1"),
             NodeSpec("Relu", {"n"}, {"y"}),
             NodeSpec("Concat", {"cat", "b"}, {"cat2"}, {AttrSpec::Int("axis", 1)}),
             batch_norm(g, "cat", "y2", 5, rng, "bn2")};  // no activation after it
  ModelSpec m(g, 15);
  Optimized o = optimize_spec(m, GO::kAll);
  EXPECT_EQ(o.count("BatchNormalization"), 1);
  EXPECT_EQ(o.count("Relu"), 0);
  EXPECT_EQ(o.count("ai.onyx.FusedConv"), 1);
  EXPECT_EQ(optimize_spec(m, GO::kAll, false).count("BatchNormalization"), 2);
  EXPECT_EQ(optimize_spec(m, GO::kBasic).count("BatchNormalization"), 2);
  expect_equivalent(m, {{"a", random_tensor({2, 3, 5, 6}, rng)}, {"b", random_tensor({2, 2, 5, 6}, rng)}},
                    "bn to depthwise", 1e-4, 1e-5);
}

TEST(OptBatchNorm, NearMissesStay) {
  std::mt19937 rng(10);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1, 2, 4, 4}), tensor_info("gamma", kFloat, {3}),
              tensor_info("t", kFloat, {2, 5, 6})};
  g.outputs = {tensor_info("y1", kFloat, {1, 3, 4, 4}), tensor_info("c1", kFloat, {1, 3, 4, 4}),
               tensor_info("y2", kFloat, {1, 3, 4, 4}), tensor_info("y3", kFloat, {2, 5, 3})};
  g.initializers = {random_init("w", {3, 2, 1, 1}, rng), random_init("w3", {6, 3}, rng),
                    random_init("b", {3}, rng), random_init("m", {3}, rng),
                    random_init("var", {3}, rng, 0.5f, 1.0f)};
  g.nodes = {NodeSpec("Conv", {"x", "w"}, {"c1"}),  // also a graph output
             batch_norm(g, "c1", "y1", 3, rng, "bn1"),
             NodeSpec("Conv", {"x", "w"}, {"c2"}),
             NodeSpec("BatchNormalization", {"c2", "gamma", "b", "m", "var"},
                      {"y2"}),                         // scale is an input
             NodeSpec("MatMul", {"t", "w3"}, {"c3"}),  // 3-D: axis 1 is not N
             batch_norm(g, "c3", "y3", 5, rng, "bn3")};
  ModelSpec m(g, 15);
  Optimized o = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(o.count("BatchNormalization"), 3);
  expect_equivalent(m,
                    {{"x", random_tensor({1, 2, 4, 4}, rng)},
                     {"gamma", random_tensor({3}, rng)},
                     {"t", random_tensor({2, 5, 6}, rng)}},
                    "bn near misses");
}

// ---- fuse_matmul_add ----

TEST(OptMatMulAdd, TwoDimensionalBecomesGemmHigherRankFusedMatMul) {
  std::mt19937 rng(11);
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {"M", 8}), tensor_info("t", kFloat, {2, "T", 8})};
  g.outputs = {tensor_info("y", kFloat, {"M", 5}), tensor_info("z", kFloat, {2, "T", 5})};
  g.initializers = {random_init("w", {8, 5}, rng), random_init("bias", {5}, rng),
                    random_init("bias2", {1, 1, 5}, rng)};
  g.nodes = {NodeSpec("MatMul", {"a", "w"}, {"p"}), NodeSpec("Add", {"bias", "p"}, {"y"}),
             NodeSpec("MatMul", {"t", "w"}, {"q"}), NodeSpec("Add", {"q", "bias2"}, {"z"})};
  ModelSpec m(g, 13);
  Optimized basic = optimize_spec(m, GO::kBasic);
  EXPECT_EQ(basic.count("Gemm"), 1);
  EXPECT_EQ(basic.count("MatMul"), 1);
  EXPECT_EQ(basic.count("ai.onyx.FusedMatMul"), 0);
  Optimized all = optimize_spec(m, GO::kAll);
  EXPECT_EQ(all.count("Gemm"), 1);
  EXPECT_EQ(all.count("ai.onyx.FusedMatMul"), 1);
  EXPECT_EQ(all.count("Add"), 0);
  expect_equivalent(m, {{"a", random_tensor({3, 8}, rng)}, {"t", random_tensor({2, 4, 8}, rng)}},
                    "matmul add");
}

TEST(OptMatMulAdd, NearMissesStay) {
  std::mt19937 rng(12);
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {3, 8}), tensor_info("bias_in", kFloat, {5})};
  g.outputs = {tensor_info("y1", kFloat, {3, 5}), tensor_info("p1", kFloat, {3, 5}),
               tensor_info("y2", kFloat, {3, 5}), tensor_info("y3", kFloat, {2, 3, 5})};
  g.initializers = {random_init("w", {8, 5}, rng), random_init("bias", {5}, rng),
                    random_init("wide", {2, 1, 5}, rng)};
  g.nodes = {NodeSpec("MatMul", {"a", "w"}, {"p1"}),
             NodeSpec("Add", {"p1", "bias"}, {"y1"}),  // p1 is an output
             NodeSpec("MatMul", {"a", "w"}, {"p2"}),
             NodeSpec("Add", {"p2", "bias_in"}, {"y2"}),  // bias not constant
             NodeSpec("MatMul", {"a", "w"}, {"p3"}),
             NodeSpec("Add", {"p3", "wide"}, {"y3"})};  // grows the output
  ModelSpec m(g, 13);
  Optimized o = optimize_spec(m, GO::kAll);
  EXPECT_EQ(o.count("MatMul") + o.count("ai.onyx.FusedMatMul"), 3);
  EXPECT_EQ(o.count("Add"), 3);
  EXPECT_EQ(o.count("Gemm"), 0);
  expect_equivalent(m, {{"a", random_tensor({3, 8}, rng)}, {"bias_in", random_tensor({5}, rng)}},
                    "matmul add misses");
}

// ---- fuse_layer_norm ----

/// The decomposed layer norm of PyTorch's opset-14 export, over the last axis of [2, T, 8].
GraphSpec decomposed_layer_norm(std::mt19937& rng, bool mul_forms, int64_t axis = -1) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2, "T", 8})};
  g.outputs = {tensor_info("y", kFloat, {2, "T", 8})};
  g.initializers = {scalar_init("two", 2.0f), scalar_init("eps", 1e-5f),
                    random_init("gamma", {8}, rng, 0.5f, 1.5f), random_init("beta", {8}, rng)};
  const auto ax = AttrSpec::Ints("axes", {axis});
  g.nodes = {NodeSpec("ReduceMean", {"x"}, {"m"}, {ax}), NodeSpec("Sub", {"x", "m"}, {"d"})};
  if (mul_forms)
    g.nodes.push_back(NodeSpec("Mul", {"d", "d"}, {"p"}));
  else
    g.nodes.push_back(NodeSpec("Pow", {"d", "two"}, {"p"}));
  g.nodes.push_back(NodeSpec("ReduceMean", {"p"}, {"v"}, {ax}));
  g.nodes.push_back(NodeSpec("Add", {"v", "eps"}, {"e"}));
  g.nodes.push_back(NodeSpec("Sqrt", {"e"}, {"s"}));
  if (mul_forms) {
    g.nodes.push_back(NodeSpec("Reciprocal", {"s"}, {"rs"}));
    g.nodes.push_back(NodeSpec("Mul", {"d", "rs"}, {"n"}));
  } else {
    g.nodes.push_back(NodeSpec("Div", {"d", "s"}, {"n"}));
  }
  g.nodes.push_back(NodeSpec("Mul", {"gamma", "n"}, {"ng"}));
  g.nodes.push_back(NodeSpec("Add", {"ng", "beta"}, {"y"}));
  return g;
}

TEST(OptLayerNorm, DecomposedPatternBecomesLayerNormalization) {
  std::mt19937 rng(13);
  for (bool mul_forms : {false, true}) {
    GraphSpec g = decomposed_layer_norm(rng, mul_forms);
    ModelSpec m17(g, 17), m14(g, 14);
    Optimized o17 = optimize_spec(m17, GO::kBasic);
    EXPECT_EQ(o17.size(), 1u);
    EXPECT_EQ(o17.count("LayerNormalization"), 1);
    Optimized o14b = optimize_spec(m14, GO::kBasic);
    EXPECT_EQ(o14b.count("LayerNormalization"), 0) << "opset 14 has no LayerNormalization";
    Optimized o14 = optimize_spec(m14, GO::kAll);
    EXPECT_EQ(o14.size(), 1u);
    EXPECT_EQ(o14.count("ai.onyx.LayerNormalization"), 1);
    Feeds f = {{"x", random_tensor({2, 5, 8}, rng, -3, 3)}};
    expect_equivalent(m17, f, "layer norm 17", 1e-5, 1e-5);
    expect_equivalent(m14, f, "layer norm 14", 1e-5, 1e-5);
  }
}

TEST(OptLayerNorm, NearMissesStay) {
  std::mt19937 rng(14);
  GraphSpec g = decomposed_layer_norm(rng, false, 1);  // over axis 1 of 3: not the last axes
  ModelSpec m(g, 17);
  EXPECT_EQ(optimize_spec(m, GO::kAll).count("LayerNormalization"), 0);
  GraphSpec g2 = decomposed_layer_norm(rng, false);
  g2.outputs.push_back(
      tensor_info("d", kFloat, {2, "T", 8}));  // the centred values are read outside
  ModelSpec m2(g2, 17);
  EXPECT_EQ(optimize_spec(m2, GO::kAll).count("LayerNormalization"), 0);
  GraphSpec g3 = decomposed_layer_norm(rng, false);
  g3.initializers[0] = scalar_init("two", 3.0f);  // not a variance
  ModelSpec m3(g3, 17);
  EXPECT_EQ(optimize_spec(m3, GO::kAll).count("LayerNormalization"), 0);
  Feeds f = {{"x", random_tensor({2, 5, 8}, rng, -3, 3)}};
  expect_equivalent(m, f, "ln axis 1");
  expect_equivalent(m2, f, "ln d read");
  expect_equivalent(m3, f, "ln cube");
}

// ---- fuse_gelu ----

GraphSpec gelu_graph(bool tanh_form, int assoc, float half = 0.5f) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {3, 16})};
  g.outputs = {tensor_info("y", kFloat, {3, 16})};
  g.initializers = {scalar_init("one", 1.0f), scalar_init("half", half)};
  std::string f;
  if (!tanh_form) {
    g.initializers.push_back(scalar_init("r2", 1.4142135381698608f));
    g.nodes = {NodeSpec("Div", {"x", "r2"}, {"a"}), NodeSpec("Erf", {"a"}, {"f"})};
  } else {
    g.initializers.push_back(scalar_init("k", 0.044714998453855515f));
    g.initializers.push_back(scalar_init("s2pi", 0.7978845834732056f));
    g.initializers.push_back(scalar_init("three", 3.0f));
    g.nodes = {NodeSpec("Pow", {"x", "three"}, {"x3"}), NodeSpec("Mul", {"k", "x3"}, {"m"}),
               NodeSpec("Add", {"x", "m"}, {"a"}), NodeSpec("Mul", {"s2pi", "a"}, {"u"}),
               NodeSpec("Tanh", {"u"}, {"f"})};
  }
  g.nodes.push_back(NodeSpec("Add", {"one", "f"}, {"c"}));
  if (assoc == 0) {
    g.nodes.push_back(NodeSpec("Mul", {"x", "c"}, {"d"}));
    g.nodes.push_back(NodeSpec("Mul", {"d", "half"}, {"y"}));
  } else if (assoc == 1) {
    g.nodes.push_back(NodeSpec("Mul", {"half", "x"}, {"h"}));
    g.nodes.push_back(NodeSpec("Mul", {"h", "c"}, {"y"}));
  } else {
    g.nodes.push_back(NodeSpec("Mul", {"c", "half"}, {"ch"}));
    g.nodes.push_back(NodeSpec("Mul", {"x", "ch"}, {"y"}));
  }
  return g;
}

TEST(OptGelu, ErfAndTanhFormsInEveryAssociation) {
  std::mt19937 rng(15);
  for (bool tanh_form : {false, true})
    for (int assoc = 0; assoc < 3; ++assoc) {
      const std::string what =
          std::string(tanh_form ? "tanh" : "erf") + " form, association " + std::to_string(assoc);
      GraphSpec g = gelu_graph(tanh_form, assoc);
      ModelSpec m17(g, 17), m20(g, 20);
      Optimized o17 = optimize_spec(m17, GO::kAll);
      EXPECT_EQ(o17.size(), 1u) << what;
      ASSERT_EQ(o17.count("ai.onyx.Gelu"), 1) << what;
      EXPECT_EQ(o17.find("ai.onyx.Gelu")->attr_s("approximate", ""), tanh_form ? "tanh" : "none");
      EXPECT_EQ(optimize_spec(m17, GO::kBasic).count("ai.onyx.Gelu"), 0) << what;
      Optimized o20 = optimize_spec(m20, GO::kBasic);
      EXPECT_EQ(o20.count("Gelu"), 1) << what;
      Feeds f = {{"x", random_tensor({3, 16}, rng, -4, 4)}};
      expect_equivalent(m17, f, what, 1e-5, 1e-6);
      expect_equivalent(m20, f, what + " (opset 20)", 1e-5, 1e-6);
    }
}

TEST(OptGelu, WrongConstantStays) {
  std::mt19937 rng(16);
  GraphSpec g = gelu_graph(false, 0, 0.6f);
  ModelSpec m(g, 17);
  EXPECT_EQ(optimize_spec(m, GO::kAll).count("ai.onyx.Gelu"), 0);
  expect_equivalent(m, {{"x", random_tensor({3, 16}, rng, -4, 4)}}, "not gelu");
}

}  // namespace
}  // namespace onyx::test
