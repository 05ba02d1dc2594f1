// format:: loader: valid models load with every attribute and tensor encoding; malformed
// or hostile files end in an onyx::Error that says what is wrong, never in a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "base/half.h"
#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

namespace fs = std::filesystem;
using format::load_model_from_bytes;

std::shared_ptr<ir::Model> load(const std::string& bytes) {
  return load_model_from_bytes(bytes.data(), bytes.size());
}

Tensor load_tensor(const TensorSpec& t) {
  std::string b = t.serialize();
  return format::read_tensor_proto(b.data(), b.size());
}

/// y = Relu(a + b), a: float[N, 3], b: float[3] (b also has an initializer default).
GraphSpec add_relu_graph() {
  GraphSpec g;
  g.name = "add_relu";
  g.inputs = {tensor_info("a", kFloat, {"N", 3}), tensor_info("b", kFloat, {3})};
  g.outputs = {tensor_info("y", kFloat, {"N", 3})};
  g.nodes = {NodeSpec("Add", {"a", "b"}, {"s"}, {}, "add0"), NodeSpec("Relu", {"s"}, {"y"}, {}, "relu0")};
  return g;
}

/// A model exercising most of the format: initializer, attributes, a subgraph, metadata.
std::string rich_model_bytes() {
  GraphSpec then_g;
  then_g.name = "then";
  then_g.outputs = {tensor_info("t_out", kFloat, {2})};
  then_g.nodes = {NodeSpec("Add", {"x", "w"}, {"t_out"})};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.outputs = {tensor_info("e_out", kFloat, {2})};
  else_g.nodes = {NodeSpec("Sub", {"x", "w"}, {"e_out"})};

  GraphSpec g;
  g.name = "rich";
  g.inputs = {tensor_info("x", kFloat, {2}), tensor_info("c", kBool, {})};
  g.outputs = {tensor_info("y", kFloat, {2}), tensor_info("z", kFloat, {2})};
  g.initializers = {TensorSpec::floats("w", {2}, {1.5f, -2.0f})};
  g.nodes = {NodeSpec("If", {"c"}, {"y"}, {AttrSpec::Graph("then_branch", then_g), AttrSpec::Graph("else_branch", else_g)}, "if0"),
             NodeSpec("LeakyRelu", {"y"}, {"z"}, {AttrSpec::Float("alpha", 0.25f)}, "lr")};
  g.metadata = {{"graph_key", "graph_value"}};
  ModelSpec m(g);
  m.metadata = {{"author", "tests"}, {"license", "MIT"}};
  m.doc_string = "a small model";
  return m.serialize();
}

// ---------------------------------------------------------------- valid models

TEST(Loader, LoadsModelFieldsAndGraph) {
  ModelSpec m(add_relu_graph());
  m.ir_version = 8;
  m.producer_name = "pytorch";
  m.producer_version = "1.13";
  m.domain = "org.example";
  m.model_version = 42;
  m.doc_string = "doc";
  m.opsets = {{"", 17}, {"com.microsoft", 1}};
  m.metadata = {{"k1", "v1"}, {"k2", ""}};
  m.graph->metadata = {{"gk", "gv"}};
  auto model = load(m.serialize());
  EXPECT_EQ(model->ir_version, 8);
  EXPECT_EQ(model->producer_name, "pytorch");
  EXPECT_EQ(model->producer_version, "1.13");
  EXPECT_EQ(model->domain, "org.example");
  EXPECT_EQ(model->model_version, 42);
  EXPECT_EQ(model->doc_string, "doc");
  ASSERT_EQ(model->opset_imports.size(), 2u);
  EXPECT_EQ(model->opset_imports.at(""), 17);
  EXPECT_EQ(model->opset_imports.at("com.microsoft"), 1);
  ASSERT_EQ(model->metadata.size(), 2u);
  EXPECT_EQ(model->metadata[0], (std::pair<std::string, std::string>{"k1", "v1"}));
  EXPECT_EQ(model->metadata[1], (std::pair<std::string, std::string>{"k2", ""}));

  const ir::Graph& g = *model->graph;
  EXPECT_EQ(g.name, "add_relu");
  ASSERT_EQ(g.metadata.size(), 1u);
  EXPECT_EQ(g.metadata[0].first, "gk");
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].name, "a");
  EXPECT_EQ(g.inputs[0].type.kind, ir::TypeInfo::Kind::kTensor);
  EXPECT_EQ(g.inputs[0].type.elem, DType::kFloat);
  ASSERT_TRUE(g.inputs[0].type.has_shape);
  ASSERT_EQ(g.inputs[0].type.shape.size(), 2u);
  EXPECT_FALSE(g.inputs[0].type.shape[0].known());
  EXPECT_EQ(g.inputs[0].type.shape[0].param, "N");
  EXPECT_EQ(g.inputs[0].type.shape[1].value, 3);
  EXPECT_EQ(g.inputs[0].type.str(), "float[N, 3]");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Add");
  EXPECT_EQ(g.nodes[0].name, "add0");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"s"}));
  EXPECT_EQ(g.nodes[0].opset, 17);
  EXPECT_EQ(g.nodes[1].op_type, "Relu");
  EXPECT_EQ(model->file_bytes, m.serialize().size());
}

TEST(Loader, LoadsFromFileAndKeepsWeightsAlive) {
  TempDir dir;
  GraphSpec g = add_relu_graph();
  g.initializers = {TensorSpec::floats("b", {3}, {1, 2, 3})};
  write_file(dir.file("m.onnx"), ModelSpec(g).serialize());
  std::shared_ptr<ir::Model> model = format::load_model(dir.file("m.onnx"));
  EXPECT_EQ(model->path, dir.file("m.onnx"));
  fs::remove(dir.file("m.onnx"));  // the mapping stays valid
  const Tensor* b = model->graph->initializer("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(values_of<float>(*b), (std::vector<float>{1, 2, 3}));
}

TEST(Loader, MissingFileIsAnIoError) {
  EXPECT_ONYX_ERROR(format::load_model("/nonexistent/dir/model.onnx"), ErrorCode::kIo,
                    "/nonexistent/dir/model.onnx", "cannot open");
}

TEST(Loader, OpsetImportsResolveNodeOpsets) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2})};
  g.outputs = {tensor_info("y", kFloat, {2})};
  GraphSpec body;
  body.outputs = {tensor_info("o", kFloat, {2})};
  body.nodes = {NodeSpec("Relu", {"x"}, {"o"})};
  g.nodes = {NodeSpec("Relu", {"x"}, {"a"}, {}, "n0", "ai.onnx"),  // "ai.onnx" is the default domain
             NodeSpec("Custom", {"a"}, {"b"}, {}, "n1", "com.acme"),
             NodeSpec("Other", {"b"}, {"c"}, {}, "n2", "not.imported"),
             NodeSpec("If", {"c"}, {"y"}, {AttrSpec::Graph("then_branch", body), AttrSpec::Graph("else_branch", body)}, "n3")};
  ModelSpec m(g);
  m.opsets = {{"ai.onnx", 13}, {"com.acme", 3}};
  auto model = load(m.serialize());
  EXPECT_EQ(model->opset_imports.count(""), 1u);
  EXPECT_EQ(model->opset_imports.at(""), 13);
  const auto& nodes = model->graph->nodes;
  EXPECT_EQ(nodes[0].domain, "");
  EXPECT_EQ(nodes[0].opset, 13);
  EXPECT_EQ(nodes[1].domain, "com.acme");
  EXPECT_EQ(nodes[1].opset, 3);
  EXPECT_EQ(nodes[2].opset, 0);  // reported when a session resolves the node
  const ir::Graph* then_g = nodes[3].attr_g("then_branch");
  ASSERT_NE(then_g, nullptr);
  EXPECT_EQ(then_g->nodes[0].opset, 13);
}

