// Session: the run-time input contract (names, dtypes, ranks, fixed and symbolic dims,
// layout hints) and correct outputs, including control flow with captured values.
#include <gtest/gtest.h>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

std::unique_ptr<Session> session_of(const ModelSpec& m) {
  std::string bytes = m.serialize();
  return session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()));
}

/// y = Relu(a + b), a: float[N, 3], b: float[3].
std::unique_ptr<Session> add_relu() {
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {"N", 3}), tensor_info("b", kFloat, {3})};
  g.outputs = {tensor_info("y", kFloat, {"N", 3})};
  g.nodes = {NodeSpec("Add", {"a", "b"}, {"s"}), NodeSpec("Relu", {"s"}, {"y"})};
  return session_of(ModelSpec(g));
}

/// y = Relu(x) for an image input of the given declared shape.
std::unique_ptr<Session> image_model(std::vector<DimSpec> shape) {
  GraphSpec g;
  g.inputs = {tensor_info("image", kFloat, shape)};
  g.outputs = {tensor_info("y", kFloat, shape)};
  g.nodes = {NodeSpec("Relu", {"image"}, {"y"})};
  return session_of(ModelSpec(g));
}

Tensor zeros(Dims d) { return Tensor(DType::kFloat, std::move(d)); }

TEST(Session, AddReluOutputs) {
  auto s = add_relu();
  auto out = s->run({{"a", make_float({2, 3}, {-1, 2, -3, 4, -5, 6})}, {"b", make_float({3}, {0.5f, -3, 1})}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].is_tensor());
  const Tensor& y = out[0].tensor();
  EXPECT_EQ(y.dtype(), DType::kFloat);
  EXPECT_EQ(y.dims(), (Dims{2, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 0, 0, 4.5f, 0, 7}));
  // Feed order does not matter, and a session runs many times.
  auto again = s->run({{"b", make_float({3}, {1, 1, 1})}, {"a", make_float({1, 3}, {-2, 0, 2})}});
  EXPECT_EQ(values_of<float>(again[0].tensor()), (std::vector<float>{0, 1, 3}));
}

TEST(Session, DescribesInputsAndOutputs) {
  auto s = add_relu();
  ASSERT_EQ(s->inputs().size(), 2u);
  const IoInfo& a = s->inputs()[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dtype, DType::kFloat);
  EXPECT_TRUE(a.is_tensor);
  EXPECT_TRUE(a.has_shape);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(a.dim_names, (std::vector<std::string>{"N", ""}));
  EXPECT_EQ(a.type, "float[N, 3]");
  EXPECT_FALSE(a.has_default);
  ASSERT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(s->outputs()[0].name, "y");
}

TEST(Session, SymbolicDimsAcceptAnyValue) {
  auto s = add_relu();
  for (int64_t n : {0, 1, 2, 7, 100}) {
    SCOPED_TRACE(n);
    std::vector<float> a(static_cast<size_t>(n * 3), -1.0f);
    auto out = s->run({{"a", make_float({n, 3}, a)}, {"b", make_float({3}, {2, 2, 2})}});
    EXPECT_EQ(out[0].tensor().dims(), (Dims{n, 3}));
    for (float v : values_of<float>(out[0].tensor())) EXPECT_EQ(v, 1.0f);
  }
  // An unknown dim (no name) and an unranked input accept anything too.
  GraphSpec g;
  g.inputs = {tensor_info("u", kFloat, {DimSpec::unknown(), 2}), ValueInfoSpec("r", TypeSpec::unranked(kFloat))};
  g.outputs = {tensor_info("y", kFloat, {DimSpec::unknown(), 2}), ValueInfoSpec("z", TypeSpec::unranked(kFloat))};
  g.nodes = {NodeSpec("Relu", {"u"}, {"y"}), NodeSpec("Relu", {"r"}, {"z"})};
  auto s2 = session_of(ModelSpec(g));
  for (const Dims& d : {Dims{}, Dims{5}, Dims{2, 3, 4}}) {
    auto out = s2->run({{"u", zeros({4, 2})}, {"r", zeros(d)}});
    EXPECT_EQ(out[1].tensor().dims(), d);
  }
}

TEST(Session, MissingInput) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 3})}}), ErrorCode::kInvalidArgument, "missing input 'b'",
                    "float[3]");
  EXPECT_ONYX_ERROR(s->run({}), ErrorCode::kInvalidArgument, "missing input 'a'");
}

