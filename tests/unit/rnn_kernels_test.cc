// Reference-parity tests of the optimized float RNN, GRU and LSTM kernels
// (src/kernels/cpu/rnn.cc): each random case runs once through a reference session
// (SessionOptions::reference_kernels: the double loops of src/kernels/reference/rnn.cc) and
// once through the optimized kernel object, made by the registry's factory as the planner
// makes it (weights constant at planning or not) and run directly at 1 and 3 threads with
// a reference callback that fails the test, so a valid case the kernel hands to the
// reference fails instead of passing on the oracle's numbers. Outputs start as NaN, so an
// element the kernel does not write fails too. Cases cover every direction, both layouts,
// batch 1..9 (the few-row and the GEMM recurrence), input size 0, empty sequences, hidden sizes not
// a multiple of the vector width, sequence_lens with zeros, initial states, peepholes, clip,
// input_forget, linear_before_reset, every activation with and without alpha/beta, and omitted
// outputs.
//
// Tolerance: |got - ref| <= 2e-4 * (1 + |ref|): float sums of up to ~100 products and
// SIMD exp/tanh (a few ulp) against double, carried through up to 12 steps.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/loader.h"
#include "kernels/registry.h"
#include "model_builder.h"
#include "onyx/error.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

constexpr double kTol = 2e-4;

const char* const kInputNames[8] = {"x", "w", "r", "b", "lens", "h0", "c0", "p"};

/// One random recurrent case: the op, its dims and attributes and which inputs and
/// outputs it has.
struct RnnCase {
  std::string op = "LSTM";
  int64_t S = 1, B = 1, I = 1, H = 1, layout = 0;
  std::string dir = "forward";
  bool bias = false, seq = false, init = false, peep = false, lbr = false, input_forget = false;
  float clip = 0;  // 0: no clip attribute
  std::vector<std::string> acts;
  std::vector<float> alphas, betas;
  bool w_const = false;
  bool want_y = true, want_yh = true, want_yc = true;

  int64_t nd() const { return dir == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : (op == "GRU" ? 3 : 4); }
  bool lstm() const { return op == "LSTM"; }
  Dims x_dims() const { return layout == 0 ? Dims{S, B, I} : Dims{B, S, I}; }
  Dims state_dims() const { return layout == 0 ? Dims{nd(), B, H} : Dims{B, nd(), H}; }
  Dims y_dims() const { return layout == 0 ? Dims{S, nd(), B, H} : Dims{B, S, nd(), H}; }
  size_t num_outputs() const { return lstm() ? 3 : 2; }
  bool wants(size_t o) const { return o == 0 ? want_y : (o == 1 ? want_yh : want_yc); }
  Dims out_dims(size_t o) const { return o == 0 ? y_dims() : state_dims(); }
  /// Input i is given.
  bool has(size_t i) const {
    switch (i) {
      case 3:
        return bias;
      case 4:
        return seq;
      case 5:
        return init;
      case 6:
        return lstm() && init;
      case 7:
        return lstm() && peep;
      default:
        return i < 3;
    }
  }
  size_t num_inputs() const { return lstm() ? 8 : 6; }

  std::vector<AttrSpec> attrs() const {
    std::vector<AttrSpec> a = {AttrSpec::String("direction", dir), AttrSpec::Int("hidden_size", H),
                               AttrSpec::Int("layout", layout)};
    if (clip > 0) a.push_back(AttrSpec::Float("clip", clip));
    if (lbr) a.push_back(AttrSpec::Int("linear_before_reset", 1));
    if (input_forget) a.push_back(AttrSpec::Int("input_forget", 1));
    if (!acts.empty()) a.push_back(AttrSpec::Strings("activations", acts));
    if (!alphas.empty()) a.push_back(AttrSpec::Floats("activation_alpha", alphas));
    if (!betas.empty()) a.push_back(AttrSpec::Floats("activation_beta", betas));
    return a;
  }