TEST(Loader, AllAttributeTypes) {
  GraphSpec sub;
  sub.name = "sub";
  sub.inputs = {tensor_info("si", kFloat, {1})};
  sub.outputs = {tensor_info("so", kFloat, {1})};
  sub.nodes = {NodeSpec("Relu", {"si"}, {"so"})};
  GraphSpec sub2 = sub;
  sub2.name = "sub2";

  SparseSpec sp;
  sp.values = TensorSpec::floats("spv", {2}, {5, 6});
  sp.indices = TensorSpec::int64s("spi", {2}, {1, 3});
  sp.dims = {4};

  std::vector<AttrSpec> attrs = {
      AttrSpec::Float("f", 2.5f),
      AttrSpec::Int("i", -7),
      AttrSpec::String("s", std::string("bytes\0here", 10)),
      AttrSpec::Tensor("t", TensorSpec::floats("tv", {2, 2}, {1, 2, 3, 4})),
      AttrSpec::Graph("g", sub),
      AttrSpec::Floats("fs", {0.5f, -1.0f}),
      AttrSpec::Ints("is", {1, -2, 3000000000LL}),
      AttrSpec::Strings("ss", {"a", "", "c"}),
      AttrSpec::Tensors("ts", {TensorSpec::floats("t0", {1}, {9}), TensorSpec::int64s("t1", {2}, {4, 5})}),
      AttrSpec::Graphs("gs", {sub, sub2}),
      AttrSpec::Sparse("sp", sp),
      AttrSpec::Sparses("sps", {sp, sp}),
      AttrSpec::Type("tp", TypeSpec::sequence(TypeSpec::tensor(kInt32, {"K"}))),
      AttrSpec::Types("tps", {TypeSpec::unranked(kFloat16), TypeSpec::optional(TypeSpec::tensor(kBool, {}))}),
  };
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1})};
  g.outputs = {tensor_info("y", kFloat, {1})};
  g.nodes = {NodeSpec("Everything", {"x"}, {"y"}, attrs, "all", "com.acme")};
  ModelSpec m(g);
  m.opsets.push_back({"com.acme", 1});
  auto model = load(m.serialize());
  const ir::Node& n = model->graph->nodes.at(0);
  using T = ir::Attribute::Type;

  ASSERT_NE(n.attr("f"), nullptr);
  EXPECT_EQ(n.attr("f")->type, T::kFloat);
  EXPECT_FLOAT_EQ(n.attr_f("f", 0), 2.5f);
  EXPECT_EQ(n.attr("i")->type, T::kInt);
  EXPECT_EQ(n.attr_i("i", 0), -7);
  EXPECT_EQ(n.attr("s")->type, T::kString);
  EXPECT_EQ(n.attr_s("s", ""), std::string("bytes\0here", 10));

  const Tensor* t = n.attr_t("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<float>(*t), (std::vector<float>{1, 2, 3, 4}));

  const ir::Graph* sg = n.attr_g("g");
  ASSERT_NE(sg, nullptr);
  EXPECT_EQ(sg->name, "sub");
  ASSERT_EQ(sg->nodes.size(), 1u);
  EXPECT_EQ(sg->nodes[0].op_type, "Relu");
  EXPECT_EQ(sg->nodes[0].opset, 17);
  EXPECT_EQ(sg->inputs.at(0).name, "si");

  EXPECT_EQ(n.attr_floats("fs"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(n.attr_ints("is"), (std::vector<int64_t>{1, -2, 3000000000LL}));
  EXPECT_EQ(n.attr_strings("ss"), (std::vector<std::string>{"a", "", "c"}));

  const ir::Attribute* ts = n.attr("ts");
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(ts->type, T::kTensors);
  ASSERT_EQ(ts->tensors.size(), 2u);
  EXPECT_EQ(ts->tensors[0].dtype(), DType::kFloat);
  EXPECT_EQ(ts->tensors[1].dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(ts->tensors[1]), (std::vector<int64_t>{4, 5}));

  const ir::Attribute* gs = n.attr("gs");
  ASSERT_NE(gs, nullptr);
  EXPECT_EQ(gs->type, T::kGraphs);
  ASSERT_EQ(gs->graphs.size(), 2u);
  EXPECT_EQ(gs->graphs[1]->name, "sub2");
  EXPECT_EQ(gs->graphs[1]->nodes[0].opset, 17);

  // Sparse tensors are densified and typed as tensors.
  const Tensor* spt = n.attr_t("sp");
  ASSERT_NE(spt, nullptr);
  EXPECT_EQ(spt->dims(), (Dims{4}));
  EXPECT_EQ(values_of<float>(*spt), (std::vector<float>{0, 5, 0, 6}));
  const ir::Attribute* sps = n.attr("sps");
  EXPECT_EQ(sps->type, T::kTensors);
  ASSERT_EQ(sps->tensors.size(), 2u);
  EXPECT_EQ(values_of<float>(sps->tensors[1]), (std::vector<float>{0, 5, 0, 6}));

  const ir::Attribute* tp = n.attr("tp");
  EXPECT_EQ(tp->type, T::kTypeProto);
  EXPECT_EQ(tp->tp.str(), "seq(int32[K])");
  const ir::Attribute* tps = n.attr("tps");
  EXPECT_EQ(tps->type, T::kTypeProtos);
  ASSERT_EQ(tps->type_protos.size(), 2u);
  EXPECT_EQ(tps->type_protos[0].str(), "float16[unknown rank]");
  EXPECT_EQ(tps->type_protos[1].str(), "optional(bool[])");

  // Reading an attribute as the wrong type is a clear error.
  EXPECT_ONYX_ERROR(n.attr_i("f", 0), ErrorCode::kInvalidModel, "attribute 'f' is float, expected int");
}

TEST(Loader, AttributeWithoutTypeFieldIsInferred) {
  // IR version 1 files may omit AttributeProto.type.
  AttrSpec i;
  i.name = "i";
  i.i = 4;
  AttrSpec fs;
  fs.name = "fs";
  fs.floats = {1, 2};
  AttrSpec s;
  s.name = "s";
  s.s = "x";
  AttrSpec g;
  g.name = "g";
  g.g = std::make_shared<GraphSpec>();
  GraphSpec gr;
  gr.inputs = {tensor_info("x", kFloat, {1})};
  gr.outputs = {tensor_info("y", kFloat, {1})};
  gr.nodes = {NodeSpec("Foo", {"x"}, {"y"}, {i, fs, s, g})};
  auto model = load(ModelSpec(gr).serialize());
  const ir::Node& n = model->graph->nodes[0];
  EXPECT_EQ(n.attr("i")->type, ir::Attribute::Type::kInt);
  EXPECT_EQ(n.attr("fs")->type, ir::Attribute::Type::kFloats);
  EXPECT_EQ(n.attr("s")->type, ir::Attribute::Type::kString);
  EXPECT_EQ(n.attr("g")->type, ir::Attribute::Type::kGraph);
}

TEST(Loader, DeclaredTypesOfAllKinds) {
  GraphSpec g;
  g.inputs = {ValueInfoSpec("seq", TypeSpec::sequence(TypeSpec::tensor(kFloat, {"N", 2}))),
              ValueInfoSpec("opt", TypeSpec::optional(TypeSpec::tensor(kInt64, {}))),
              ValueInfoSpec("map", TypeSpec::map(kString, TypeSpec::tensor(kFloat, {}))),
              ValueInfoSpec("unranked", TypeSpec::unranked(kUint8)),
              ValueInfoSpec("unknown_dim", TypeSpec::tensor(kFloat, {DimSpec::unknown(), 4})),
              ValueInfoSpec("untyped")};
  g.outputs = {ValueInfoSpec("seq")};
  auto model = load(ModelSpec(g).serialize());
  const auto& in = model->graph->inputs;
  ASSERT_EQ(in.size(), 6u);
  EXPECT_EQ(in[0].type.str(), "seq(float[N, 2])");
  EXPECT_EQ(in[1].type.str(), "optional(int64[])");
  EXPECT_EQ(in[2].type.kind, ir::TypeInfo::Kind::kMap);
  EXPECT_EQ(in[2].type.key, DType::kString);
  EXPECT_EQ(in[3].type.str(), "uint8[unknown rank]");
  EXPECT_EQ(in[4].type.str(), "float[?, 4]");
  EXPECT_EQ(in[5].type.kind, ir::TypeInfo::Kind::kUnknown);
}

// ------------------------------------------------------------- tensor encodings

struct RawCase {
  int32_t type;
  DType dtype;
  size_t elem_bytes;  // bytes per element in raw_data (0: sub-byte)
};

TEST(LoaderTensor, EveryFixedWidthDtypeViaRawData) {
  const RawCase cases[] = {
      {kFloat, DType::kFloat, 4},           {kUint8, DType::kUint8, 1},
      {kInt8, DType::kInt8, 1},             {kUint16, DType::kUint16, 2},
      {kInt16, DType::kInt16, 2},           {kInt32, DType::kInt32, 4},
      {kInt64, DType::kInt64, 8},           {kFloat16, DType::kFloat16, 2},
      {kDouble, DType::kDouble, 8},         {kUint32, DType::kUint32, 4},
      {kUint64, DType::kUint64, 8},         {kComplex64, DType::kComplex64, 8},
      {kComplex128, DType::kComplex128, 16}, {kBFloat16, DType::kBFloat16, 2},
      {kFloat8E4M3FN, DType::kFloat8E4M3FN, 1}, {kFloat8E4M3FNUZ, DType::kFloat8E4M3FNUZ, 1},
      {kFloat8E5M2, DType::kFloat8E5M2, 1}, {kFloat8E5M2FNUZ, DType::kFloat8E5M2FNUZ, 1},
      {kFloat8E8M0, DType::kFloat8E8M0, 1},
  };
  for (const RawCase& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)));
    std::string bytes;
    for (size_t i = 0; i < 5 * c.elem_bytes; ++i) bytes += static_cast<char>(i * 37 + 11);
    TensorSpec spec = TensorSpec::raw_of("t", c.type, {5}, bytes);
    Tensor t = load_tensor(spec);
    EXPECT_EQ(t.dtype(), c.dtype);
    EXPECT_EQ(t.dims(), (Dims{5}));
    ASSERT_EQ(t.nbytes(), bytes.size());
    EXPECT_EQ(std::memcmp(t.raw(), bytes.data(), bytes.size()), 0);

    // The same tensor as an initializer of a model (views the model bytes).
    GraphSpec g;
    g.initializers = {spec};
    g.outputs = {ValueInfoSpec("t")};
    auto model = load(ModelSpec(g).serialize());
    const Tensor* init = model->graph->initializer("t");
    ASSERT_NE(init, nullptr);
    ASSERT_EQ(init->nbytes(), bytes.size());
    EXPECT_EQ(std::memcmp(init->raw(), bytes.data(), bytes.size()), 0);
  }
}

