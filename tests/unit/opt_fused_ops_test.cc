// The ai.onyx fused ops (src/kernels/reference/fused.h): each model with a fused node is
// compared with the same computation written in standard ONNX ops, both on the reference
// kernels (and the fused one again on the default kernels), on random inputs; and the
// shape functions' errors name the node and the fault.
#include <gtest/gtest.h>

#include <random>

#include "opt_testing.h"
#include "runtime/session_internal.h"

namespace onyx::test {
namespace {

constexpr const char* kOnyx = "ai.onyx";

ModelSpec with_onyx(GraphSpec g, int64_t opset = 17) {
  ModelSpec m(std::move(g), opset);
  m.opsets.push_back({kOnyx, 1});
  return m;
}

/// Runs both models (no graph optimization) and compares outputs.
void expect_same(const ModelSpec& fused, const ModelSpec& plain, const Feeds& feeds,
                 const std::string& what, double rtol = 1e-6, double atol = 1e-6) {
  std::vector<Value> want = run_spec(plain, feeds, GraphOptimization::kNone, true);
  std::vector<Value> ref = run_spec(fused, feeds, GraphOptimization::kNone, true);
  std::vector<Value> fast = run_spec(fused, feeds, GraphOptimization::kNone, false, 2);
  ASSERT_EQ(want.size(), ref.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(close(want[k], ref[k], rtol, atol)) << what << ": reference kernels, output " << k;
    EXPECT_TRUE(close(want[k], fast[k], 1e-4, 1e-5)) << what << ": default kernels, output " << k;
  }
}

struct Act {
  std::string name;
  std::vector<float> params;
  /// The activation as standard nodes from `x` to `y` (initializers added to g).
  std::vector<NodeSpec> nodes(const std::string& x, const std::string& y, GraphSpec& g) const {
    if (name == "Relu" || name == "Sigmoid" || name == "Tanh" || name == "HardSwish")
      return {NodeSpec(name, {x}, {y})};
    if (name == "LeakyRelu")
      return {NodeSpec(name, {x}, {y}, {AttrSpec::Float("alpha", params[0])})};
    if (name == "HardSigmoid")
      return {NodeSpec(name, {x}, {y},
                       {AttrSpec::Float("alpha", params[0]), AttrSpec::Float("beta", params[1])})};
    if (name == "Clip") {
      g.initializers.push_back(scalar_init(y + "_lo", params[0]));
      g.initializers.push_back(scalar_init(y + "_hi", params[1]));
      return {NodeSpec("Clip", {x, y + "_lo", y + "_hi"}, {y})};
    }
    if (name == "SiLU")
      return {NodeSpec("Sigmoid", {x}, {y + "_s"}), NodeSpec("Mul", {x, y + "_s"}, {y})};
    if (name == "Gelu" || name == "GeluTanh") {
      // 0.5 x (1 + erf(x / sqrt 2)) or the tanh form, as opset-17 ops
      if (name == "Gelu") {
        g.initializers.push_back(scalar_init(y + "_r2", 1.4142135381698608f));
        g.initializers.push_back(scalar_init(y + "_one", 1.0f));
        g.initializers.push_back(scalar_init(y + "_half", 0.5f));
        return {NodeSpec("Div", {x, y + "_r2"}, {y + "_a"}),
                NodeSpec("Erf", {y + "_a"}, {y + "_b"}),
                NodeSpec("Add", {y + "_b", y + "_one"}, {y + "_c"}),
                NodeSpec("Mul", {x, y + "_c"}, {y + "_d"}),
                NodeSpec("Mul", {y + "_d", y + "_half"}, {y})};
      }
      g.initializers.push_back(scalar_init(y + "_k", 0.044715f));
      g.initializers.push_back(scalar_init(y + "_s2pi", 0.7978845608028654f));
      g.initializers.push_back(scalar_init(y + "_one", 1.0f));
      g.initializers.push_back(scalar_init(y + "_half", 0.5f));
      return {NodeSpec("Mul", {x, x}, {y + "_x2"}),
              NodeSpec("Mul", {x, y + "_x2"}, {y + "_x3"}),
              NodeSpec("Mul", {y + "_k", y + "_x3"}, {y + "_m"}),
              NodeSpec("Add", {x, y + "_m"}, {y + "_a"}),
              NodeSpec("Mul", {y + "_s2pi", y + "_a"}, {y + "_u"}),
              NodeSpec("Tanh", {y + "_u"}, {y + "_t"}),
              NodeSpec("Add", {y + "_one", y + "_t"}, {y + "_c"}),
              NodeSpec("Mul", {x, y + "_c"}, {y + "_d"}),
              NodeSpec("Mul", {y + "_half", y + "_d"}, {y})};
    }
    return {NodeSpec("Identity", {x}, {y})};
  }
  std::vector<AttrSpec> attrs() const {
    std::vector<AttrSpec> a = {AttrSpec::String("activation", name)};
    if (!params.empty()) a.push_back(AttrSpec::Floats("activation_params", params));
    return a;
  }
};

const std::vector<Act>& all_acts() {
  static const std::vector<Act> acts = {
      {"", {}},          {"Relu", {}}, {"Clip", {0.0f, 6.0f}}, {"Clip", {-0.25f, 0.3f}},
      {"Sigmoid", {}},   {"Tanh", {}}, {"LeakyRelu", {0.1f}},  {"HardSigmoid", {0.3f, 0.4f}},
      {"HardSwish", {}}, {"SiLU", {}}, {"Gelu", {}},           {"GeluTanh", {}}};
  return acts;
}

TEST(FusedOps, FusedConvMatchesConvAddActivation) {
  std::mt19937 rng(101);
  int it = 0;
  for (const Act& act : all_acts()) {
    for (int with_z = 0; with_z < 2; ++with_z, ++it) {
      const int64_t n = 1 + it % 2, c = 3 + it % 4, m = 1 + (it * 5) % 7, h = 5 + it % 3,
                    w = 4 + it % 5;
      const int64_t group = (c % 2 == 0 && m % 2 == 0) ? 2 : 1, k = 1 + 2 * (it % 2), pad = k / 2;
      const Dims xd{n, c, h, w}, wd{m, c / group, k, k}, yd{n, m, h, w};
      std::vector<AttrSpec> conv_attrs = {AttrSpec::Ints("kernel_shape", {k, k}),
                                          AttrSpec::Ints("pads", {pad, pad, pad, pad}),
                                          AttrSpec::Int("group", group)};
      GraphSpec plain, fused;
      for (GraphSpec* g : {&plain, &fused}) {
        g->inputs = {tensor_info("x", kFloat, dims_spec(xd))};
        if (with_z) g->inputs.push_back(tensor_info("z", kFloat, dims_spec(yd)));
        g->outputs = {tensor_info("y", kFloat, dims_spec(yd))};
      }
      std::mt19937 wrng(it);
      plain.initializers = {random_init("w", wd, wrng), random_init("b", {m}, wrng)};
      fused.initializers = plain.initializers;
      plain.nodes = {NodeSpec("Conv", {"x", "w", "b"}, {"c"}, conv_attrs)};
      std::string pre = "c";
      if (with_z) {
        plain.nodes.push_back(NodeSpec("Add", {"c", "z"}, {"cz"}));
        pre = "cz";
      }
      for (auto& nd : act.nodes(pre, "y", plain)) plain.nodes.push_back(nd);
      auto attrs = conv_attrs;
      for (auto& a : act.attrs()) attrs.push_back(a);
      std::vector<std::string> ins = {"x", "w", "b"};
      if (with_z) ins.push_back("z");
      fused.initializers = plain.initializers;
      fused.nodes = {NodeSpec("FusedConv", ins, {"y"}, attrs, "fc", kOnyx)};
      Feeds feeds = {{"x", random_tensor(xd, rng, -2, 2)}};
      if (with_z) feeds.push_back({"z", random_tensor(yd, rng)});
      expect_same(with_onyx(fused), ModelSpec(plain), feeds,
                  "FusedConv " + act.name + (with_z ? " + Z" : ""));
    }
  }
}

TEST(FusedOps, FusedGemmMatchesGemmActivation) {
  std::mt19937 rng(102);
  int it = 0;
  for (const Act& act : all_acts()) {
    ++it;
    const int64_t M = 1 + it % 5, N = 3 + it % 7, K = 2 + it % 11;
    const bool ta = it & 1, tb = it & 2;
    const Dims ad = ta ? Dims{K, M} : Dims{M, K}, bd = tb ? Dims{N, K} : Dims{K, N};
    std::vector<AttrSpec> gemm_attrs = {AttrSpec::Int("transA", ta), AttrSpec::Int("transB", tb),
                                        AttrSpec::Float("alpha", 0.75f),
                                        AttrSpec::Float("beta", it % 3 ? 1.0f : -0.5f)};
    GraphSpec plain, fused;
    for (GraphSpec* g : {&plain, &fused}) {
      g->inputs = {tensor_info("a", kFloat, dims_spec(ad))};
      g->outputs = {tensor_info("y", kFloat, {M, N})};
    }
    std::mt19937 wrng(it);
    plain.initializers = {random_init("b", bd, wrng),
                          random_init("c", it % 2 ? Dims{N} : Dims{M, N}, wrng)};
    plain.nodes = {NodeSpec("Gemm", {"a", "b", "c"}, {"g"}, gemm_attrs)};
    for (auto& nd : act.nodes("g", "y", plain)) plain.nodes.push_back(nd);
    auto attrs = gemm_attrs;
    for (auto& a : act.attrs()) attrs.push_back(a);
    fused.initializers = plain.initializers;
    fused.nodes = {NodeSpec("FusedGemm", {"a", "b", "c"}, {"y"}, attrs, "fg", kOnyx)};
    expect_same(with_onyx(fused), ModelSpec(plain), {{"a", random_tensor(ad, rng, -2, 2)}},
                "FusedGemm " + act.name);
  }
}

TEST(FusedOps, FusedMatMulMatchesMatMulBiasActivation) {
  std::mt19937 rng(103);
  int it = 0;
  for (const Act& act : all_acts()) {
    for (int with_bias = 0; with_bias < 2; ++with_bias, ++it) {
      const int64_t B = 1 + it % 3, T = 1 + it % 5, K = 3 + it % 6, N = 1 + it % 9;
      const Dims ad = it % 3 == 0 ? Dims{T, K} : Dims{B, T, K},
                 bd = it % 4 == 1 ? Dims{B, K, N} : Dims{K, N};
      Dims yd = ad.size() == 3 || bd.size() == 3 ? Dims{B, T, N} : Dims{T, N};
      GraphSpec plain, fused;
      for (GraphSpec* g : {&plain, &fused}) {
        g->inputs = {tensor_info("a", kFloat, dims_spec(ad)),
                     tensor_info("b", kFloat, dims_spec(bd))};
        g->outputs = {tensor_info("y", kFloat, dims_spec(yd))};
      }
      std::mt19937 wrng(it);
      plain.initializers = {random_init("bias", {N}, wrng)};
      plain.nodes = {NodeSpec("MatMul", {"a", "b"}, {"p"})};
      std::string pre = "p";
      if (with_bias) {
        plain.nodes.push_back(NodeSpec("Add", {"p", "bias"}, {"pb"}));
        pre = "pb";
      }
      for (auto& nd : act.nodes(pre, "y", plain)) plain.nodes.push_back(nd);
      fused.initializers = plain.initializers;
      std::vector<std::string> ins = {"a", "b"};
      if (with_bias) ins.push_back("bias");
      fused.nodes = {NodeSpec("FusedMatMul", ins, {"y"}, act.attrs(), "fm", kOnyx)};
      expect_same(with_onyx(fused), ModelSpec(plain),
                  {{"a", random_tensor(ad, rng, -2, 2)}, {"b", random_tensor(bd, rng)}},
                  "FusedMatMul " + act.name + (with_bias ? " + bias" : ""));
    }
  }
}

TEST(FusedOps, GeluMatchesOnnxGelu) {
  std::mt19937 rng(104);
  for (const char* approx : {"none", "tanh"}) {
    GraphSpec plain, fused;
    for (GraphSpec* g : {&plain, &fused}) {
      g->inputs = {tensor_info("x", kFloat, {3, 17})};
      g->outputs = {tensor_info("y", kFloat, {3, 17})};
    }
    plain.nodes = {NodeSpec("Gelu", {"x"}, {"y"}, {AttrSpec::String("approximate", approx)})};
    fused.nodes = {
        NodeSpec("Gelu", {"x"}, {"y"}, {AttrSpec::String("approximate", approx)}, "g", kOnyx)};
    expect_same(with_onyx(fused, 13), ModelSpec(plain, 20),
                {{"x", random_tensor({3, 17}, rng, -4, 4)}}, std::string("Gelu ") + approx);
  }
}

TEST(FusedOps, LayerNormalizationMatchesOnnx) {
  std::mt19937 rng(105);
  for (int64_t axis : {-1, -2, 1}) {
    const Dims xd{2, 5, 7};
    const Dims nd(xd.begin() + (axis < 0 ? 3 + axis : axis), xd.end());
    GraphSpec plain, fused;
    for (GraphSpec* g : {&plain, &fused}) {
      g->inputs = {tensor_info("x", kFloat, dims_spec(xd))};
      g->outputs = {tensor_info("y", kFloat, dims_spec(xd))};
      std::mt19937 wrng(static_cast<unsigned>(axis + 10));
      g->initializers = {random_init("s", nd, wrng), random_init("b", nd, wrng)};
    }
    std::vector<AttrSpec> at = {AttrSpec::Int("axis", axis), AttrSpec::Float("epsilon", 1e-3f)};
    plain.nodes = {NodeSpec("LayerNormalization", {"x", "s", "b"}, {"y"}, at)};
    fused.nodes = {NodeSpec("LayerNormalization", {"x", "s", "b"}, {"y"}, at, "ln", kOnyx)};
    expect_same(with_onyx(fused, 13), ModelSpec(plain, 17), {{"x", random_tensor(xd, rng, -3, 3)}},
                "LayerNormalization axis " + std::to_string(axis));
  }
}

/// Attention against Transpose + MatMul + Mul + Add + Softmax + MatMul.
void check_attention(const Dims& qd, const Dims& kd, const Dims& vd, const Dims& md, bool bool_mask,
                     std::optional<float> scale, const Dims& yd, std::mt19937& rng) {
  const bool masked = !md.empty() || bool_mask;
  GraphSpec plain, fused;
  for (GraphSpec* g : {&plain, &fused}) {
    g->inputs = {tensor_info("q", kFloat, dims_spec(qd)), tensor_info("k", kFloat, dims_spec(kd)),
                 tensor_info("v", kFloat, dims_spec(vd))};
    if (masked) g->inputs.push_back(tensor_info("m", bool_mask ? kBool : kFloat, dims_spec(md)));
    g->outputs = {tensor_info("y", kFloat, dims_spec(yd))};
  }
  std::vector<int64_t> perm(kd.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  const float s = scale ? *scale : 1.0f / std::sqrt(static_cast<float>(qd.back()));
  plain.initializers = {scalar_init("scale", s), scalar_init("zero", 0.0f),
                        scalar_init("ninf", -std::numeric_limits<float>::infinity())};
  plain.nodes = {NodeSpec("Transpose", {"k"}, {"kt"}, {AttrSpec::Ints("perm", perm)}),
                 NodeSpec("MatMul", {"q", "kt"}, {"qk"}), NodeSpec("Mul", {"qk", "scale"}, {"sc"})};
  std::string pre = "sc";
  if (masked) {
    std::string add = "m";
    if (bool_mask) {
      plain.nodes.push_back(NodeSpec("Where", {"m", "zero", "ninf"}, {"mf"}));
      add = "mf";
    }
    plain.nodes.push_back(NodeSpec("Add", {"sc", add}, {"scm"}));
    pre = "scm";
  }
  plain.nodes.push_back(NodeSpec("Softmax", {pre}, {"p"}, {AttrSpec::Int("axis", -1)}));
  plain.nodes.push_back(NodeSpec("MatMul", {"p", "v"}, {"y"}));
  std::vector<std::string> ins = {"q", "k", "v"};
  if (masked) ins.push_back("m");
  std::vector<AttrSpec> at;
  if (scale) at.push_back(AttrSpec::Float("scale", *scale));
  fused.nodes = {NodeSpec("Attention", ins, {"y"}, at, "att", kOnyx)};
  Feeds feeds = {{"q", random_tensor(qd, rng, -2, 2)},
                 {"k", random_tensor(kd, rng, -2, 2)},
                 {"v", random_tensor(vd, rng)}};
  if (masked) {
    if (bool_mask) {
      Tensor m(DType::kBool, md);
      // at least one true per row: the last key position is always attended
      for (int64_t i = 0; i < m.numel(); ++i)
        m.data<uint8_t>()[i] = (i % md.back() == md.back() - 1) || (rng() % 3 != 0);
      feeds.push_back({"m", m});
    } else {
      feeds.push_back({"m", random_tensor(md, rng, -3, 0)});
    }
  }
  expect_same(with_onyx(fused), ModelSpec(plain), feeds,
              "Attention q " + dims_str(qd) + " k " + dims_str(kd) + " mask " + dims_str(md), 1e-5,
              1e-6);
}

TEST(FusedOps, AttentionMatchesDecomposed) {
  std::mt19937 rng(106);
  check_attention({2, 4, 5, 8}, {2, 4, 7, 8}, {2, 4, 7, 3}, {}, false, std::nullopt, {2, 4, 5, 3},
                  rng);
  check_attention({6, 5, 16}, {6, 9, 16}, {6, 9, 16}, {5, 9}, false, 0.25f, {6, 5, 16}, rng);
  check_attention({2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 8}, {2, 1, 1, 6}, false, 0.125f,
                  {2, 3, 4, 8}, rng);
  check_attention({1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, false, std::nullopt, {1, 1, 1}, rng);
  check_attention({2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 5}, {4, 6}, true, std::nullopt,
                  {2, 3, 4, 5}, rng);
  // leading axes broadcast as MatMul's do: K and V shared by the heads, a mask per batch
  check_attention({2, 3, 4, 8}, {2, 1, 6, 8}, {1, 1, 6, 2}, {2, 1, 4, 6}, false, 0.5f, {2, 3, 4, 2},
                  rng);
  check_attention({5, 8}, {7, 8}, {7, 4}, {7}, false, std::nullopt, {5, 4}, rng);
}

ModelSpec one_node(NodeSpec n, std::vector<ValueInfoSpec> inputs, std::vector<TensorSpec> inits,
                   Dims out) {
  GraphSpec g;
  g.inputs = std::move(inputs);
  g.initializers = std::move(inits);
  g.outputs = {tensor_info("y", kFloat, dims_spec(out))};
  g.nodes = {std::move(n)};
  return with_onyx(g);
}

TEST(FusedOps, BadAttributesAndShapesAreErrorsNamingTheNode) {
  std::mt19937 rng(107);
  auto conv = [&](std::vector<AttrSpec> extra, Dims z) {
    std::vector<AttrSpec> at = {AttrSpec::Ints("kernel_shape", {1, 1})};
    for (auto& a : extra) at.push_back(a);
    std::vector<ValueInfoSpec> ins = {tensor_info("x", kFloat, {1, 2, 3, 3})};
    std::vector<std::string> names = {"x", "w", "b"};
    if (!z.empty()) {
      ins.push_back(tensor_info("z", kFloat, dims_spec(z)));
      names.push_back("z");
    }
    return one_node(NodeSpec("FusedConv", names, {"y"}, at, "bad_conv", kOnyx), ins,
                    {random_init("w", {4, 2, 1, 1}, rng), random_init("b", {4}, rng)},
                    {1, 4, 3, 3});
  };
  SessionOptions o;
  EXPECT_ONYX_ERROR(
      session_from_model(load_spec(conv({AttrSpec::String("activation", "Swoosh")}, {})), o),
      ErrorCode::kInvalidModel, "bad_conv", "Swoosh", "Relu");
  EXPECT_ONYX_ERROR(session_from_model(load_spec(conv({AttrSpec::String("activation", "Clip"),
                                                    AttrSpec::Floats("activation_params", {1.0f})},
                                                   {})),
                                    o),
                    ErrorCode::kInvalidModel, "bad_conv", "Clip",
                    "takes 2 activation_params, got 1");
  EXPECT_ONYX_ERROR(session_from_model(load_spec(conv({}, {1, 4, 3, 2})), o), ErrorCode::kInvalidModel,
                    "bad_conv", "Z [1, 4, 3, 2] must have the shape of Y [1, 4, 3, 3]");
  auto mm = one_node(NodeSpec("FusedMatMul", {"a", "b", "bias"}, {"y"}, {}, "bad_mm", kOnyx),
                     {tensor_info("a", kFloat, {2, 3}), tensor_info("b", kFloat, {3, 4})},
                     {random_init("bias", {5}, rng)}, {2, 4});
  EXPECT_ONYX_ERROR(session_from_model(load_spec(mm), o), ErrorCode::kInvalidModel, "bad_mm",
                    "bias [5]", "last axis");
  auto att = one_node(NodeSpec("Attention", {"q", "k", "v", "m"}, {"y"}, {}, "bad_att", kOnyx),
                      {tensor_info("q", kFloat, {2, 4, 8}), tensor_info("k", kFloat, {2, 6, 8}),
                       tensor_info("v", kFloat, {2, 6, 8}), tensor_info("m", kFloat, {2, 4, 5})},
                      {}, {2, 4, 8});
  EXPECT_ONYX_ERROR(session_from_model(load_spec(att), o), ErrorCode::kInvalidModel, "bad_att",
                    "mask [2, 4, 5]", "S = 6");
  auto att2 = one_node(NodeSpec("Attention", {"q", "k", "v"}, {"y"}, {}, "bad_att2", kOnyx),
                       {tensor_info("q", kFloat, {2, 4, 8}), tensor_info("k", kFloat, {2, 6, 7}),
                        tensor_info("v", kFloat, {2, 6, 8})},
                       {}, {2, 4, 8});
  EXPECT_ONYX_ERROR(session_from_model(load_spec(att2), o), ErrorCode::kInvalidModel, "bad_att2",
                    "head size");
}

}  // namespace
}  // namespace onyx::test
