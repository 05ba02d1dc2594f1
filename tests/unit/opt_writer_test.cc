// The ModelProto writer (src/format/model_writer.*) that `onyx optimize` saves with: a
// model written and read back (by the loader) holds the same graph, tensors, types and
// attributes, and runs to the same outputs; an optimized graph with ai.onyx nodes gets
// its opset import. And the digit reader (models/crnn-digits) optimized at kAll gives the
// outputs of the unoptimized model.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "format/model_writer.h"
#include "opt_testing.h"
#include "runtime/session_internal.h"

namespace onyx::test {
namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    return true;
  }
  return a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(OptWriter, RoundTripKeepsGraphTensorsTypesAndAttributes) {
  std::mt19937 rng(31);
  GraphSpec then_g, else_g;
  then_g.name = "then";
  then_g.outputs = {tensor_info("t_out", kFloat, {2})};
  then_g.nodes = {NodeSpec("Neg", {"w"}, {"t_out"})};  // captures the outer initializer w
  else_g.name = "else";
  else_g.outputs = {tensor_info("e_out", kFloat, {2})};
  else_g.nodes = {NodeSpec("Identity", {"w"}, {"e_out"})};
  GraphSpec g;
  g.name = "main";
  g.inputs = {tensor_info("x", kFloat, {"N", 2}), tensor_info("cond", kBool, {}),
              tensor_info("bias", kFloat, {2})};  // an input with a default
  g.outputs = {tensor_info("y", kFloat, {"N", 2}), tensor_info("s", kString, {2}),
               tensor_info("z", kFloat, {2})};
  g.value_info = {tensor_info("xb", kFloat, {"N", 2})};
  g.metadata = {{"k", "v"}};
  const std::vector<uint16_t> half_bits = {0x3c00, 0xc000};
  g.initializers = {TensorSpec::floats("w", {2}, {1.5f, -2.0f}),
                    TensorSpec::floats("bias", {2}, {0.25f, 0.5f}),
                    TensorSpec::raw_of("h", kFloat16, {2}, raw_bytes(half_bits)),
                    TensorSpec::raw_of("i4", kInt4, {3}, std::string("\x7f\x08", 2)),  // 7, -1, -8
                    TensorSpec::raw_of("bools", kBool, {3}, std::string("\x01\x00\x01", 3)),
                    TensorSpec::int64s("shape", {2}, {-1, 2})};
  TensorSpec strs;
  strs.name = "strs";
  strs.dims = {2};
  strs.data_type = kString;
  strs.string_data = {"ab", std::string("\xff\x00z", 3)};
  g.initializers.push_back(strs);
  g.nodes = {
      NodeSpec("Add", {"x", "bias"}, {"xb"}),
      NodeSpec("Reshape", {"xb", "shape"}, {"y"}, {}, "reshape_node"),
      NodeSpec("Identity", {"strs"}, {"s"}),
      NodeSpec("If", {"cond"}, {"z"},
               {AttrSpec::Graph("then_branch", then_g), AttrSpec::Graph("else_branch", else_g)}),
      NodeSpec("Constant", {}, {"unused"}, {AttrSpec::Floats("value_floats", {1.0f, 2.0f})}),
      NodeSpec("LeakyRelu", {"x"}, {"lr"}, {AttrSpec::Float("alpha", 0.3f)}),
      NodeSpec("Cast", {"lr"}, {"lr64"}, {AttrSpec::Int("to", kDouble)}),
      NodeSpec("CustomThing", {"x"}, {"c"},
               {AttrSpec::Strings("names", {"a", "b"}), AttrSpec::Ints("ks", {1, 2})}, "custom",
               "com.example")};
  ModelSpec m(g, 17);
  m.opsets.push_back({"com.example", 3});
  m.producer_name = "tests";
  auto model = load_spec(m);
  const std::string bytes = format::write_model(*model, *model->graph);
  auto back = format::load_model_from_bytes(bytes.data(), bytes.size());
  const ir::Graph& a = *model->graph;
  const ir::Graph& b = *back->graph;
  EXPECT_EQ(back->producer_name, "tests");
  EXPECT_EQ(back->opset_imports, model->opset_imports);
  EXPECT_EQ(b.name, "main");
  EXPECT_EQ(b.metadata, a.metadata);
  ASSERT_EQ(b.nodes.size(), a.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node& x = a.nodes[i];
    const ir::Node& y = b.nodes[i];
    EXPECT_EQ(y.op_type, x.op_type);
    EXPECT_EQ(y.domain, x.domain);
    EXPECT_EQ(y.name, x.name);
    EXPECT_EQ(y.inputs, x.inputs);
    EXPECT_EQ(y.outputs, x.outputs);
    EXPECT_EQ(y.opset, x.opset);
    ASSERT_EQ(y.attrs.size(), x.attrs.size()) << x.op_type;
    for (size_t k = 0; k < x.attrs.size(); ++k) {
      EXPECT_EQ(y.attrs[k].name, x.attrs[k].name);
      EXPECT_EQ(y.attrs[k].type, x.attrs[k].type);
      EXPECT_EQ(y.attrs[k].f, x.attrs[k].f);
      EXPECT_EQ(y.attrs[k].ints, x.attrs[k].ints);
      EXPECT_EQ(y.attrs[k].floats, x.attrs[k].floats);
      EXPECT_EQ(y.attrs[k].strings, x.attrs[k].strings);
      if (x.attrs[k].g) {
        ASSERT_TRUE(y.attrs[k].g);
        EXPECT_EQ(y.attrs[k].g->nodes.size(), x.attrs[k].g->nodes.size());
        EXPECT_EQ(y.attrs[k].g->outputs[0].type.str(), x.attrs[k].g->outputs[0].type.str());
      }
    }
  }
  ASSERT_EQ(b.initializers.size(), a.initializers.size());
  for (size_t i = 0; i < a.initializers.size(); ++i) {
    EXPECT_EQ(b.initializers[i].first, a.initializers[i].first);
    EXPECT_TRUE(same_tensor(a.initializers[i].second, b.initializers[i].second))
        << a.initializers[i].first;
  }
  using Infos = std::vector<ir::ValueInfo>;
  const std::pair<const Infos*, const Infos*> lists[] = {
      {&a.inputs, &b.inputs}, {&a.outputs, &b.outputs}, {&a.value_info, &b.value_info}};
  for (const auto& [want, got] : lists) {
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ((*got)[i].name, (*want)[i].name);
      EXPECT_EQ((*got)[i].type.str(), (*want)[i].type.str());
    }
  }
}