TEST(LoaderTensor, BoolViaRawData) {
  Tensor t = load_tensor(TensorSpec::raw_of("b", kBool, {4}, std::string("\x01\x00\x00\x01", 4)));
  EXPECT_EQ(t.dtype(), DType::kBool);
  EXPECT_EQ(values_of<uint8_t>(t), (std::vector<uint8_t>{1, 0, 0, 1}));
}

// ONNX stores a bool in one byte and any nonzero byte is true; the loader hands kernels
// 0 and 1 only, whichever field or file holds the bytes.
TEST(LoaderTensor, BoolBytesOtherThanZeroAndOneAreTrue) {
  const std::string bytes("\x00\x01\x02\xff\x80\x00", 6);
  const std::vector<uint8_t> want = {0, 1, 1, 1, 1, 0};
  EXPECT_EQ(values_of<uint8_t>(load_tensor(TensorSpec::raw_of("b", kBool, {6}, bytes))), want);

  // As an initializer (raw_data inside the model bytes), and used by a kernel: Cast to
  // int32 must see true as 1.
  GraphSpec g;
  g.initializers = {TensorSpec::raw_of("b", kBool, {6}, bytes)};
  g.outputs = {tensor_info("y", kInt32, {6})};
  g.nodes = {NodeSpec("Cast", {"b"}, {"y"}, {AttrSpec::Int("to", kInt32)}, "cast")};
  auto model = load(ModelSpec(g).serialize());
  ASSERT_NE(model->graph->initializer("b"), nullptr);
  EXPECT_EQ(values_of<uint8_t>(*model->graph->initializer("b")), want);
  auto out = session_from_model(model)->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_of<int32_t>(out[0].tensor()), (std::vector<int32_t>{0, 1, 1, 1, 1, 0}));

  // In external data.
  TempDir dir;
  write_file(dir.file("b.bin"), bytes);
  TensorSpec ext;
  ext.name = "b";
  ext.dims = {6};
  ext.data_type = kBool;
  ext.data_location = 1;
  ext.external_data = {{"location", "b.bin"}};
  GraphSpec ge;
  ge.initializers = {ext};
  ge.outputs = {ValueInfoSpec("b")};
  write_file(dir.file("m.onnx"), ModelSpec(ge).serialize());
  auto em = format::load_model(dir.file("m.onnx"));
  ASSERT_NE(em->graph->initializer("b"), nullptr);
  EXPECT_EQ(values_of<uint8_t>(*em->graph->initializer("b")), want);

  // In int32_data: nonzero is true, including values whose low byte is 0.
  TensorSpec typed;
  typed.data_type = kBool;
  typed.dims = {6};
  typed.int32_data = {0, 1, 256, -1, 2, 0};
  EXPECT_EQ(values_of<uint8_t>(load_tensor(typed)), want);

  // And as the values of a sparse tensor.
  SparseSpec sp;
  sp.values = TensorSpec::raw_of("sb", kBool, {2}, std::string("\x07\x01", 2));
  sp.indices = TensorSpec::int64s("", {2}, {1, 2});
  sp.dims = {3};
  GraphSpec gs;
  gs.sparse_initializers = {sp};
  gs.outputs = {ValueInfoSpec("sb")};
  auto sm = load(ModelSpec(gs).serialize());
  ASSERT_NE(sm->graph->initializer("sb"), nullptr);
  EXPECT_EQ(values_of<uint8_t>(*sm->graph->initializer("sb")), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(LoaderTensor, Float16AndBFloat16ViaRawData) {
  std::vector<uint16_t> h = {Float16(1.5f).bits, Float16(-2.0f).bits, Float16(65504.0f).bits};
  Tensor t = load_tensor(TensorSpec::raw_of("h", kFloat16, {3}, raw_bytes(h)));
  ASSERT_EQ(t.dtype(), DType::kFloat16);
  EXPECT_EQ(Float16::to_float(t.data<uint16_t>()[0]), 1.5f);
  EXPECT_EQ(Float16::to_float(t.data<uint16_t>()[1]), -2.0f);
  EXPECT_EQ(Float16::to_float(t.data<uint16_t>()[2]), 65504.0f);

  std::vector<uint16_t> b = {BFloat16(1.5f).bits, BFloat16(-3.0f).bits};
  Tensor bt = load_tensor(TensorSpec::raw_of("b", kBFloat16, {2}, raw_bytes(b)));
  ASSERT_EQ(bt.dtype(), DType::kBFloat16);
  EXPECT_EQ(bt.data<uint16_t>()[0], 0x3FC0);
  EXPECT_EQ(bt.data<uint16_t>()[1], 0xC040);
}

TEST(LoaderTensor, SubByteTypesUnpackLowNibbleFirst) {
  // int4 values -8, -1, 0, 7, 3 pack as 0xF8, 0x70, 0x03 (low nibble = even element).
  std::string packed4("\xF8\x70\x03", 3);
  Tensor i4 = load_tensor(TensorSpec::raw_of("i4", kInt4, {5}, packed4));
  ASSERT_EQ(i4.dtype(), DType::kInt4);
  EXPECT_EQ(i4.nbytes(), 5u);  // unpacked in memory: one element per byte
  EXPECT_EQ(values_of<int8_t>(i4), (std::vector<int8_t>{-8, -1, 0, 7, 3}));

  Tensor u4 = load_tensor(TensorSpec::raw_of("u4", kUint4, {5}, packed4));
  EXPECT_EQ(values_of<uint8_t>(u4), (std::vector<uint8_t>{8, 15, 0, 7, 3}));

  Tensor f4 = load_tensor(TensorSpec::raw_of("f4", kFloat4E2M1, {5}, packed4));
  EXPECT_EQ(values_of<uint8_t>(f4), (std::vector<uint8_t>{8, 15, 0, 7, 3}));

  // 2-bit: four per byte, lowest bits first. -2, -1, 0, 1 | 1 -> 0b01001110, 0b01.
  std::string packed2("\x4E\x01", 2);
  Tensor i2 = load_tensor(TensorSpec::raw_of("i2", kInt2, {5}, packed2));
  EXPECT_EQ(values_of<int8_t>(i2), (std::vector<int8_t>{-2, -1, 0, 1, 1}));
  Tensor u2 = load_tensor(TensorSpec::raw_of("u2", kUint2, {5}, packed2));
  EXPECT_EQ(values_of<uint8_t>(u2), (std::vector<uint8_t>{2, 3, 0, 1, 1}));

  // Odd counts need the rounded-up byte count, no more and no less.
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("i4", kInt4, {5}, std::string("\xF8\x70", 2))),
                    ErrorCode::kInvalidModel, "holds 2 bytes", "need 3");
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("i4", kInt4, {5}, std::string("\xF8\x70\x03\x00", 4))),
                    ErrorCode::kInvalidModel, "holds 4 bytes", "need 3");

  // int4 in int32_data: one packed byte per entry.
  TensorSpec typed;
  typed.data_type = kInt4;
  typed.dims = {5};
  typed.int32_data = {0xF8, 0x70, 0x03};
  EXPECT_EQ(values_of<int8_t>(load_tensor(typed)), (std::vector<int8_t>{-8, -1, 0, 7, 3}));
  typed.int32_data = {0xF8, 0x70};
  EXPECT_ONYX_ERROR(load_tensor(typed), ErrorCode::kInvalidModel, "int32_data has 2 values");
}

