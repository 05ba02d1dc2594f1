// check::check_model on small graphs built in memory: every problem is collected with the
// node it is in, and the provider table follows the kernel registry (incl. `wasm`).
#include <gtest/gtest.h>

#include <algorithm>

#include "check/schema.h"
#include "check/validate.h"
#include "kernels/registry.h"

namespace onyx {
namespace {

ir::Node node(std::string op, std::string name, std::vector<std::string> in, std::vector<std::string> out,
              int opset = 17) {
  ir::Node n;
  n.op_type = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.opset = opset;
  return n;
}

ir::ValueInfo value(std::string name, DType dt = DType::kFloat, ir::Shape s = {2, 3}) {
  return ir::ValueInfo{std::move(name), ir::TypeInfo::tensor(dt, std::move(s))};
}

ir::Model model(std::vector<ir::Node> nodes, std::vector<ir::ValueInfo> in, std::vector<ir::ValueInfo> out,
                int opset = 17) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports[""] = opset;
  m.graph = std::make_shared<ir::Graph>();
  m.graph->name = "g";
  m.graph->nodes = std::move(nodes);
  m.graph->inputs = std::move(in);
  m.graph->outputs = std::move(out);
  return m;
}

bool has_error(const check::Report& r, const std::string& fragment) {
  return std::any_of(r.problems.begin(), r.problems.end(), [&](const check::Problem& p) {
    return p.severity == check::Problem::Severity::kError && p.message.find(fragment) != std::string::npos;
  });
}

TEST(Check, ValidGraphHasNoProblemsAndEveryProviderRunsIt) {
  auto m = model({node("Relu", "r", {"x"}, {"y"})}, {value("x")}, {value("y")});
  check::Options o;
  o.providers = {"cpu", "wasm"};
  auto r = check::check_model(m, o);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_EQ(r.nodes, 1u);
  ASSERT_EQ(r.providers.size(), 2u);
  for (const auto& p : r.providers) EXPECT_TRUE(p.unsupported.empty()) << p.provider;
  EXPECT_EQ(r.types.at(m.graph.get()).at("y").str(), "float[2, 3]");
}

TEST(Check, CollectsEveryProblemWithItsNode) {
  ir::Node softmax = node("Softmax", "sm", {"x"}, {"s"});
  ir::Attribute axis;
  axis.name = "axis";
  axis.type = ir::Attribute::Type::kString;
  axis.s = "one";
  softmax.attrs.push_back(axis);
  auto m = model({node("Cast", "cast_no_to", {"x"}, {"c"}), node("Relu", "relu", {"missing"}, {"r"}), softmax},
                 {value("x")}, {value("c", DType::kInt64), value("r"), value("s")});
  auto r = check::check_model(m);
  EXPECT_EQ(r.errors(), 3u);
  EXPECT_TRUE(has_error(r, "Cast 'cast_no_to' (opset 17): required attribute 'to' (int) is missing"));
  EXPECT_TRUE(has_error(r, "Relu 'relu' (opset 17): input 0 'missing' is not defined"));
  EXPECT_TRUE(has_error(r, "Softmax 'sm' (opset 17): attribute 'axis' is of type string"));
}

TEST(Check, DeclaredTypesMustAgreeWithInference) {
  auto m = model({node("Relu", "r", {"x"}, {"y"})}, {value("x")}, {value("y", DType::kFloat, {2, 4})});
  auto r = check::check_model(m);
  EXPECT_TRUE(has_error(r, "output 0 'y' is declared float[2, 4] (graph output), but its inputs make it float[2, 3]"));
}

TEST(Check, WasmProviderLacksRegexFullMatch) {
  auto m = model({node("RegexFullMatch", "re", {"s"}, {"b"}, 20)}, {value("s", DType::kString, {2})},
                 {value("b", DType::kBool, {2})}, 20);
  m.graph->nodes[0].attrs.push_back([] {
    ir::Attribute a;
    a.name = "pattern";
    a.type = ir::Attribute::Type::kString;
    a.s = "a.*";
    return a;
  }());
  check::Options o;
  o.providers = {"cpu", "wasm"};
  auto r = check::check_model(m, o);
  EXPECT_EQ(r.errors(), 0u);
  EXPECT_TRUE(r.providers[0].unsupported.empty());
  ASSERT_EQ(r.providers[1].unsupported.size(), 1u);
  EXPECT_EQ(r.providers[1].unsupported[0].node, "re");
  EXPECT_NE(r.providers[1].unsupported[0].reason.find("WebAssembly"), std::string::npos);
}

TEST(Check, RegistryMarksNativeOnlyKernels) {
  const auto& defs = kernels::default_registry().all();
  auto re = std::find_if(defs.begin(), defs.end(), [](const auto& d) { return d.op == "RegexFullMatch"; });
  ASSERT_NE(re, defs.end());
  EXPECT_FALSE(re->wasm);
  EXPECT_FALSE(re->wasm_reason.empty());
  auto relu = std::find_if(defs.begin(), defs.end(), [](const auto& d) { return d.op == "Relu"; });
  ASSERT_NE(relu, defs.end());
  EXPECT_TRUE(relu->wasm);
}

TEST(Check, SchemaTable) {
  const check::OpSchema* conv = check::find_schema("", "Conv", 17);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->since, 11);
  EXPECT_EQ(conv->min_inputs, 2);
  EXPECT_EQ(conv->max_inputs, 3);
  ASSERT_NE(conv->attr("kernel_shape"), nullptr);
  EXPECT_EQ(conv->attr("kernel_shape")->type, ir::Attribute::Type::kInts);
  const check::OpSchema* cast = check::find_schema("", "Cast", 13);
  ASSERT_NE(cast, nullptr);
  EXPECT_TRUE(cast->attr("to")->required);
  EXPECT_EQ(check::find_schema("", "Trilu", 13), nullptr);
  EXPECT_EQ(check::schema_max_opset(""), 27);  // ONNX 1.22
  EXPECT_EQ(check::schema_max_opset("ai.onnx.ml"), 5);
  EXPECT_EQ(check::schema_max_opset("com.example"), 0);
  EXPECT_EQ(check::schema_source(), "ONNX 1.22.0 specification");
  // Values as ONNX 1.22's Changelog.md states them.
  const check::OpSchema* col2im = check::find_schema("", "Col2Im", 27);
  ASSERT_NE(col2im, nullptr);
  EXPECT_EQ(col2im->since, 18);
  EXPECT_EQ(col2im->min_inputs, 3);
  const check::OpSchema* dq = check::find_schema("", "DequantizeLinear", 21);
  ASSERT_NE(dq, nullptr);
  ASSERT_NE(dq->input_param(0), nullptr);
  EXPECT_TRUE(dq->input_param(0)->types->allows(ir::TypeInfo::tensor_unranked(DType::kInt4)));
  EXPECT_FALSE(dq->input_param(0)->types->allows(ir::TypeInfo::tensor_unranked(DType::kFloat)));
  const check::OpSchema* dq25 = check::find_schema("", "DequantizeLinear", 25);
  ASSERT_NE(dq25, nullptr);
  EXPECT_TRUE(dq25->input_param(0)->types->allows(ir::TypeInfo::tensor_unranked(DType::kInt2)));
  EXPECT_EQ(check::find_schema("", "Swish", 23), nullptr);
  EXPECT_TRUE(check::find_schema("", "GroupNormalization", 18)->deprecated);
}

}  // namespace
}  // namespace onyx