  std::string str() const {
    std::string s = op + " " + dir + " x " + dims_str(x_dims()) + " H " + std::to_string(H) +
                    " layout " + std::to_string(layout);
    if (bias) s += " bias";
    if (seq) s += " lens";
    if (init) s += " init";
    if (peep && lstm()) s += " peep";
    if (lbr) s += " lbr";
    if (input_forget) s += " input_forget";
    if (clip > 0) s += " clip";
    for (const std::string& n : acts) s += " " + n;
    if (!alphas.empty()) s += " alphas";
    if (!betas.empty()) s += " betas";
    if (w_const) s += " const";
    s += std::string(" outs ") + (want_y ? "Y" : "-") + (want_yh ? "h" : "-") +
         (lstm() ? (want_yc ? "c" : "-") : "");
    return s;
  }
};

/// The inputs of a case, by input index (empty where not given).
struct CaseData {
  std::vector<Tensor> in = std::vector<Tensor>(8);
};

Tensor random_float(Dims d, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t(DType::kFloat, std::move(d));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

CaseData make_data(const RnnCase& c, std::mt19937& rng) {
  CaseData d;
  const int64_t G = c.gates() * c.H, nd = c.nd();
  // Weights scaled so the states stay O(1) (the unbounded activations do not blow up).
  const float ws = 1.5f / std::sqrt(static_cast<float>(c.I + c.H));
  d.in[0] = random_float(c.x_dims(), 1.0f, rng);
  d.in[1] = random_float({nd, G, c.I}, ws, rng);
  d.in[2] = random_float({nd, G, c.H}, ws, rng);
  if (c.bias) d.in[3] = random_float({nd, 2 * G}, 0.5f, rng);
  if (c.seq) {
    std::vector<int32_t> lens(static_cast<size_t>(c.B));
    for (auto& l : lens) l = std::uniform_int_distribution<int>(0, static_cast<int>(c.S))(rng);
    d.in[4] = make_tensor<int32_t>(DType::kInt32, {c.B}, lens);
  }
  if (c.init) d.in[5] = random_float(c.state_dims(), 1.0f, rng);
  if (c.lstm() && c.init) d.in[6] = random_float(c.state_dims(), 1.0f, rng);
  if (c.lstm() && c.peep) d.in[7] = random_float({nd, 3 * c.H}, 0.5f, rng);
  return d;
}

/// The case as a model whose inputs are all graph inputs, and its feeds.
std::pair<ModelSpec, Feeds> rnn_model(const RnnCase& c, const CaseData& d) {
  GraphSpec g;
  Feeds feeds;
  std::vector<std::string> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has(i)) {
      ins.push_back("");
      continue;
    }
    const Tensor& t = d.in[i];
    const int32_t elem = t.dtype() == DType::kInt32 ? kInt32 : kFloat;
    g.inputs.push_back(
        tensor_info(kInputNames[i], elem, std::vector<DimSpec>(t.dims().begin(), t.dims().end())));
    feeds.push_back({kInputNames[i], Value(t)});
    ins.push_back(kInputNames[i]);
  }
  const char* out_names[3] = {"y", "yh", "yc"};
  std::vector<std::string> outs;
  for (size_t o = 0; o < c.num_outputs(); ++o) {
    if (!c.wants(o)) {
      outs.push_back("");
      continue;
    }
    const Dims od = c.out_dims(o);
    g.outputs.push_back(
        tensor_info(out_names[o], kFloat, std::vector<DimSpec>(od.begin(), od.end())));
    outs.push_back(out_names[o]);
  }
  g.nodes = {NodeSpec(c.op, ins, outs, c.attrs())};
  return {ModelSpec(g, 14), feeds};
}

std::vector<Tensor> run_session(const ModelSpec& m, const Feeds& feeds, bool reference,
                                int threads) {
  const std::string bytes = m.serialize();
  SessionOptions opts;
  opts.threads = threads;
  opts.reference_kernels = reference;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  std::vector<Tensor> out;
  for (const Value& v : s->run(feeds)) out.push_back(v.tensor());
  return out;
}

void no_reference(kernels::KernelContext& ctx) {
  ctx.fail("the optimized recurrent kernel handed a valid case to the reference");
}