TEST(LoaderTensor, TypedFields) {
  for (bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "packed" : "unpacked");
    TensorSpec t;
    t.packed = packed;
    t.dims = {3};

    t.data_type = kFloat;
    t.float_data = {1.5f, -2.0f, 3.25f};
    EXPECT_EQ(values_of<float>(load_tensor(t)), (std::vector<float>{1.5f, -2.0f, 3.25f}));
    t.float_data.clear();

    t.data_type = kDouble;
    t.double_data = {1e300, -0.5, 2};
    EXPECT_EQ(values_of<double>(load_tensor(t)), (std::vector<double>{1e300, -0.5, 2}));
    t.double_data.clear();

    t.data_type = kInt32;
    t.int32_data = {-2147483647 - 1, 0, 2147483647};
    EXPECT_EQ(values_of<int32_t>(load_tensor(t)), (std::vector<int32_t>{-2147483647 - 1, 0, 2147483647}));

    t.data_type = kInt8;
    t.int32_data = {-128, 127, -1};
    EXPECT_EQ(values_of<int8_t>(load_tensor(t)), (std::vector<int8_t>{-128, 127, -1}));

    t.data_type = kUint8;
    t.int32_data = {0, 255, 7};
    EXPECT_EQ(values_of<uint8_t>(load_tensor(t)), (std::vector<uint8_t>{0, 255, 7}));

    t.data_type = kInt16;
    t.int32_data = {-32768, 32767, -1};
    EXPECT_EQ(values_of<int16_t>(load_tensor(t)), (std::vector<int16_t>{-32768, 32767, -1}));

    t.data_type = kUint16;
    t.int32_data = {0, 65535, 1};
    EXPECT_EQ(values_of<uint16_t>(load_tensor(t)), (std::vector<uint16_t>{0, 65535, 1}));

    t.data_type = kBool;
    t.int32_data = {0, 1, 5};
    EXPECT_EQ(values_of<uint8_t>(load_tensor(t)), (std::vector<uint8_t>{0, 1, 1}));

    // float16 and bfloat16 hold their bit patterns in int32_data.
    t.data_type = kFloat16;
    t.int32_data = {Float16(1.5f).bits, Float16(-2.0f).bits, Float16(0.0f).bits};
    Tensor h = load_tensor(t);
    ASSERT_EQ(h.dtype(), DType::kFloat16);
    EXPECT_EQ(Float16::to_float(h.data<uint16_t>()[0]), 1.5f);
    EXPECT_EQ(Float16::to_float(h.data<uint16_t>()[1]), -2.0f);
    t.data_type = kBFloat16;
    t.int32_data = {0x3FC0, 0xC040, 0};
    Tensor b = load_tensor(t);
    ASSERT_EQ(b.dtype(), DType::kBFloat16);
    EXPECT_EQ(values_of<uint16_t>(b), (std::vector<uint16_t>{0x3FC0, 0xC040, 0}));

    // float8 types: one byte per int32 entry, kept bit for bit.
    for (int32_t f8 : {kFloat8E4M3FN, kFloat8E4M3FNUZ, kFloat8E5M2, kFloat8E5M2FNUZ, kFloat8E8M0}) {
      t.data_type = f8;
      t.int32_data = {0x38, 0x7F, 0x80};
      Tensor f = load_tensor(t);
      EXPECT_EQ(static_cast<int32_t>(f.dtype()), f8);
      EXPECT_EQ(values_of<uint8_t>(f), (std::vector<uint8_t>{0x38, 0x7F, 0x80}));
    }
    t.int32_data.clear();

    t.data_type = kInt64;
    t.int64_data = {std::numeric_limits<int64_t>::min(), -1, std::numeric_limits<int64_t>::max()};
    EXPECT_EQ(values_of<int64_t>(load_tensor(t)), t.int64_data);
    t.int64_data.clear();

    t.data_type = kUint64;
    t.uint64_data = {0, 1, std::numeric_limits<uint64_t>::max()};
    EXPECT_EQ(values_of<uint64_t>(load_tensor(t)), t.uint64_data);
    t.data_type = kUint32;
    t.uint64_data = {0, 1, 4294967295u};
    EXPECT_EQ(values_of<uint32_t>(load_tensor(t)), (std::vector<uint32_t>{0, 1, 4294967295u}));
    t.uint64_data.clear();

    t.dims = {2};
    t.data_type = kComplex64;
    t.float_data = {1, 2, 3, 4};  // (1+2i), (3+4i)
    Tensor c64 = load_tensor(t);
    EXPECT_EQ(c64.dtype(), DType::kComplex64);
    EXPECT_EQ(c64.nbytes(), 16u);
    EXPECT_EQ(std::vector<float>(c64.data<float>(), c64.data<float>() + 4), (std::vector<float>{1, 2, 3, 4}));
    t.float_data.clear();
    t.data_type = kComplex128;
    t.double_data = {1, 2, 3, 4};
    Tensor c = load_tensor(t);
    EXPECT_EQ(c.dtype(), DType::kComplex128);
    EXPECT_EQ(c.nbytes(), 32u);
    EXPECT_EQ(c.data<double>()[3], 4.0);
  }
}

TEST(LoaderTensor, StringsScalarsAndEmptyTensors) {
  TensorSpec s;
  s.data_type = kString;
  s.dims = {3};
  s.string_data = {"hello", "", std::string("a\0b", 3)};
  Tensor st = load_tensor(s);
  ASSERT_EQ(st.dtype(), DType::kString);
  EXPECT_EQ(values_of<std::string>(st), s.string_data);

  s.string_data.pop_back();
  EXPECT_ONYX_ERROR(load_tensor(s), ErrorCode::kInvalidModel, "has 2 strings", "need 3");
  s.raw = "abc";
  EXPECT_ONYX_ERROR(load_tensor(s), ErrorCode::kInvalidModel, "string tensors cannot use raw_data");

  TensorSpec scalar;
  scalar.data_type = kFloat;
  scalar.float_data = {3.5f};
  Tensor sc = load_tensor(scalar);
  EXPECT_EQ(sc.rank(), 0u);
  EXPECT_EQ(sc.numel(), 1);
  EXPECT_EQ(sc.data<float>()[0], 3.5f);

  for (int32_t type : {kFloat, kInt64, kUint8, kDouble, kString, kInt4}) {
    TensorSpec empty;
    empty.data_type = type;
    empty.dims = {0, 4};
    Tensor e = load_tensor(empty);
    EXPECT_EQ(e.numel(), 0);
    EXPECT_EQ(e.dims(), (Dims{0, 4}));
    empty.raw = "";
    if (type != kString) {
      EXPECT_EQ(load_tensor(empty).numel(), 0);
    }
  }
}

TEST(LoaderTensor, EmptyPackedFields) {
  // Zero-length packed fields are valid protobuf and add no values.
  TensorSpec t;
  t.dims = {0};
  for (uint32_t field : {1u, 4u, 5u, 7u, 10u, 11u}) t.extra += pb_bytes(field, "");
  for (int32_t type : {kFloat, kDouble, kInt32, kInt64, kUint64}) {
    t.data_type = type;
    Tensor e = load_tensor(t);
    EXPECT_EQ(e.dims(), (Dims{0}));
  }
  t.dims = {2};
  t.data_type = kFloat;
  t.extra += pb_bytes(4, raw_bytes(std::vector<float>{1, 2})) + pb_bytes(4, "");
  EXPECT_EQ(values_of<float>(load_tensor(t)), (std::vector<float>{1, 2}));
}

TEST(LoaderTensor, TypedFieldCountMismatch) {
  TensorSpec t;
  t.name = "w";
  t.dims = {2, 2};
  t.float_data = {1, 2, 3};
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "tensor 'w'",
                    "float_data has 3 values", "[2, 2]", "need 4");
  t.float_data.clear();
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "float_data has 0 values");
  t.data_type = kInt64;
  t.int64_data = {1};
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "int64_data has 1 values");
}

TEST(LoaderTensor, HugeDimsWithoutDataFailBeforeAllocating) {
  // A few bytes must not make the loader allocate terabytes: the data is checked first.
  TensorSpec t;
  t.name = "big";
  t.dims = {int64_t{1} << 20, int64_t{1} << 20};  // 4 TiB of floats
  t.float_data = {1};
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "tensor 'big'", "float_data has 1 values");
  t.float_data.clear();
  t.data_type = kInt4;
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "int32_data has 0 values");
  t.data_type = kString;
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "has 0 strings");
}

TEST(LoaderTensor, RawDataSizeMismatch) {
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("w", kFloat, {2, 2}, std::string(12, '\0'))),
                    ErrorCode::kInvalidModel, "tensor 'w'", "holds 12 bytes", "[2, 2]", "float", "need 16");
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("w", kInt64, {3}, std::string(25, '\0'))),
                    ErrorCode::kInvalidModel, "holds 25 bytes", "need 24");
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("w", kFloat, {1}, "")),
                    ErrorCode::kInvalidModel, "holds 0 bytes", "need 4");
}

TEST(LoaderTensor, ByteCountOverflowIsRefused) {
  // 2^62 floats fit in int64 elements but not in a 64-bit byte count; an empty raw_data
  // must not pass the size check by wrap-around.
  for (int32_t type : {kFloat, kDouble, kInt4, kComplex128}) {
    SCOPED_TRACE(type);
    EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("w", type, {int64_t{1} << 62}, "")),
                      ErrorCode::kInvalidModel, "tensor 'w'");
    EXPECT_ONYX_ERROR(load_tensor(TensorSpec::raw_of("w", type, {int64_t{1} << 61, 2}, "")),
                      ErrorCode::kInvalidModel, "tensor 'w'");
  }
}

TEST(LoaderTensor, NegativeAndOverflowingDims) {
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::floats("w", {-1, 3}, {})), ErrorCode::kInvalidModel,
                    "tensor 'w'", "negative dimension -1", "[-1, 3]");
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::floats("w", {int64_t{1} << 32, int64_t{1} << 32}, {})),
                    ErrorCode::kInvalidModel, "tensor 'w'", "overflow");
  EXPECT_ONYX_ERROR(load_tensor(TensorSpec::floats("w", {std::numeric_limits<int64_t>::max(), 2}, {})),
                    ErrorCode::kInvalidModel, "overflow");
  // dims are varints: a 10-byte varint may decode to a negative int64.
  TensorSpec t;
  t.dims = {std::numeric_limits<int64_t>::min()};
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "negative dimension");

  GraphSpec g;
  g.initializers = {TensorSpec::floats("w", {3, -2}, {})};
  g.outputs = {ValueInfoSpec("w")};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "model:", "tensor 'w'",
                    "negative dimension -2");
}

TEST(LoaderTensor, UnknownDataType) {
  TensorSpec t = TensorSpec::raw_of("w", 99, {1}, "x");
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "tensor 'w'", "unknown data_type 99");
  t.data_type = 0;
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "unknown data_type 0");
  t.data_type = -3;
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "unknown data_type -3");
}

// ----------------------------------------------------------------- sparse

TEST(LoaderSparse, SparseInitializerLinearAndCooIndices) {
  SparseSpec lin;
  lin.values = TensorSpec::floats("sp", {3}, {1, 2, 3});
  lin.indices = TensorSpec::int64s("", {3}, {0, 4, 5});
  lin.dims = {2, 3};
  SparseSpec coo = lin;
  coo.values.name = "sp2";
  coo.indices = TensorSpec::int64s("", {3, 2}, {0, 0, 1, 1, 1, 2});
  GraphSpec g;
  g.sparse_initializers = {lin, coo};
  g.outputs = {ValueInfoSpec("sp")};
  auto model = load(ModelSpec(g).serialize());
  for (const char* name : {"sp", "sp2"}) {
    SCOPED_TRACE(name);
    const Tensor* t = model->graph->initializer(name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dims(), (Dims{2, 3}));
    EXPECT_EQ(values_of<float>(*t), (std::vector<float>{1, 0, 0, 0, 2, 3}));
  }
}

