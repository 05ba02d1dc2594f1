// The optimized MatMul / Gemm / FusedMatMul / FusedGemm kernels (src/kernels/cpu/matmul.cc)
// against the reference kernels. MatMul and Gemm: each random model runs in a session on
// the optimized kernels (1 and 3 threads) and in one with SessionOptions::reference_kernels,
// with B (and C) either fed or constant (an initializer: packed at planning). The fused ops:
// their kernel object, run directly on the node, against a reference session of the
// unfused graph (MatMul, Add, then the activation as ONNX ops). Tolerance: |got - ref| <=
// 2e-5 * (1 + |ref|) * max(1, K / 256) (float sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "format/loader.h"
#include "kernels/registry.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

Tensor random_float(const Dims& d, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::kFloat, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

std::vector<DimSpec> spec(const Dims& d) {
  return std::vector<DimSpec>(d.begin(), d.end());
}

TensorSpec initializer(const std::string& name, const Tensor& t) {
  return TensorSpec::floats(name, t.dims(),
                            std::vector<float>(t.data<float>(), t.data<float>() + t.numel()));
}

/// A graph being built: its inputs are fed or constant.
struct Builder {
  GraphSpec g;
  Feeds feeds;
  std::mt19937* rng;
  /// Adds a random float operand `name` of dims d: an initializer when constant, else a
  /// graph input with a feed.
  std::string operand(const std::string& name, const Dims& d, bool constant) {
    Tensor t = random_float(d, *rng);
    if (constant) {
      g.initializers.push_back(initializer(name, t));
    } else {
      g.inputs.push_back(tensor_info(name, kFloat, spec(d)));
      feeds.push_back({name, Value(t)});
    }
    return name;
  }
};

std::vector<Value> run_session(const ModelSpec& m, const Feeds& feeds, bool reference,
                               int threads) {
  const std::string bytes = m.serialize();
  SessionOptions opts;
  opts.threads = threads;
  opts.reference_kernels = reference;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  return s->run(feeds);
}

void expect_close(const Tensor& ref, const Tensor& got, double tol, const std::string& what) {
  ASSERT_EQ(ref.dims(), got.dims()) << what;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.data<float>()[i], g = got.data<float>()[i];
    ASSERT_LE(std::fabs(r - g), tol * (1 + std::fabs(r)))
        << what << " at " << i << ": " << g << " vs " << r;
  }
}

double tol_for(int64_t K) {
  return 2e-5 * std::max(1.0, static_cast<double>(K) / 256);
}

/// Runs the model on the reference kernels and on the optimized ones at 1 and 3 threads.
void expect_twins(const ModelSpec& m, const Feeds& feeds, double tol, const std::string& what) {
  const std::vector<Value> ref = run_session(m, feeds, true, 1);
  for (int threads : {1, 3}) {
    const std::vector<Value> got = run_session(m, feeds, false, threads);
    ASSERT_EQ(ref.size(), got.size());
    for (size_t o = 0; o < ref.size(); ++o)
      expect_close(ref[o].tensor(), got[o].tensor(), tol,
                   what + " threads " + std::to_string(threads));
  }
}