TEST(Session, InputWithDefaultMayBeOmitted) {
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {3}), tensor_info("b", kFloat, {3})};
  g.initializers = {TensorSpec::floats("b", {3}, {10, 20, 30})};
  g.outputs = {tensor_info("y", kFloat, {3})};
  g.nodes = {NodeSpec("Add", {"a", "b"}, {"y"})};
  auto s = session_of(ModelSpec(g));
  EXPECT_TRUE(s->inputs()[1].has_default);
  EXPECT_EQ(values_of<float>(s->run({{"a", make_float({3}, {1, 2, 3})}})[0].tensor()),
            (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(values_of<float>(s->run({{"a", make_float({3}, {1, 2, 3})}, {"b", make_float({3}, {0, 0, 1})}})[0].tensor()),
            (std::vector<float>{1, 2, 4}));
}

TEST(Session, UnknownInputName) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 3})}, {"b", zeros({3})}, {"c", zeros({3})}}),
                    ErrorCode::kInvalidArgument, "unknown input 'c'", "the model's inputs are: a, b");
}

TEST(Session, InputGivenTwice) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 3})}, {"b", zeros({3})}, {"a", zeros({1, 3})}}),
                    ErrorCode::kInvalidArgument, "input 'a' is given twice");
}

TEST(Session, WrongDtype) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", Tensor(DType::kInt64, {1, 3})}, {"b", zeros({3})}}),
                    ErrorCode::kInvalidArgument, "input 'a'", "expected dtype float, got int64",
                    "float[N, 3]", "int64[1, 3]");
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 3})}, {"b", Tensor(DType::kDouble, {3})}}),
                    ErrorCode::kInvalidArgument, "input 'b'", "expected dtype float, got double");
}

TEST(Session, WrongRank) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 1, 3})}, {"b", zeros({3})}}), ErrorCode::kInvalidArgument,
                    "input 'a'", "expected rank 2, got rank 3", "float[N, 3]", "float[1, 1, 3]");
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({1, 3})}, {"b", Tensor::scalar<float>(DType::kFloat, 1.0f)}}),
                    ErrorCode::kInvalidArgument, "input 'b'", "expected rank 1, got rank 0");
}

TEST(Session, FixedDimContradicted) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({2, 4})}, {"b", zeros({3})}}), ErrorCode::kInvalidArgument,
                    "input 'a'", "dim 1 must be 3, got 4", "float[N, 3]", "float[2, 4]");
  EXPECT_ONYX_ERROR(s->run({{"a", zeros({2, 3})}, {"b", zeros({0})}}), ErrorCode::kInvalidArgument,
                    "input 'b'", "dim 0 must be 3, got 0");
}

TEST(Session, NonTensorGivenForTensorInput) {
  auto s = add_relu();
  EXPECT_ONYX_ERROR(s->run({{"a", Value::sequence(DType::kFloat, {zeros({1, 3})})}, {"b", zeros({3})}}),
                    ErrorCode::kInvalidArgument, "input 'a'", "expected a tensor", "got a sequence");
  EXPECT_ONYX_ERROR(s->run({{"a", Value::none()}, {"b", zeros({3})}}), ErrorCode::kInvalidArgument,
                    "input 'a'", "expected a tensor");
}

TEST(Session, NhwcGivenToNchwInput) {
  auto s = image_model({1, 3, 8, 8});
  EXPECT_ONYX_ERROR(s->run({{"image", zeros({1, 8, 8, 3})}}), ErrorCode::kInvalidArgument,
                    "input 'image'", "float[1, 3, 8, 8]", "float[1, 8, 8, 3]", "looks like NHWC",
                    "expects NCHW", "transpose", "(0, 3, 1, 2)");
  // Symbolic batch and spatial dims: only the channel count tells.
  auto sym = image_model({"N", 3, "H", "W"});
  EXPECT_ONYX_ERROR(sym->run({{"image", zeros({2, 224, 224, 3})}}), ErrorCode::kInvalidArgument,
                    "dim 1 must be 3, got 224", "looks like NHWC", "transpose", "(0, 3, 1, 2)");
  // The right layout runs.
  EXPECT_EQ(sym->run({{"image", zeros({2, 3, 5, 7})}})[0].tensor().dims(), (Dims{2, 3, 5, 7}));
}