TEST(LoaderSparse, BadSparseTensorsAreRefused) {
  auto load_sparse = [](const SparseSpec& s) {
    GraphSpec g;
    g.sparse_initializers = {s};
    g.outputs = {ValueInfoSpec("sp")};
    return load(ModelSpec(g).serialize());
  };
  SparseSpec s;
  s.values = TensorSpec::floats("sp", {2}, {1, 2});
  s.dims = {4};
  s.indices = TensorSpec::int64s("", {2}, {1, 4});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "sparse tensor 'sp'", "index 4 out of range");
  s.indices = TensorSpec::int64s("", {2}, {-1, 0});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "out of range");
  s.indices = TensorSpec::int64s("", {3}, {0, 1, 2});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "indices shape [3]");
  s.indices = TensorSpec::floats("", {2}, {0, 1});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "indices must be int64");
  s.dims = {2, 2};
  s.indices = TensorSpec::int64s("", {2, 2}, {0, 0, 2, 0});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "index 2 out of range");
  s.dims = {-4};
  s.indices = TensorSpec::int64s("", {2}, {0, 1});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "negative dimension");

  // Values must be [NNZ]; the dense shape needs a rank; values need indices.
  s.dims = {4};
  s.indices = TensorSpec::int64s("", {2}, {0, 1});
  s.values = TensorSpec::floats("sp", {1, 2}, {1, 2});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "sparse tensor 'sp'", "values must be 1-D",
                    "[1, 2]");
  s.values = TensorSpec::floats("sp", {2}, {1, 2});
  s.dims = {};
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "sparse tensor 'sp'", "has no dims");
  s.dims = {4};
  s.indices.reset();
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "sparse tensor 'sp'", "2 values but no indices");
  // Indices of rank 3.
  s.indices = TensorSpec::int64s("", {2, 1, 1}, {0, 1});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "indices shape [2, 1, 1]",
                    "expected [2] (linear indices) or [2, 1]");

  std::string no_values;
  protozero::pbf_writer w(no_values);
  const std::vector<int64_t> dims = {4};
  w.add_packed_int64(3, dims.begin(), dims.end());
  GraphSpec g;
  g.extra = pb_bytes(15, no_values);
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "has no values");
}

// ----------------------------------------------------------------- functions

FunctionSpec add_relu_function() {
  FunctionSpec f;
  f.name = "AddRelu";
  f.domain = "local.fn";
  f.inputs = {"X", "Y"};
  f.outputs = {"Z"};
  f.nodes = {NodeSpec("Add", {"X", "Y"}, {"S"}), NodeSpec("Relu", {"S"}, {"Z"})};
  f.opsets = {{"", 14}};
  return f;
}

TEST(Loader, ModelLocalFunctionLoadsAndRuns) {
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {3}), tensor_info("b", kFloat, {3})};
  g.outputs = {tensor_info("y", kFloat, {3})};
  g.nodes = {NodeSpec("AddRelu", {"a", "b"}, {"y"}, {}, "call", "local.fn")};
  ModelSpec m(g);
  m.opsets.push_back({"local.fn", 1});
  m.functions = {add_relu_function()};
  auto model = load(m.serialize());
  ASSERT_EQ(model->functions.size(), 1u);
  const ir::Function& f = model->functions[0];
  EXPECT_EQ(f.name, "AddRelu");
  EXPECT_EQ(f.domain, "local.fn");
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"X", "Y"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"Z"}));
  ASSERT_EQ(f.nodes.size(), 2u);
  EXPECT_EQ(f.nodes[0].opset, 14);  // the function's own opset import
  EXPECT_EQ(f.opset_imports.at(""), 14);
  EXPECT_EQ(model->graph->nodes[0].opset, 1);

  auto session = session_from_model(model);
  auto out = session->run({{"a", make_float({3}, {1, -5, 2})}, {"b", make_float({3}, {1, 1, -3})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{2, 0, 0}));
}

TEST(Loader, FunctionAttributeReferencesAndDefaults) {
  FunctionSpec f;
  f.name = "Leaky";
  f.domain = "local.fn";
  f.inputs = {"X"};
  f.outputs = {"Z"};
  f.attributes = {};
  f.attribute_defaults = {AttrSpec::Float("alpha", 0.5f)};
  f.nodes = {NodeSpec("LeakyRelu", {"X"}, {"Z"}, {AttrSpec::Ref("alpha", AttrSpec::kFloat, "alpha")})};
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2})};
  g.outputs = {tensor_info("y1", kFloat, {2}), tensor_info("y2", kFloat, {2})};
  g.nodes = {NodeSpec("Leaky", {"x"}, {"y1"}, {AttrSpec::Float("alpha", 0.1f)}, "with_attr", "local.fn"),
             NodeSpec("Leaky", {"x"}, {"y2"}, {}, "with_default", "local.fn")};
  ModelSpec m(g);
  m.opsets.push_back({"local.fn", 1});
  m.functions = {f};
  auto model = load(m.serialize());
  ASSERT_EQ(model->functions[0].attribute_defaults.size(), 1u);
  EXPECT_EQ(model->functions[0].nodes[0].attrs[0].ref_attr_name, "alpha");
  auto session = session_from_model(model);
  auto out = session->run({{"x", make_float({2}, {-10, 4})}});
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{-1, 4}));
  EXPECT_EQ(values_of<float>(out[1].tensor()), (std::vector<float>{-5, 4}));
}

TEST(LoaderSparse, IndicesMustBeAscendingWithoutDuplicates) {
  auto load_sparse = [](const SparseSpec& s) {
    GraphSpec g;
    g.sparse_initializers = {s};
    g.outputs = {ValueInfoSpec("sp")};
    return load(ModelSpec(g).serialize());
  };
  SparseSpec s;
  s.values = TensorSpec::floats("sp", {2}, {1, 2});
  s.dims = {2, 3};
  s.indices = TensorSpec::int64s("", {2}, {4, 1});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "sparse tensor 'sp'", "value 1: index 1",
                    "comes before index 4", "ascending order without duplicates");
  s.indices = TensorSpec::int64s("", {2}, {3, 3});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "value 1: index 3 repeats index 3");
  // Coordinates in lexicographic order: (1, 0) then (0, 2) is out of order.
  s.indices = TensorSpec::int64s("", {2, 2}, {1, 0, 0, 2});
  EXPECT_ONYX_ERROR(load_sparse(s), ErrorCode::kInvalidModel, "value 1: index 2 comes before index 3");
  // (0, 2) then (1, 0) is in order and lands at linear positions 2 and 3.
  s.indices = TensorSpec::int64s("", {2, 2}, {0, 2, 1, 0});
  auto model = load_sparse(s);
  EXPECT_EQ(values_of<float>(*model->graph->initializer("sp")), (std::vector<float>{0, 0, 1, 2, 0, 0}));
  // No values at all: an all-zero tensor, with or without (empty) indices.
  s.values = TensorSpec::floats("sp", {0}, {});
  s.indices.reset();
  model = load_sparse(s);
  EXPECT_EQ(values_of<float>(*model->graph->initializer("sp")), (std::vector<float>(6, 0.0f)));
}

// A sparse tensor's dense size is not bounded by the file: a few bytes can ask for any
// allocation. Beyond 4 GiB (all sparse tensors of a model together) it is refused, with
// the sizes, before anything is allocated.
TEST(LoaderSparse, HugeDenseShapeIsRefusedBeforeAllocating) {
  SparseSpec s;
  s.values = TensorSpec::floats("big", {1}, {7});
  s.indices = TensorSpec::int64s("", {1}, {5});
  s.dims = {1000000000, 1000000000};
  GraphSpec g;
  g.sparse_initializers = {s};
  g.outputs = {ValueInfoSpec("big")};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "sparse tensor 'big'",
                    "[1000000000, 1000000000]", "1000000000000000000 elements", "1 stored value",
                    "at most 4 GiB");

  // One float past 4 GiB.
  g.sparse_initializers[0].dims = {(int64_t{1} << 30) + 1};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "sparse tensor 'big'",
                    "[1073741825]", "1073741825 elements", "at most 4 GiB");

  // Dims whose product overflows 64 bits.
  g.sparse_initializers[0].dims = {int64_t{1} << 62, 8};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "sparse tensor 'big'",
                    "overflow");

  // The same through Constant's sparse_value attribute.
  SparseSpec c = s;
  c.values.name = "cv";
  GraphSpec gc;
  gc.outputs = {ValueInfoSpec("y")};
  gc.nodes = {NodeSpec("Constant", {}, {"y"}, {AttrSpec::Sparse("sparse_value", c)}, "const")};
  EXPECT_ONYX_ERROR(load(ModelSpec(gc).serialize()), ErrorCode::kInvalidModel, "sparse tensor 'cv'",
                    "at most 4 GiB");
}

// ------------------------------------------------------- malformed protobuf