// numpy.matmul shapes: batch broadcasting both ways, one B for a batch of A, a batched B
// against one A, 1-D operands (vector-matrix, matrix-vector, dot), empty dims; B fed or
// constant.
TEST(MatMulKernels, MatMulMatchesReference) {
  std::mt19937 rng(31);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int64_t odd[] = {1, 2, 3, 7, 13, 17, 31, 67};
  for (int it = 0; it < 96; ++it) {
    const int64_t M = it < 64 ? odd[it % 8] : ri(1, 150),
                  N = it < 64 ? odd[(it / 8) % 8] : ri(1, 90);
    const int64_t K = it % 11 == 5 ? 300 : (it % 7 == 3 ? 1 : ri(1, 80));
    Dims ad{M, K}, bd{K, N}, yd{M, N};
    switch (it % 8) {
      case 1:  // broadcast batch both ways
        ad.insert(ad.begin(), {2, 1});
        bd.insert(bd.begin(), 3);
        yd.insert(yd.begin(), {2, 3});
        break;
      case 2:  // a batch of A, one B
        ad.insert(ad.begin(), {2, 3});
        yd.insert(yd.begin(), {2, 3});
        break;
      case 3:  // one A, a batch of B
        bd.insert(bd.begin(), 4);
        yd.insert(yd.begin(), 4);
        break;
      case 4:  // vector @ matrix
        ad = {K};
        yd = {N};
        break;
      case 5:  // (batch of) matrix @ vector
        ad.insert(ad.begin(), 2);
        bd = {K};
        yd = {2, M};
        break;
      case 6:  // dot product
        if (it % 16 == 6) {
          ad = {K};
          bd = {K};
          yd = {};
        }
        break;
      case 7:  // empty dims
        if (it % 3 == 0) ad = {0, K}, yd = {0, N};
        if (it % 3 == 1) bd = {K, 0}, yd = {M, 0};
        if (it % 3 == 2) ad = {M, 0}, bd = {0, N};
        break;
      default:
        break;
    }
    const bool constant_b = it % 2 == 0;
    Builder b{{}, {}, &rng};
    const std::string a = b.operand("a", ad, false), bn = b.operand("b", bd, constant_b);
    b.g.outputs = {tensor_info("y", kFloat, spec(yd))};
    b.g.nodes = {NodeSpec("MatMul", {a, bn}, {"y"})};
    expect_twins(
        ModelSpec(b.g), b.feeds, tol_for(K),
        "MatMul " + dims_str(ad) + " x " + dims_str(bd) + (constant_b ? " (constant B)" : ""));
  }
}

// Gemm: transA/transB, alpha, beta, every broadcast form of C, one row (GEMV), B and C fed
// or constant.
TEST(MatMulKernels, GemmMatchesReference) {
  std::mt19937 rng(32);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 84; ++it) {
    const int64_t M = it % 6 == 0 ? 1 : ri(1, 90), N = ri(1, 90), K = it % 9 == 0 ? 400 : ri(1, 90);
    const bool ta = it & 1, tb = (it >> 1) & 1;
    const float alpha = it % 3 == 0 ? 1.0f : 0.5f,
                beta = it % 4 == 0 ? 0.0f : (it % 4 == 1 ? 1.0f : -1.5f);
    const int cform = it % 7;  // none, scalar, [1], [N], [1, N], [M, 1], [M, N]
    const Dims forms[] = {{}, {}, {1}, {N}, {1, N}, {M, 1}, {M, N}};
    Builder b{{}, {}, &rng};
    std::vector<std::string> ins = {b.operand("a", ta ? Dims{K, M} : Dims{M, K}, false),
                                    b.operand("b", tb ? Dims{N, K} : Dims{K, N}, it % 3 != 2)};
    if (cform != 0) ins.push_back(b.operand("c", forms[cform], it % 5 < 2));
    b.g.outputs = {tensor_info("y", kFloat, {M, N})};
    b.g.nodes = {NodeSpec("Gemm", ins, {"y"},
                          {AttrSpec::Int("transA", ta), AttrSpec::Int("transB", tb),
                           AttrSpec::Float("alpha", alpha), AttrSpec::Float("beta", beta)})};
    expect_twins(ModelSpec(b.g), b.feeds, tol_for(K),
                 "Gemm M " + std::to_string(M) + " N " + std::to_string(N) + " K " +
                     std::to_string(K) + " ta " + std::to_string(ta) + " tb " + std::to_string(tb) +
                     " C form " + std::to_string(cform) + " beta " + std::to_string(beta));
  }
}

// ---- the kernel objects, made and run directly on a node ------------------------------