ir::Attribute attribute(const AttrSpec& a) {
  ir::Attribute at;
  at.name = a.name;
  switch (a.type) {
    case AttrSpec::kInt:
      at.type = ir::Attribute::Type::kInt;
      at.i = *a.i;
      break;
    case AttrSpec::kFloat:
      at.type = ir::Attribute::Type::kFloat;
      at.f = *a.f;
      break;
    case AttrSpec::kFloats:
      at.type = ir::Attribute::Type::kFloats;
      at.floats = a.floats;
      break;
    case AttrSpec::kStrings:
      at.type = ir::Attribute::Type::kStrings;
      at.strings = a.strings;
      break;
    default:
      at.type = ir::Attribute::Type::kString;
      at.s = *a.s;
      break;
  }
  return at;
}

ir::Node make_node(const RnnCase& c) {
  ir::Node node;
  node.op_type = c.op;
  node.opset = 14;
  for (size_t i = 0; i < c.num_inputs(); ++i) node.inputs.push_back(c.has(i) ? kInputNames[i] : "");
  const char* out_names[3] = {"y", "yh", "yc"};
  for (size_t o = 0; o < c.num_outputs(); ++o)
    node.outputs.push_back(c.wants(o) ? out_names[o] : "");
  for (const AttrSpec& a : c.attrs()) node.attrs.push_back(attribute(a));
  return node;
}

/// The factory of the optimized kernel for op (the only one registered for it).
kernels::KernelFactory optimized_factory(const std::string& op) {
  const std::vector<const kernels::KernelDef*> defs =
      kernels::default_registry().find_optimized("", op, 14, DType::kFloat);
  if (defs.empty()) throw std::runtime_error("no optimized " + op + " kernel is registered");
  return defs[0]->factory;
}

/// The optimized kernel object run directly on the case's tensors; outputs start as NaN.
std::vector<Tensor> run_kernel(const RnnCase& c, const CaseData& d, int threads) {
  const ir::Node node = make_node(c);
  ThreadPool pool(threads);
  std::vector<const Tensor*> constants(c.num_inputs(), nullptr);
  if (c.w_const)
    for (size_t i : {1, 2, 3, 7})
      if (i < c.num_inputs() && c.has(i)) constants[i] = &d.in[i];
  kernels::KernelInit init{node, {}, {}, constants, no_reference, &pool};
  std::unique_ptr<kernels::Kernel> k = optimized_factory(c.op)(init);
  if (!k) throw std::runtime_error("the optimized kernel declined " + c.str());
  if (!k->overwrites_outputs())
    throw std::runtime_error(c.op + " does not say it overwrites its outputs");
  std::vector<Value> vals;
  vals.reserve(c.num_inputs());
  for (size_t i = 0; i < c.num_inputs(); ++i) vals.push_back(c.has(i) ? Value(d.in[i]) : Value());
  std::vector<const Value*> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.has(i) ? &vals[i] : nullptr);
  std::vector<Value> outs;
  for (size_t o = 0; o < c.num_outputs(); ++o) {
    Tensor t(DType::kFloat, c.wants(o) ? c.out_dims(o) : Dims{0});
    for (int64_t e = 0; e < t.numel(); ++e) t.data<float>()[e] = std::nanf("");
    outs.push_back(Value(t));
  }
  kernels::KernelContext ctx(node, ins, &outs, nullptr, &pool);
  k->run(ctx);
  std::vector<Tensor> got;
  for (size_t o = 0; o < c.num_outputs(); ++o)
    if (c.wants(o)) got.push_back(outs[o].tensor());
  return got;
}

void expect_close(const std::vector<Tensor>& ref, const std::vector<Tensor>& got,
                  const std::string& what) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  for (size_t o = 0; o < ref.size(); ++o) {
    ASSERT_EQ(ref[o].dims(), got[o].dims()) << what << " output " << o;
    for (int64_t i = 0; i < ref[o].numel(); ++i) {
      const double r = ref[o].data<float>()[i], g = got[o].data<float>()[i];
      ASSERT_LE(std::fabs(r - g), kTol * (1 + std::fabs(r)))
          << what << " output " << o << " at " << i << ": " << g << " vs " << r;
    }
  }
}

/// Every activation name with the alpha/beta counts it consumes.
const std::vector<std::string>& all_activations() {
  static const std::vector<std::string> a = {
      "Relu",       "Tanh",        "Sigmoid", "Affine",   "LeakyRelu", "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",     "Softsign", "Softplus"};
  return a;
}