TEST(LoaderMalformed, EveryTruncationLoadsOrThrowsOnyxError) {
  const std::string bytes = rich_model_bytes();
  ASSERT_NO_THROW(load(bytes));
  size_t errors = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    Caught c = catch_error([&] { load_model_from_bytes(bytes.data(), n); });
    ASSERT_NE(c.kind, Caught::Kind::kOther) << "prefix " << n << ": " << c.message;
    if (c.is_error()) {
      ++errors;
      EXPECT_EQ(c.code, ErrorCode::kInvalidModel) << "prefix " << n << ": " << c.message;
      EXPECT_TRUE(contains(c.message, "model:")) << c.message;
    }
  }
  // Most prefixes cut a message in half.
  EXPECT_GT(errors, bytes.size() / 2);
  EXPECT_ONYX_ERROR(load_model_from_bytes(bytes.data(), 0), ErrorCode::kInvalidModel,
                    "holds no graph");
  EXPECT_ONYX_ERROR(load_model_from_bytes(bytes.data(), bytes.size() - 1), ErrorCode::kInvalidModel,
                    "malformed protobuf", "truncated");
}

TEST(LoaderMalformed, TruncatedFileOnDisk) {
  TempDir dir;
  const std::string bytes = rich_model_bytes();
  write_file(dir.file("cut.onnx"), bytes.substr(0, bytes.size() - 3));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("cut.onnx")), ErrorCode::kInvalidModel,
                    dir.file("cut.onnx"), "truncated");
  write_file(dir.file("empty.onnx"), "");
  EXPECT_ONYX_ERROR(format::load_model(dir.file("empty.onnx")), ErrorCode::kInvalidModel,
                    "empty.onnx", "holds no graph");
}

TEST(LoaderMalformed, SingleByteCorruptionsNeverCrash) {
  const std::string bytes = rich_model_bytes();
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (unsigned char v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string b = bytes;
      b[pos] = static_cast<char>(v);
      Caught c = catch_error([&] { load(b); });
      ASSERT_NE(c.kind, Caught::Kind::kOther) << "byte " << pos << " = " << int(v) << ": " << c.message;
    }
  }
}

TEST(LoaderMalformed, WrongWireTypes) {
  GraphSpec g = add_relu_graph();
  std::string good = ModelSpec(g).serialize();

  // ModelProto.ir_version (varint) as a length-delimited field.
  EXPECT_ONYX_ERROR(load(pb_bytes(1, "abc") + good), ErrorCode::kInvalidModel,
                    "malformed ModelProto", "field 1 has wire type 2", "expected varint");
  // ModelProto.graph (message) as a varint.
  EXPECT_ONYX_ERROR(load(good + pb_key(7, 0) + pb_varint(5)), ErrorCode::kInvalidModel,
                    "malformed ModelProto", "field 7", "expected length-delimited");
  // GraphProto.node as a fixed32.
  GraphSpec g2 = g;
  g2.extra = pb_key(1, 5) + std::string(4, '\0');
  EXPECT_ONYX_ERROR(load(ModelSpec(g2).serialize()), ErrorCode::kInvalidModel, "malformed GraphProto",
                    "field 1 has wire type 5");
  // NodeProto.op_type as a varint.
  GraphSpec g3 = g;
  g3.nodes[0].extra = pb_key(4, 0) + pb_varint(1);
  EXPECT_ONYX_ERROR(load(ModelSpec(g3).serialize()), ErrorCode::kInvalidModel, "malformed NodeProto",
                    "field 4");
  // AttributeProto.f (fixed32) as a varint.
  GraphSpec g4 = g;
  AttrSpec a;
  a.name = "alpha";
  a.type = AttrSpec::kFloat;
  g4.nodes[1].attrs = {a};
  g4.nodes[1].extra = pb_bytes(5, [] {
    std::string s;
    protozero::pbf_writer w(s);
    w.add_string(1, "beta");
    w.add_int64(2, 3);  // f as varint
    return s;
  }());
  EXPECT_ONYX_ERROR(load(ModelSpec(g4).serialize()), ErrorCode::kInvalidModel, "malformed AttributeProto",
                    "field 2", "expected fixed32");
  // TensorProto.data_type as fixed64.
  TensorSpec t = TensorSpec::floats("w", {1}, {1});
  t.extra = pb_key(2, 1) + std::string(8, '\0');
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "malformed TensorProto", "field 2",
                    "expected varint");
  // Packed floats whose byte count is not a multiple of 4.
  TensorSpec t2;
  t2.dims = {1};
  t2.extra = pb_bytes(4, std::string(5, '\0'));
  EXPECT_ONYX_ERROR(load_tensor(t2), ErrorCode::kInvalidModel, "packed field 4 has 5 bytes");
  // Unknown or obsolete wire types (3/4: groups, 6/7: undefined).
  for (int wt : {3, 4, 6, 7}) {
    SCOPED_TRACE(wt);
    EXPECT_ONYX_ERROR(load(good + pb_key(30, wt) + "\x01"), ErrorCode::kInvalidModel, "malformed protobuf");
  }
  // Field number 0 is invalid.
  EXPECT_ONYX_ERROR(load(std::string("\x00\x01", 2) + good), ErrorCode::kInvalidModel, "malformed protobuf");
}

TEST(LoaderMalformed, LengthsPastTheEnd) {
  std::string good = ModelSpec(add_relu_graph()).serialize();
  // A top-level field claiming more bytes than the file holds.
  EXPECT_ONYX_ERROR(load(good + pb_bytes(7, "xx", 1000)), ErrorCode::kInvalidModel,
                    "model:", "malformed protobuf", "truncated");
  // A field inside a message claiming more than its enclosing message.
  GraphSpec g = add_relu_graph();
  g.extra = pb_bytes(2, "name", 50);
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "malformed protobuf");
  // Lengths past 32 bits must not wrap pointer arithmetic nor be cut to their low bits
  // (2^63 would read as an empty graph, 2^32 + 2 as a 2-byte one).
  EXPECT_ONYX_ERROR(load(good + pb_bytes(7, "", std::numeric_limits<uint64_t>::max())),
                    ErrorCode::kInvalidModel, "malformed ModelProto", "field 7",
                    "claims a length of 18446744073709551615 bytes");
  EXPECT_ONYX_ERROR(load(good + pb_bytes(7, "", uint64_t{1} << 63)), ErrorCode::kInvalidModel,
                    "claims a length of 9223372036854775808");
  EXPECT_ONYX_ERROR(load(good + pb_bytes(7, "\x12\x00", (uint64_t{1} << 32) + 2)), ErrorCode::kInvalidModel,
                    "claims a length of 4294967298");
  // ... also in a field the loader skips, and in packed fields.
  EXPECT_ONYX_ERROR(load(good + pb_bytes(30, "", uint64_t{1} << 40)), ErrorCode::kInvalidModel,
                    "field 30 claims a length");
  TensorSpec packed;
  packed.extra = pb_bytes(1, "", uint64_t{1} << 36);
  EXPECT_ONYX_ERROR(load_tensor(packed), ErrorCode::kInvalidModel, "claims a length");
  packed.extra = pb_bytes(4, "", uint64_t{1} << 36);
  EXPECT_ONYX_ERROR(load_tensor(packed), ErrorCode::kInvalidModel, "claims a length");
  // A varint running past the end, and one longer than 10 bytes.
  EXPECT_ONYX_ERROR(load(good + pb_key(1, 0) + "\x80\x80"), ErrorCode::kInvalidModel, "malformed protobuf");
  EXPECT_ONYX_ERROR(load(good + pb_key(1, 0) + std::string(11, '\xff') + "\x01"), ErrorCode::kInvalidModel,
                    "malformed protobuf");
  // An unterminated varint inside packed dims.
  TensorSpec t;
  t.extra = pb_bytes(1, "\x80");
  EXPECT_ONYX_ERROR(load_tensor(t), ErrorCode::kInvalidModel, "malformed protobuf");
  // fixed32/fixed64 fields cut short.
  EXPECT_ONYX_ERROR(load(good + pb_key(30, 5) + "\x01\x02"), ErrorCode::kInvalidModel, "malformed protobuf");
  EXPECT_ONYX_ERROR(load(good + pb_key(30, 1) + "\x01\x02\x03"), ErrorCode::kInvalidModel,
                    "malformed protobuf");
}

TEST(LoaderMalformed, NotAModel) {
  EXPECT_ONYX_ERROR(load("this is a text file, not a protobuf\n"), ErrorCode::kInvalidModel, "model:");
  ModelSpec m;  // no graph
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "holds no graph");
}

TEST(LoaderMalformed, DeepNestingIsRefused) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {1})};
  g.outputs = {tensor_info("x", kFloat, {1})};
  for (int i = 0; i < 100; ++i) {
    GraphSpec outer;
    outer.outputs = g.outputs;
    outer.nodes = {NodeSpec("If", {"c"}, {"x"}, {AttrSpec::Graph("then_branch", g)})};
    g = std::move(outer);
  }
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "nested more than 64");

  TypeSpec t = TypeSpec::tensor(kFloat, {1});
  for (int i = 0; i < 100; ++i) t = TypeSpec::sequence(t);
  GraphSpec g2;
  g2.inputs = {ValueInfoSpec("s", t)};
  g2.outputs = {ValueInfoSpec("s")};
  EXPECT_ONYX_ERROR(load(ModelSpec(g2).serialize()), ErrorCode::kInvalidModel, "nested more than 64");
}