TEST(Session, NchwGivenToNhwcInput) {
  auto s = image_model({1, 8, 8, 3});
  EXPECT_ONYX_ERROR(s->run({{"image", zeros({1, 3, 8, 8})}}), ErrorCode::kInvalidArgument,
                    "input 'image'", "looks like NCHW", "expects NHWC", "transpose", "(0, 2, 3, 1)");
  auto sym = image_model({"N", "H", "W", 3});
  EXPECT_ONYX_ERROR(sym->run({{"image", zeros({1, 3, 32, 32})}}), ErrorCode::kInvalidArgument,
                    "dim 3 must be 3, got 32", "looks like NCHW", "(0, 2, 3, 1)");
}

TEST(Session, NoLayoutHintForOtherMismatches) {
  auto s = image_model({1, 3, 8, 8});
  Caught c = catch_error([&] { s->run({{"image", zeros({1, 4, 8, 8})}}); });
  ASSERT_TRUE(error_matches(c, ErrorCode::kInvalidArgument, {"dim 1 must be 3, got 4"}));
  EXPECT_FALSE(contains(c.message, "NHWC")) << c.message;
  EXPECT_FALSE(contains(c.message, "NCHW")) << c.message;
}

TEST(Session, IfWithCapturedOuterValues) {
  GraphSpec then_g;
  then_g.name = "then";
  then_g.outputs = {tensor_info("t_out", kFloat, {2})};
  then_g.nodes = {NodeSpec("Add", {"a", "k"}, {"t_out"})};  // a: graph input, k: initializer
  GraphSpec else_g;
  else_g.name = "else";
  else_g.outputs = {tensor_info("e_out", kFloat, {2})};
  else_g.nodes = {NodeSpec("Sub", {"a", "k"}, {"e_out"})};
  GraphSpec g;
  g.inputs = {tensor_info("cond", kBool, {}), tensor_info("a", kFloat, {2})};
  g.initializers = {TensorSpec::floats("k", {2}, {100, 200})};
  g.outputs = {tensor_info("y", kFloat, {2})};
  g.nodes = {NodeSpec("If", {"cond"}, {"y"}, {AttrSpec::Graph("then_branch", then_g), AttrSpec::Graph("else_branch", else_g)})};
  auto s = session_of(ModelSpec(g));
  auto yes = make_tensor<uint8_t>(DType::kBool, {}, {1});
  auto no = make_tensor<uint8_t>(DType::kBool, {}, {0});
  EXPECT_EQ(values_of<float>(s->run({{"cond", yes}, {"a", make_float({2}, {1, 2})}})[0].tensor()),
            (std::vector<float>{101, 202}));
  EXPECT_EQ(values_of<float>(s->run({{"cond", no}, {"a", make_float({2}, {1, 2})}})[0].tensor()),
            (std::vector<float>{-99, -198}));
  // The captured graph input is read at run time, not frozen at plan time.
  EXPECT_EQ(values_of<float>(s->run({{"cond", yes}, {"a", make_float({2}, {5, 5})}})[0].tensor()),
            (std::vector<float>{105, 205}));
}

TEST(Session, LoopWithCapturedOuterValues) {
  // acc_{i+1} = acc_i + w + bias, w an initializer, bias a graph input (both captured);
  // the scan output collects every acc.
  GraphSpec body;
  body.name = "body";
  body.inputs = {tensor_info("i", kInt64, {}), tensor_info("cond_in", kBool, {}),
                 tensor_info("acc_in", kFloat, {2})};
  body.outputs = {tensor_info("cond_out", kBool, {}), tensor_info("acc_out", kFloat, {2}),
                  tensor_info("scan_out", kFloat, {2})};
  body.nodes = {NodeSpec("Identity", {"cond_in"}, {"cond_out"}), NodeSpec("Add", {"acc_in", "w"}, {"t"}),
                NodeSpec("Add", {"t", "bias"}, {"acc_out"}), NodeSpec("Identity", {"acc_out"}, {"scan_out"})};
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {2}), tensor_info("bias", kFloat, {2}), tensor_info("M", kInt64, {})};
  g.initializers = {TensorSpec::floats("w", {2}, {1, 10})};
  g.outputs = {tensor_info("acc", kFloat, {2}), tensor_info("scan", kFloat, {"T", 2})};
  g.nodes = {NodeSpec("Loop", {"M", "", "x"}, {"acc", "scan"}, {AttrSpec::Graph("body", body)})};
  auto s = session_of(ModelSpec(g));
  auto out = s->run({{"x", make_float({2}, {0, 0})}, {"bias", make_float({2}, {0.5f, 0.25f})},
                     {"M", make_tensor<int64_t>(DType::kInt64, {}, {3})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{4.5f, 30.75f}));
  EXPECT_EQ(out[1].tensor().dims(), (Dims{3, 2}));
  EXPECT_EQ(values_of<float>(out[1].tensor()),
            (std::vector<float>{1.5f, 10.25f, 3, 20.5f, 4.5f, 30.75f}));
  // Zero iterations: the carried value passes through.
  auto zero = s->run({{"x", make_float({2}, {7, 8})}, {"bias", make_float({2}, {1, 1})},
                      {"M", make_tensor<int64_t>(DType::kInt64, {}, {0})}});
  EXPECT_EQ(values_of<float>(zero[0].tensor()), (std::vector<float>{7, 8}));
}