/// A loaded one-node model and the kernel the registry's optimized candidates make for it.
struct Direct {
  std::shared_ptr<ir::Model> model;
  std::unique_ptr<kernels::Kernel> kernel;
  std::unique_ptr<ThreadPool> pool;
  const ir::Node& node() const { return model->graph->nodes[0]; }
};

/// Loads m and makes the optimized kernel of its only node; `constants[i]` non-null marks
/// input i as known at planning. kernel is null when every candidate declined.
Direct make_direct(const ModelSpec& m, const std::vector<const Tensor*>& constants, int threads) {
  Direct d;
  const std::string bytes = m.serialize();
  d.model = format::load_model_from_bytes(bytes.data(), bytes.size());
  if (threads > 1) d.pool = std::make_unique<ThreadPool>(threads);
  const ir::Node& n = d.node();
  const auto& reg = kernels::default_registry();
  const kernels::KernelDef* ref = reg.find(n.domain, n.op_type, n.opset, DType::kFloat);
  kernels::KernelInit init{n, {}, {}, constants, ref ? ref->fn : nullptr, d.pool.get()};
  for (const kernels::KernelDef* def :
       reg.find_optimized(n.domain, n.op_type, n.opset, DType::kFloat))
    if ((d.kernel = def->factory(init))) break;
  return d;
}

/// Runs a direct kernel on inputs (null: omitted) into a fresh output of dims out.
Tensor run_direct(Direct& d, const std::vector<const Tensor*>& inputs, const Dims& out) {
  std::vector<Value> vals;
  vals.reserve(inputs.size());
  for (const Tensor* t : inputs) vals.push_back(t ? Value(*t) : Value::none());
  std::vector<const Value*> ptrs;
  for (const Value& v : vals) ptrs.push_back(&v);
  std::vector<Value> outs{Value(Tensor(DType::kFloat, out))};
  kernels::KernelContext ctx(d.node(), ptrs, &outs, nullptr, d.pool.get());
  d.kernel->run(ctx);
  return outs[0].tensor();
}

ModelSpec fused_model(const std::string& op, const std::vector<std::string>& ins,
                      std::vector<AttrSpec> attrs) {
  GraphSpec g;
  for (const std::string& i : ins)
    if (!i.empty()) g.inputs.push_back(tensor_info(i, kFloat, {DimSpec::unknown()}));
  g.outputs = {tensor_info("y", kFloat, {DimSpec::unknown()})};
  g.nodes = {NodeSpec(op, ins, {"y"}, std::move(attrs), "", "ai.onyx")};
  ModelSpec m(g);
  m.opsets.push_back({"ai.onyx", 1});
  return m;
}

struct ActCase {
  const char* name;
  std::vector<float> params;
};

const ActCase kActs[] = {{"", {}},
                         {"Relu", {}},
                         {"Clip", {-0.25f, 0.5f}},
                         {"Sigmoid", {}},
                         {"Tanh", {}},
                         {"LeakyRelu", {0.1f}},
                         {"HardSigmoid", {0.3f, 0.4f}},
                         {"HardSwish", {}},
                         {"SiLU", {}},
                         {"Gelu", {}},
                         {"GeluTanh", {}}};