RnnCase random_case(const std::string& op, int it, std::mt19937& rng) {
  auto ri = [&](int lo, int hi) {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  static const char* const dirs[] = {"forward", "reverse", "bidirectional"};
  static const int64_t hs[] = {1, 3, 8, 16, 17, 31, 65};
  RnnCase c;
  c.op = op;
  c.dir = dirs[it % 3];
  c.layout = (it / 3) % 2;
  c.S = it % 11 == 10 ? 0 : ri(1, 12);
  c.B = it % 4 == 0 ? 1 : (it % 4 == 1 ? ri(2, 4) : ri(1, 9));
  c.I = it % 13 == 12 ? 1 : (it % 17 == 16 ? 0 : ri(1, 40));
  c.H = it < 14 ? hs[it % 7] : ri(1, 40);
  c.bias = it % 5 != 2;
  c.seq = it % 4 == 1 || it % 7 == 3;
  c.init = it % 3 == 2;
  c.peep = op == "LSTM" && it % 5 == 3;
  c.lbr = op == "GRU" && it % 2 == 1;
  c.input_forget = op == "LSTM" && it % 9 == 7;
  if (it % 8 == 5) c.clip = 0.7f;
  c.w_const = it % 2 == 0;
  if (it % 3 == 1) {  // custom activations: one set per direction or one for both
    const size_t per_dir = op == "RNN" ? 1 : (op == "GRU" ? 2 : 3);
    const size_t n = c.nd() == 2 && it % 2 == 0 ? per_dir : per_dir * static_cast<size_t>(c.nd());
    for (size_t k = 0; k < n; ++k)
      c.acts.push_back(all_activations()[static_cast<size_t>(ri(0, 10))]);
    if (it % 6 == 1) c.alphas = {0.3f, 1.7f, 0.05f};
    if (it % 12 == 1) c.betas = {0.4f, -0.6f};
  }
  c.want_y = it % 10 != 6;
  c.want_yh = it % 10 != 8;
  c.want_yc = it % 7 != 4;
  return c;
}

void check_op(const std::string& op, unsigned seed, int cases) {
  std::mt19937 rng(seed);
  for (int it = 0; it < cases; ++it) {
    const RnnCase c = random_case(op, it, rng);
    const CaseData d = make_data(c, rng);
    const auto [model, feeds] = rnn_model(c, d);
    const std::vector<Tensor> ref = run_session(model, feeds, true, 1);
    for (int threads : {1, 3}) {
      SCOPED_TRACE(c.str() + " threads " + std::to_string(threads));
      expect_close(ref, run_kernel(c, d, threads), c.str());
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(RnnKernels, LstmMatchesReference) {
  check_op("LSTM", 31, 60);
}
TEST(RnnKernels, GruMatchesReference) {
  check_op("GRU", 32, 60);
}
TEST(RnnKernels, RnnMatchesReference) {
  check_op("RNN", 33, 45);
}

// Large enough that the input projection and the recurrence are threaded (batch chunks
// per direction), with constant weights.
TEST(RnnKernels, LargeBatchesSplitAcrossThreads) {
  std::mt19937 rng(34);
  const char* ops[] = {"LSTM", "GRU", "RNN"};
  for (int it = 0; it < 6; ++it) {
    RnnCase c;
    c.op = ops[it % 3];
    c.dir = it < 3 ? "bidirectional" : "forward";
    c.S = 9;
    c.B = 13;
    c.I = 24;
    c.H = 67;
    c.bias = true;
    c.seq = it % 2 == 1;
    c.init = true;
    c.lbr = c.op == "GRU" && it > 2;
    c.w_const = true;
    const CaseData d = make_data(c, rng);
    const auto [model, feeds] = rnn_model(c, d);
    const std::vector<Tensor> ref = run_session(model, feeds, true, 1);
    expect_close(ref, run_kernel(c, d, 4), c.str());
  }
}

// Through sessions with the weights as initializers (the planner's constants): the
// registry picks the optimized kernels and their outputs match the reference's.
TEST(RnnKernels, SessionWithInitializersMatchesReference) {
  std::mt19937 rng(35);
  const char* ops[] = {"LSTM", "GRU", "RNN"};
  for (int it = 0; it < 9; ++it) {
    RnnCase c;
    c.op = ops[it % 3];
    c.dir = it % 2 ? "bidirectional" : "reverse";
    c.layout = it / 3 == 1 ? 1 : 0;
    c.S = 5 + it;
    c.B = 1 + it % 3;
    c.I = 7;
    c.H = 19;
    c.bias = true;
    c.lbr = it == 4;
    const CaseData d = make_data(c, rng);
    auto [model, feeds] = rnn_model(c, d);
    // W, R and B move from the graph inputs to initializers.
    GraphSpec& g = *model.graph;
    for (size_t i : {1, 2, 3}) {
      const Tensor& t = d.in[i];
      g.initializers.push_back(
          TensorSpec::floats(kInputNames[i], t.dims(),
                             std::vector<float>(t.data<float>(), t.data<float>() + t.numel())));
    }
    std::erase_if(g.inputs, [](const ValueInfoSpec& v) {
      return v.name == "w" || v.name == "r" || v.name == "b";
    });
    std::erase_if(feeds,
                  [](const auto& f) { return f.first == "w" || f.first == "r" || f.first == "b"; });
    const std::vector<Tensor> ref = run_session(model, feeds, true, 1);
    expect_close(ref, run_session(model, feeds, false, 2), c.str() + " session");
  }
}

/// Runs the model on the optimized and on the reference kernels: both must throw
/// onyx::Error with the same code and message, which contains `part`.
void expect_same_error(const ModelSpec& model, const Feeds& feeds, const std::string& part) {
  const Caught ref = catch_error([&] { run_session(model, feeds, true, 1); });
  const Caught got = catch_error([&] { run_session(model, feeds, false, 2); });
  ASSERT_EQ(ref.kind, Caught::Kind::kOnyxError) << ref.message;
  ASSERT_EQ(got.kind, Caught::Kind::kOnyxError) << got.message;
  EXPECT_EQ(code_name(got.code), code_name(ref.code));
  EXPECT_EQ(got.message, ref.message);
  EXPECT_TRUE(contains(got.message, part)) << got.message;
}

// Cases the optimized kernels decline at planning or hand to the reference at run time
// end in the reference's errors, as they would without the optimized kernels.
TEST(RnnKernels, BadCasesReachTheReferenceErrors) {
  std::mt19937 rng(36);
  RnnCase c;
  c.op = "GRU";
  c.S = 3;
  c.B = 2;
  c.I = 4;
  c.H = 5;
  CaseData d = make_data(c, rng);
  {
    RnnCase bad = c;
    bad.acts = {"Sigmoid", "Tanh", "Tanh"};
    const auto [model, feeds] = rnn_model(bad, d);
    expect_same_error(model, feeds, "activations has 3 entries, expected 2");
  }
  {
    RnnCase bad = c;
    bad.acts = {"Sigmoid", "Gelu"};
    const auto [model, feeds] = rnn_model(bad, d);
    expect_same_error(model, feeds, "Gelu");
  }
  {
    RnnCase bad = c;
    bad.seq = true;
    CaseData bd = make_data(bad, rng);
    bd.in[4] = make_tensor<int32_t>(DType::kInt32, {2}, {1, 4});
    const auto [model, feeds] = rnn_model(bad, bd);
    expect_same_error(model, feeds, "sequence_lens value 4 is outside [0, 3]");
  }
  {
    RnnCase bad = c;
    auto [model, feeds] = rnn_model(bad, d);
    for (NodeSpec& n : model.graph->nodes) n.attrs.push_back(AttrSpec::Float("clip", -1.0f));
    expect_same_error(model, feeds, "clip");
  }
  {
    RnnCase bad = c;  // hidden_size 6 with R of hidden size 5
    bad.H = 6;
    auto [model, feeds] = rnn_model(bad, d);
    // W and R dims unknown at planning, so the run finds the mismatch.
    for (ValueInfoSpec& v : model.graph->inputs)
      if (v.name == "r" || v.name == "w") v = tensor_info(v.name, kFloat, {"d", "g", "k"});
    expect_same_error(model, feeds, "W has shape [1, 15, 4], expected [1, 18, 4]");
  }
}

}  // namespace
}  // namespace onyx::test