TEST(Session, IfInsideLoopCapturesFromBothLevels) {
  // Inside the loop body, an If picks acc + w (from the main graph) or acc - w, by
  // whether the iteration number is even; acc_in is captured from the body.
  GraphSpec then_g;
  then_g.name = "then";
  then_g.outputs = {tensor_info("p", kFloat, {1})};
  then_g.nodes = {NodeSpec("Add", {"acc_in", "w"}, {"p"})};
  GraphSpec else_g;
  else_g.name = "else";
  else_g.outputs = {tensor_info("q", kFloat, {1})};
  else_g.nodes = {NodeSpec("Sub", {"acc_in", "w"}, {"q"})};
  GraphSpec body;
  body.name = "body";
  body.inputs = {tensor_info("i", kInt64, {}), tensor_info("c", kBool, {}), tensor_info("acc_in", kFloat, {1})};
  body.outputs = {tensor_info("c_out", kBool, {}), tensor_info("acc_out", kFloat, {1})};
  body.initializers = {TensorSpec::int64s("two", {}, {2}), TensorSpec::int64s("zero", {}, {0})};
  body.nodes = {NodeSpec("Identity", {"c"}, {"c_out"}), NodeSpec("Mod", {"i", "two"}, {"r"}),
                NodeSpec("Equal", {"r", "zero"}, {"even"}),
                NodeSpec("If", {"even"}, {"acc_out"}, {AttrSpec::Graph("then_branch", then_g), AttrSpec::Graph("else_branch", else_g)})};
  GraphSpec g;
  g.inputs = {tensor_info("w", kFloat, {1}), tensor_info("M", kInt64, {})};
  g.initializers = {TensorSpec::floats("start", {1}, {0})};
  g.outputs = {tensor_info("acc", kFloat, {1})};
  g.nodes = {NodeSpec("Loop", {"M", "", "start"}, {"acc"}, {AttrSpec::Graph("body", body)})};
  auto s = session_of(ModelSpec(g));
  // i = 0: +w, 1: -w, 2: +w, 3: -w, 4: +w  -> w
  auto out = s->run({{"w", make_float({1}, {3})}, {"M", make_tensor<int64_t>(DType::kInt64, {}, {5})}});
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{3}));
  out = s->run({{"w", make_float({1}, {3})}, {"M", make_tensor<int64_t>(DType::kInt64, {}, {4})}});
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{0}));
}

TEST(Session, SequenceInputContract) {
  GraphSpec g;
  g.inputs = {ValueInfoSpec("seq", TypeSpec::sequence(TypeSpec::tensor(kFloat, {2})))};
  g.outputs = {tensor_info("n", kInt64, {})};
  g.nodes = {NodeSpec("SequenceLength", {"seq"}, {"n"})};
  auto s = session_of(ModelSpec(g));
  auto out = s->run({{"seq", Value::sequence(DType::kFloat, {zeros({2}), zeros({2}), zeros({2})})}});
  EXPECT_EQ(out[0].tensor().data<int64_t>()[0], 3);
  EXPECT_ONYX_ERROR(s->run({{"seq", zeros({2})}}), ErrorCode::kInvalidArgument, "input 'seq'",
                    "non-sequence");
}

}  // namespace
}  // namespace onyx::test