/// Appends ONNX nodes computing act(x) into `y`; new values are named after `y`.
void add_activation(GraphSpec& g, const ActCase& a, const std::string& x, const std::string& y) {
  auto c = [&](const std::string& n, float v) {
    g.initializers.push_back(TensorSpec::floats(y + n, {}, {v}));
    return y + n;
  };
  const std::string name = a.name;
  if (name.empty()) {
    g.nodes.push_back(NodeSpec("Identity", {x}, {y}));
  } else if (name == "Relu" || name == "Sigmoid" || name == "Tanh" || name == "HardSwish") {
    g.nodes.push_back(NodeSpec(name, {x}, {y}));
  } else if (name == "Clip") {
    g.nodes.push_back(NodeSpec("Clip", {x, c("_lo", a.params[0]), c("_hi", a.params[1])}, {y}));
  } else if (name == "LeakyRelu") {
    g.nodes.push_back(NodeSpec("LeakyRelu", {x}, {y}, {AttrSpec::Float("alpha", a.params[0])}));
  } else if (name == "HardSigmoid") {
    g.nodes.push_back(
        NodeSpec("HardSigmoid", {x}, {y},
                 {AttrSpec::Float("alpha", a.params[0]), AttrSpec::Float("beta", a.params[1])}));
  } else if (name == "SiLU") {
    g.nodes.push_back(NodeSpec("Sigmoid", {x}, {y + "_s"}));
    g.nodes.push_back(NodeSpec("Mul", {x, y + "_s"}, {y}));
  } else if (name == "Gelu") {  // 0.5 x (1 + erf(x / sqrt 2))
    g.nodes.push_back(NodeSpec("Mul", {x, c("_r", 0.70710678f)}, {y + "_a"}));
    g.nodes.push_back(NodeSpec("Erf", {y + "_a"}, {y + "_e"}));
    g.nodes.push_back(NodeSpec("Add", {y + "_e", c("_one", 1.0f)}, {y + "_p"}));
    g.nodes.push_back(NodeSpec("Mul", {x, y + "_p"}, {y + "_m"}));
    g.nodes.push_back(NodeSpec("Mul", {y + "_m", c("_half", 0.5f)}, {y}));
  } else {  // GeluTanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    g.nodes.push_back(NodeSpec("Mul", {x, x}, {y + "_x2"}));
    g.nodes.push_back(NodeSpec("Mul", {y + "_x2", x}, {y + "_x3"}));
    g.nodes.push_back(NodeSpec("Mul", {y + "_x3", c("_k", 0.044715f)}, {y + "_kx3"}));
    g.nodes.push_back(NodeSpec("Add", {x, y + "_kx3"}, {y + "_in"}));
    g.nodes.push_back(NodeSpec("Mul", {y + "_in", c("_s", 0.7978845608f)}, {y + "_sc"}));
    g.nodes.push_back(NodeSpec("Tanh", {y + "_sc"}, {y + "_t"}));
    g.nodes.push_back(NodeSpec("Add", {y + "_t", c("_one", 1.0f)}, {y + "_p"}));
    g.nodes.push_back(NodeSpec("Mul", {x, y + "_p"}, {y + "_m"}));
    g.nodes.push_back(NodeSpec("Mul", {y + "_m", c("_half", 0.5f)}, {y}));
  }
}

std::vector<AttrSpec> act_attrs(const ActCase& a) {
  std::vector<AttrSpec> v = {AttrSpec::String("activation", a.name)};
  if (!a.params.empty()) v.push_back(AttrSpec::Floats("activation_params", a.params));
  return v;
}