TEST(OptWriter, OptimizedGraphWithFusedOpsRunsAfterTheRoundTrip) {
  std::mt19937 rng(32);
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {"N", 3, 8, 8})};
  g.outputs = {tensor_info("y", kFloat, {"N", 3, 8, 8})};
  g.initializers = {random_init("w", {3, 3, 3, 3}, rng), random_init("b", {3}, rng)};
  g.nodes = {NodeSpec("Conv", {"x", "w", "b"}, {"c"}, {AttrSpec::Ints("pads", {1, 1, 1, 1})}),
             NodeSpec("Add", {"c", "x"}, {"s"}), NodeSpec("Relu", {"s"}, {"y"})};
  ModelSpec m(g, 17);
  auto model = load_spec(m);
  ir::Graph graph = *model->graph;
  opt::OptimizeOptions oo;
  oo.default_opset = 17;
  opt::optimize_graph(graph, oo);
  ASSERT_EQ(graph.nodes.size(), 1u);
  const std::string bytes = format::write_model(*model, graph);
  auto back = format::load_model_from_bytes(bytes.data(), bytes.size());
  ASSERT_EQ(back->opset_imports.count("ai.onyx"), 1u);
  EXPECT_EQ(back->graph->nodes[0].op_type, "FusedConv");
  EXPECT_EQ(back->graph->nodes[0].opset, 1);
  Feeds f = {{"x", random_tensor({2, 3, 8, 8}, rng)}};
  SessionOptions so;
  so.optimize = GraphOptimization::kNone;
  so.reference_kernels = true;
  std::vector<Value> want = run_spec(m, f, GraphOptimization::kNone, true);
  std::vector<Value> got = session_from_model(back, so)->run(f);
  EXPECT_TRUE(close(want[0], got[0], 1e-6, 1e-6));
}

TEST(OptModels, DigitReaderOptimizedGivesTheSameOutputs) {
  auto model = format::load_model(std::string(ONYX_SOURCE_DIR) +
                                  "/models/crnn-digits/crnn-digits-v1-opset17.onnx");
  ir::Graph graph = *model->graph;
  opt::OptimizeOptions oo;
  oo.default_opset = 17;
  opt::OptimizeReport r = opt::optimize_graph(graph, oo);
  EXPECT_LT(r.nodes_after, r.nodes_before);
  int fused = 0;
  for (const auto& n : graph.nodes) fused += n.op_type == "FusedConv";
  EXPECT_EQ(fused, 5) << "every Conv + Relu";
  std::mt19937 rng(33);
  std::vector<Value> outs[3];
  const GraphOptimization levels[3] = {GraphOptimization::kNone, GraphOptimization::kAll,
                                       GraphOptimization::kAll};
  const bool reference[3] = {true, true, false};
  for (int width : {48, 131}) {
    Feeds f = {{model->graph->inputs[0].name, random_tensor({2, 1, 32, width}, rng, 0, 1)}};
    for (int k = 0; k < 3; ++k) {
      SessionOptions so;
      so.optimize = levels[k];
      so.reference_kernels = reference[k];
      outs[k] = session_from_model(model, so)->run(f);
    }
    for (int k = 1; k < 3; ++k) {
      ASSERT_EQ(outs[k].size(), outs[0].size());
      for (size_t o = 0; o < outs[0].size(); ++o)
        EXPECT_TRUE(close(outs[0][o], outs[k][o], 1e-3, 1e-4))
            << "width " << width << " variant " << k;
    }
  }
}

}  // namespace
}  // namespace onyx::test