TEST(LoaderMalformed, BadDeclarations) {
  GraphSpec g = add_relu_graph();
  g.inputs[0] = tensor_info("a", kFloat, {-3, 3});
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "negative dim_value -3");

  g = add_relu_graph();
  g.inputs[0] = tensor_info("a", 77, {3});
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "unknown elem_type 77");

  g = add_relu_graph();
  g.nodes[0].op_type.clear();
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "node 'add0' has no op_type");

  g = add_relu_graph();
  g.initializers = {TensorSpec::floats("", {1}, {1})};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "initializer without a name");

  g = add_relu_graph();
  AttrSpec bad;
  bad.name = "weird";
  bad.type = 99;
  bad.i = 1;
  g.nodes[0].attrs = {bad};
  EXPECT_ONYX_ERROR(load(ModelSpec(g).serialize()), ErrorCode::kInvalidModel, "attribute 'weird'",
                    "unknown type 99");
}

TEST(LoaderMalformed, BadOpsetImports) {
  ModelSpec m(add_relu_graph());
  m.opsets.clear();
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "imports no opset");
  m.opsets = {{"", 0}};
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "'ai.onnx' has version 0");
  m.opsets = {{"", 17}, {"com.acme", -1}};
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "'com.acme' has version -1");
  // Versions are held as int: 2^32 + 17 must not wrap to 17 (found by tests/fuzz).
  m.opsets = {{"", 4294967313}};
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "'ai.onnx' has version 4294967313");
  m.opsets = {{"", 17}};
  FunctionSpec f;
  f.name = "f";
  f.domain = "local";
  f.inputs = {"x"};
  f.outputs = {"y"};
  f.nodes = {NodeSpec("Neg", {"x"}, {"y"})};
  f.opsets = {{"", 4294967313}};
  m.functions = {f};
  EXPECT_ONYX_ERROR(load(m.serialize()), ErrorCode::kInvalidModel, "function 'f': opset_import",
                    "has version 4294967313");
  m.functions.clear();
  // IR version < 3 files predate opset_import: they mean opset 1.
  m.opsets.clear();
  m.ir_version = 2;
  EXPECT_EQ(load(m.serialize())->opset_imports.at(""), 1);
}

// -------------------------------------------------------- graph structure
// These are found when a session plans the graph.

std::unique_ptr<Session> plan(const ModelSpec& m) { return session_from_model(load(m.serialize())); }

TEST(LoaderGraph, CycleIsRefused) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2})};
  g.outputs = {tensor_info("c", kFloat, {2})};
  g.nodes = {NodeSpec("Add", {"x", "c"}, {"a"}, {}, "n_a"), NodeSpec("Relu", {"a"}, {"b"}, {}, "n_b"),
             NodeSpec("Relu", {"b"}, {"c"}, {}, "n_c")};
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kInvalidModel, "cycle", "depends");

  GraphSpec self;
  self.inputs = {tensor_info("x", kFloat, {2})};
  self.outputs = {tensor_info("y", kFloat, {2})};
  self.nodes = {NodeSpec("Add", {"x", "y"}, {"y"}, {}, "selfie")};
  EXPECT_ONYX_ERROR(plan(ModelSpec(self)), ErrorCode::kInvalidModel, "'selfie'", "its own output", "cycle");
}

TEST(LoaderGraph, UndefinedInputIsRefused) {
  GraphSpec g = add_relu_graph();
  g.nodes[0].inputs[1] = "nowhere";
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kInvalidModel, "Add 'add0'", "input 1 'nowhere'",
                    "not a graph input, an initializer, or the output of another node");
}

TEST(LoaderGraph, UndefinedOutputIsRefused) {
  GraphSpec g = add_relu_graph();
  g.outputs.push_back(tensor_info("ghost", kFloat, {1}));
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kInvalidModel, "output 'ghost' is not produced");
}

TEST(LoaderGraph, ValueDefinedTwiceIsRefused) {
  GraphSpec g = add_relu_graph();
  g.nodes.push_back(NodeSpec("Relu", {"a"}, {"s"}, {}, "dup"));
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kInvalidModel, "value 's' is defined more than once");

  GraphSpec g2 = add_relu_graph();
  g2.inputs.push_back(tensor_info("c", kFloat, {3}));
  g2.nodes.push_back(NodeSpec("Relu", {"s"}, {"c"}, {}, "shadow"));  // overwrites a graph input
  EXPECT_ONYX_ERROR(plan(ModelSpec(g2)), ErrorCode::kInvalidModel, "value 'c' is defined more than once");

  GraphSpec g3 = add_relu_graph();
  g3.inputs.push_back(tensor_info("a", kFloat, {3}));
  EXPECT_ONYX_ERROR(plan(ModelSpec(g3)), ErrorCode::kInvalidModel, "value 'a' is defined more than once");
}

// A node output redefining a graph input that an earlier node consumes is a redefinition,
// not a cycle (the consumer must not be linked to the redefining node).
TEST(LoaderGraph, RedefinedConsumedInputIsReportedAsRedefinition) {
  GraphSpec g = add_relu_graph();
  g.nodes.push_back(NodeSpec("Relu", {"s"}, {"a"}, {}, "shadow"));  // 'a' feeds Add
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kInvalidModel, "value 'a' is defined more than once",
                    "it is a graph input and output 0 of Relu 'shadow'");
  std::string msg = catch_error([&] { plan(ModelSpec(g)); }).message;
  EXPECT_FALSE(contains(msg, "cycle")) << msg;

  // The same with an initializer, and with two nodes: each definer is named.
  GraphSpec gi = add_relu_graph();
  gi.initializers = {TensorSpec::floats("w", {3}, {1, 2, 3})};
  gi.nodes[0].inputs[1] = "w";
  gi.nodes.push_back(NodeSpec("Relu", {"s"}, {"w"}, {}, "shadow"));
  EXPECT_ONYX_ERROR(plan(ModelSpec(gi)), ErrorCode::kInvalidModel, "value 'w' is defined more than once",
                    "it is an initializer and output 0 of Relu 'shadow'");
  GraphSpec gn = add_relu_graph();
  gn.nodes.insert(gn.nodes.begin(), NodeSpec("Relu", {"b"}, {"s"}, {}, "first"));
  EXPECT_ONYX_ERROR(plan(ModelSpec(gn)), ErrorCode::kInvalidModel, "value 's' is defined more than once",
                    "it is output 0 of Relu 'first' (opset 17) and output 0 of Add 'add0'");
}

TEST(LoaderGraph, UnknownOpIsRefused) {
  GraphSpec g = add_relu_graph();
  g.nodes[1].op_type = "Frobnicate";
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kUnsupported, "Frobnicate 'relu0'",
                    "no kernel for op 'Frobnicate'");
}

TEST(LoaderGraph, UnknownDomainIsRefused) {
  GraphSpec g = add_relu_graph();
  g.nodes[1].domain = "com.acme";
  EXPECT_ONYX_ERROR(plan(ModelSpec(g)), ErrorCode::kUnsupported, "'relu0'", "domain 'com.acme'",
                    "not imported");
  ModelSpec m(g);
  m.opsets.push_back({"com.acme", 1});
  EXPECT_ONYX_ERROR(plan(m), ErrorCode::kUnsupported, "no kernel for op 'Relu' of domain 'com.acme'");
}

TEST(LoaderGraph, OpsetOutOfRangeIsRefused) {
  EXPECT_ONYX_ERROR(plan(ModelSpec(add_relu_graph(), 99)), ErrorCode::kUnsupported, "opset 99",
                    "onyx knows opsets 1..");
  // An op used at an opset before it existed (IsNaN appeared in opset 9).
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2})};
  g.outputs = {tensor_info("y", kBool, {2})};
  g.nodes = {NodeSpec("IsNaN", {"x"}, {"y"}, {}, "nan")};
  EXPECT_ONYX_ERROR(plan(ModelSpec(g, 8)), ErrorCode::kUnsupported, "IsNaN 'nan'", "opset 9",
                    "the model imports opset 8");
  EXPECT_NO_THROW(plan(ModelSpec(g, 9)));
}

TEST(LoaderGraph, SessionOpenNamesTheFile) {
  TempDir dir;
  write_file(dir.file("future.onnx"), ModelSpec(add_relu_graph(), 99).serialize());
  EXPECT_ONYX_ERROR(Session::open(dir.file("future.onnx")), ErrorCode::kUnsupported,
                    dir.file("future.onnx"), "opset 99");
}

// ----------------------------------------------------------- external data

/// A model whose initializer "w" (float[n]) lives in external data.
std::string external_model(const StringPairs& ext, int64_t n = 4) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {n})};
  g.outputs = {tensor_info("y", kFloat, {n})};
  TensorSpec w;
  w.name = "w";
  w.dims = {n};
  w.data_location = 1;
  w.external_data = ext;
  g.initializers = {w};
  g.nodes = {NodeSpec("Add", {"x", "w"}, {"y"})};
  return ModelSpec(g).serialize();
}

std::string float_bytes(const std::vector<float>& v) { return raw_bytes(v); }