// FusedMatMul(A, B, bias?) = act(A @ B + bias) against MatMul -> Add -> act on the
// reference kernels; batched A, 1-D A and B, B constant (packed) or not, 1 and 3 threads.
TEST(MatMulKernels, FusedMatMulMatchesUnfusedReference) {
  std::mt19937 rng(33);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 66; ++it) {
    const ActCase& act = kActs[it % 11];
    const int64_t M = it % 5 == 0 ? 1 : ri(1, 70), N = it % 9 == 4 ? 1 : ri(1, 70), K = ri(1, 120);
    Dims ad{M, K}, bd{K, N};
    if (it % 4 == 1) ad.insert(ad.begin(), 3);
    if (it % 6 == 3) ad = {K};
    if (it % 8 == 7) bd = {K};
    const bool bias = it % 3 != 2, constant_b = it % 2 == 0;
    const int64_t bias_n = bd.size() == 1 ? 1 : N;  // the N of the product: 1 for a vector B
    const Tensor a = random_float(ad, rng), b = random_float(bd, rng), c = random_float({bias_n}, rng);
    // The oracle: MatMul, Add, activation, on the reference kernels.
    GraphSpec g;
    g.inputs = {tensor_info("a", kFloat, spec(ad)), tensor_info("b", kFloat, spec(bd)),
                tensor_info("bias", kFloat, {bias_n})};
    g.outputs = {tensor_info("y", kFloat, {DimSpec::unknown()})};
    g.nodes = {NodeSpec("MatMul", {"a", "b"}, {"mm"})};
    if (bias) g.nodes.push_back(NodeSpec("Add", {"mm", "bias"}, {"pre"}));
    add_activation(g, act, bias ? "pre" : "mm", "y");
    const Tensor ref =
        run_session(ModelSpec(g), {{"a", a}, {"b", b}, {"bias", c}}, true, 1)[0].tensor();
    for (int threads : {1, 3}) {
      Direct d =
          make_direct(fused_model("FusedMatMul", {"a", "b", bias ? "bias" : ""}, act_attrs(act)),
                      {nullptr, constant_b ? &b : nullptr, nullptr}, threads);
      ASSERT_TRUE(d.kernel) << "FusedMatMul with activation '" << act.name << "' was declined";
      const Tensor got = run_direct(d, {&a, &b, bias ? &c : nullptr}, ref.dims());
      expect_close(ref, got, tol_for(K) + 2e-6,
                   std::string("FusedMatMul ") + act.name + " " + dims_str(ad) + " x " +
                       dims_str(bd) + " threads " + std::to_string(threads));
    }
  }
}

// FusedGemm = act(Gemm) against Gemm -> act on the reference kernels: transposes, alpha,
// beta, C forms, B constant (packed) or not.
TEST(MatMulKernels, FusedGemmMatchesUnfusedReference) {
  std::mt19937 rng(34);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 66; ++it) {
    const ActCase& act = kActs[(it * 7) % 11];
    const int64_t M = it % 5 == 0 ? 1 : ri(1, 70), N = ri(1, 70), K = ri(1, 120);
    const bool ta = it & 1, tb = (it >> 1) & 1, constant_b = it % 3 == 0;
    const float alpha = it % 4 == 0 ? 0.5f : 1.0f, beta = it % 3 == 1 ? 2.0f : 1.0f;
    const Dims forms[] = {{}, {N}, {1, N}, {M, 1}, {M, N}};
    const int cform = it % 6;  // 5: no C
    const Tensor a = random_float(ta ? Dims{K, M} : Dims{M, K}, rng);
    const Tensor b = random_float(tb ? Dims{N, K} : Dims{K, N}, rng);
    const Tensor c = random_float(cform < 5 ? forms[cform] : Dims{1}, rng);
    const std::vector<AttrSpec> gemm_attrs = {
        AttrSpec::Int("transA", ta), AttrSpec::Int("transB", tb), AttrSpec::Float("alpha", alpha),
        AttrSpec::Float("beta", beta)};
    GraphSpec g;
    g.inputs = {tensor_info("a", kFloat, spec(a.dims())), tensor_info("b", kFloat, spec(b.dims()))};
    std::vector<std::string> ins = {"a", "b"};
    Feeds feeds = {{"a", a}, {"b", b}};
    if (cform < 5) {
      g.inputs.push_back(tensor_info("c", kFloat, spec(c.dims())));
      ins.push_back("c");
      feeds.push_back({"c", c});
    }
    g.outputs = {tensor_info("y", kFloat, {M, N})};
    g.nodes = {NodeSpec("Gemm", ins, {"g"}, gemm_attrs)};
    add_activation(g, act, "g", "y");
    const Tensor ref = run_session(ModelSpec(g), feeds, true, 1)[0].tensor();
    std::vector<AttrSpec> attrs = gemm_attrs;
    for (AttrSpec& x : act_attrs(act)) attrs.push_back(x);
    for (int threads : {1, 3}) {
      Direct d = make_direct(fused_model("FusedGemm", ins, attrs),
                             {nullptr, constant_b ? &b : nullptr, nullptr}, threads);
      ASSERT_TRUE(d.kernel) << "FusedGemm with activation '" << act.name << "' was declined";
      const Tensor got = run_direct(d, {&a, &b, cform < 5 ? &c : nullptr}, {M, N});
      expect_close(ref, got, tol_for(K) + 2e-6,
                   std::string("FusedGemm ") + act.name + " M " + std::to_string(M) + " N " +
                       std::to_string(N) + " K " + std::to_string(K) + " C form " +
                       std::to_string(cform) + " threads " + std::to_string(threads));
    }
  }
}

// Which kernel each node gets: constant 2-D weights are packed at planning; activations the
// epilogue does not take, or the wrong number of parameters, are declined (the reference
// runs them); other dtypes have no optimized candidate.
TEST(MatMulKernels, KernelChoice) {
  std::mt19937 rng(35);
  const Tensor w = random_float({8, 5}, rng), w3 = random_float({2, 8, 5}, rng);
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {4, 8}), tensor_info("b", kFloat, {8, 5})};
  g.outputs = {tensor_info("y", kFloat, {4, 5})};
  g.nodes = {NodeSpec("MatMul", {"a", "b"}, {"y"})};
  EXPECT_EQ(make_direct(ModelSpec(g), {nullptr, &w}, 1).kernel->name(), "cpu.matmul.packed");
  EXPECT_EQ(make_direct(ModelSpec(g), {nullptr, &w3}, 1).kernel->name(), "cpu.matmul");
  EXPECT_EQ(make_direct(ModelSpec(g), {nullptr, nullptr}, 1).kernel->name(), "cpu.matmul");
  g.nodes = {NodeSpec("Gemm", {"a", "b"}, {"y"}, {AttrSpec::Int("transB", 1)})};
  EXPECT_EQ(make_direct(ModelSpec(g), {nullptr, &w}, 1).kernel->name(), "cpu.gemm.packed");
  EXPECT_TRUE(make_direct(ModelSpec(g), {nullptr, &w}, 1).kernel->overwrites_outputs());
  for (const ActCase& bad :
       {ActCase{"Softplus", {}}, ActCase{"Clip", {0.0f}}, ActCase{"LeakyRelu", {}},
        ActCase{"Relu", {1.0f}}, ActCase{"relu", {}}}) {
    EXPECT_FALSE(make_direct(fused_model("FusedGemm", {"a", "b"}, act_attrs(bad)), {}, 1).kernel)
        << bad.name;
    EXPECT_FALSE(make_direct(fused_model("FusedMatMul", {"a", "b"}, act_attrs(bad)), {}, 1).kernel)
        << bad.name;
  }
  EXPECT_TRUE(kernels::default_registry().find_optimized("", "MatMul", 17, DType::kInt32).empty());
  EXPECT_TRUE(kernels::default_registry().find_optimized("", "Gemm", 17, DType::kDouble).empty());
}

// A bias that is not [N] is an error naming the bias and the shapes.
TEST(MatMulKernels, FusedMatMulBadBiasIsAnError) {
  std::mt19937 rng(36);
  const Tensor a = random_float({3, 4}, rng), b = random_float({4, 5}, rng),
               bias = random_float({6}, rng);
  Direct d =
      make_direct(fused_model("FusedMatMul", {"a", "b", "bias"}, act_attrs(kActs[1])), {}, 1);
  ASSERT_TRUE(d.kernel);
  EXPECT_ONYX_ERROR(run_direct(d, {&a, &b, &bias}, {3, 5}), ErrorCode::kRuntime, "FusedMatMul",
                    "bias", "[5]", "[6]");
}

}  // namespace
}  // namespace onyx::test