TEST(LoaderExternal, ValidFileInTheModelFolderLoads) {
  TempDir dir;
  fs::create_directories(dir.path() / "data");
  // 8 bytes of padding, then the weights, then trailing bytes.
  write_file(dir.file("data/weights.bin"), std::string(8, 'x') + float_bytes({1, 2, 3, 4}) + "tail");
  write_file(dir.file("m.onnx"), external_model({{"location", "data/weights.bin"}, {"offset", "8"}, {"length", "16"}}));
  auto model = format::load_model(dir.file("m.onnx"));
  const Tensor* w = model->graph->initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(values_of<float>(*w), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(model->external_files.size(), 1u);
  EXPECT_EQ(model->external_files[0].location, "data/weights.bin");
  EXPECT_EQ(model->external_files[0].bytes_used, 16u);

  auto session = session_from_model(model);
  auto out = session->run({{"x", make_float({4}, {10, 20, 30, 40})}});
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{11, 22, 33, 44}));
}

TEST(LoaderExternal, WholeFileWithoutOffsetOrLength) {
  TempDir dir;
  write_file(dir.file("w.bin"), float_bytes({5, 6, 7, 8}));
  write_file(dir.file("m.onnx"), external_model({{"location", "w.bin"}}));
  auto model = format::load_model(dir.file("m.onnx"));
  EXPECT_EQ(values_of<float>(*model->graph->initializer("w")), (std::vector<float>{5, 6, 7, 8}));
  // A symlink inside the folder to a file inside the folder is fine.
  fs::create_symlink("w.bin", dir.path() / "alias.bin");
  write_file(dir.file("m2.onnx"), external_model({{"location", "alias.bin"}}));
  EXPECT_EQ(values_of<float>(*format::load_model(dir.file("m2.onnx"))->graph->initializer("w")),
            (std::vector<float>{5, 6, 7, 8}));
}

TEST(LoaderExternal, AbsolutePathIsRefused) {
  TempDir dir, other;
  write_file(other.file("w.bin"), float_bytes({1, 2, 3, 4}));
  write_file(dir.file("m.onnx"), external_model({{"location", other.file("w.bin")}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m.onnx")), ErrorCode::kInvalidModel, "tensor 'w'",
                    other.file("w.bin"), "absolute path", "relative to the model's folder");
}

TEST(LoaderExternal, DotDotPathIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path() / "model");
  write_file(dir.file("w.bin"), float_bytes({1, 2, 3, 4}));
  write_file(dir.file("model/m.onnx"), external_model({{"location", "../w.bin"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("model/m.onnx")), ErrorCode::kInvalidModel, "tensor 'w'",
                    "'../w.bin'", "'..' is not allowed");
  // Even when it would come back into the folder.
  write_file(dir.file("model/w.bin"), float_bytes({1, 2, 3, 4}));
  write_file(dir.file("model/m2.onnx"), external_model({{"location", "sub/../w.bin"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("model/m2.onnx")), ErrorCode::kInvalidModel,
                    "'..' is not allowed");
}

TEST(LoaderExternal, SymlinkOutsideIsRefused) {
  TempDir dir, outside;
  write_file(outside.file("secret.bin"), float_bytes({1, 2, 3, 4}));
  fs::create_symlink(outside.path() / "secret.bin", dir.path() / "link.bin");
  write_file(dir.file("m.onnx"), external_model({{"location", "link.bin"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m.onnx")), ErrorCode::kInvalidModel, "tensor 'w'",
                    "'link.bin'", "outside the model's folder");
  // A symlinked directory leading outside.
  fs::create_directory_symlink(outside.path(), dir.path() / "linkdir");
  write_file(dir.file("m2.onnx"), external_model({{"location", "linkdir/secret.bin"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m2.onnx")), ErrorCode::kInvalidModel,
                    "outside the model's folder");
}

TEST(LoaderExternal, RangePastTheEndIsRefused) {
  TempDir dir;
  write_file(dir.file("w.bin"), float_bytes({1, 2, 3, 4}));  // 16 bytes
  struct Case {
    StringPairs ext;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {{{"location", "w.bin"}, {"offset", "4"}, {"length", "16"}}, {"offset 4 length 16", "past the end", "16 bytes"}},
      {{{"location", "w.bin"}, {"offset", "17"}}, {"offset 17", "past the end"}},
      {{{"location", "w.bin"}, {"offset", "0"}, {"length", "32"}}, {"length 32", "past the end"}},
      {{{"location", "w.bin"}, {"offset", "18446744073709551615"}, {"length", "1"}}, {"past the end"}},
      {{{"location", "w.bin"}, {"offset", "8"}, {"length", "18446744073709551608"}}, {"past the end"}},
      {{{"location", "w.bin"}, {"offset", "-4"}}, {"offset '-4'"}},
      {{{"location", "w.bin"}, {"length", "-16"}}, {"length '-16'"}},
      {{{"location", "w.bin"}, {"offset", "abc"}}, {"offset 'abc' is not a number"}},
      {{{"location", "w.bin"}, {"length", ""}}, {"length '' is not a number"}},
      // The range fits but does not hold the tensor: a size mismatch.
      {{{"location", "w.bin"}, {"offset", "4"}}, {"holds 12 bytes", "need 16"}},
  };
  int k = 0;
  for (const Case& c : cases) {
    std::string name = dir.file("m" + std::to_string(k++) + ".onnx");
    write_file(name, external_model(c.ext));
    SCOPED_TRACE(c.ext.back().first + "=" + c.ext.back().second);
    Caught e = catch_error([&] { format::load_model(name); });
    EXPECT_TRUE(error_matches(e, ErrorCode::kInvalidModel, c.parts));
  }
}

TEST(LoaderExternal, MissingOrEmptyLocation) {
  TempDir dir;
  write_file(dir.file("m.onnx"), external_model({{"location", "nope.bin"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m.onnx")), ErrorCode::kInvalidModel, "tensor 'w'",
                    "missing or unreadable", "nope.bin");
  write_file(dir.file("m2.onnx"), external_model({{"offset", "0"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m2.onnx")), ErrorCode::kInvalidModel, "empty location");
  fs::create_directory(dir.path() / "adir");
  write_file(dir.file("m3.onnx"), external_model({{"location", "adir"}}));
  EXPECT_ONYX_ERROR(format::load_model(dir.file("m3.onnx")), ErrorCode::kInvalidModel, "adir");
}

TEST(LoaderExternal, FromMemoryNeedsABaseDir) {
  TempDir dir;
  write_file(dir.file("w.bin"), float_bytes({1, 2, 3, 4}));
  std::string bytes = external_model({{"location", "w.bin"}});
  EXPECT_ONYX_ERROR(load(bytes), ErrorCode::kInvalidModel, "loaded from memory");
  auto model = load_model_from_bytes(bytes.data(), bytes.size(), dir.path().string());
  EXPECT_EQ(values_of<float>(*model->graph->initializer("w")), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace onyx::test

namespace onyx::test {
namespace {

// ------------------------------------------------------------ value files

TEST(LoaderValue, TensorSequenceAndOptionalProtos) {
  std::string t = TensorSpec::floats("x", {2}, {1, 2}).serialize();
  ir::TypeInfo tensor_type = ir::TypeInfo::tensor(DType::kFloat, {2});
  Value v = format::read_value_proto(t.data(), t.size(), tensor_type);
  ASSERT_TRUE(v.is_tensor());
  EXPECT_EQ(values_of<float>(v.tensor()), (std::vector<float>{1, 2}));

  // SequenceProto: elem_type = 2, tensor_values = 3.
  std::string seq;
  {
    protozero::pbf_writer w(seq);
    w.add_string(1, "s");
    w.add_int32(2, 1);
    w.add_message(3, TensorSpec::floats("", {1}, {5}).serialize());
    w.add_message(3, TensorSpec::floats("", {2}, {6, 7}).serialize());
  }
  Value sv = format::read_value_proto(seq.data(), seq.size(), ir::TypeInfo::sequence_of(tensor_type));
  ASSERT_TRUE(sv.is_sequence());
  ASSERT_EQ(sv.seq().size(), 2u);
  EXPECT_EQ(sv.seq_dtype(), DType::kFloat);
  EXPECT_EQ(values_of<float>(sv.seq()[1]), (std::vector<float>{6, 7}));

  // OptionalProto: tensor_value = 3; an empty one is "none".
  std::string opt;
  {
    protozero::pbf_writer w(opt);
    w.add_int32(2, 1);
    w.add_message(3, t);
  }
  Value ov = format::read_value_proto(opt.data(), opt.size(), ir::TypeInfo::optional_of(tensor_type));
  ASSERT_TRUE(ov.is_tensor());
  std::string empty_opt;
  {
    protozero::pbf_writer w(empty_opt);
    w.add_int32(2, 1);
  }
  EXPECT_TRUE(format::read_value_proto(empty_opt.data(), empty_opt.size(),
                                       ir::TypeInfo::optional_of(tensor_type)).is_none());
}

TEST(LoaderValue, BadValueFilesNameThePath) {
  TempDir dir;
  std::string t = TensorSpec::floats("x", {4}, {1, 2, 3, 4}).serialize();
  write_file(dir.file("input_0.pb"), t.substr(0, t.size() - 2));
  EXPECT_ONYX_ERROR(format::read_value_file(dir.file("input_0.pb"), ir::TypeInfo::tensor(DType::kFloat, {4})),
                    ErrorCode::kInvalidModel, dir.file("input_0.pb"));
  for (size_t n = 0; n < t.size(); ++n) {
    Caught c = catch_error([&] { format::read_tensor_proto(t.data(), n); });
    EXPECT_NE(c.kind, Caught::Kind::kOther) << "prefix " << n << ": " << c.message;
  }
}

}  // namespace
}  // namespace onyx::test
