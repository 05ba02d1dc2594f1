// Reference-parity tests of the optimized float convolution kernels (src/kernels/cpu/conv*.cc):
// random Conv / ConvTranspose models run once on the reference kernels
// (SessionOptions::reference_kernels, direct loops in double) and once on the optimized
// ones, at 1 and 3 threads, compared within tol * (|reference| + scale), scale the RMS of the
// reference output (at least 1; see expect_close). ai.onyx FusedConv
// runs its kernel object directly (made by the registry's factory, as the planner makes
// it) against the reference session of the same Conv followed by Add (Z) and the
// activation as standard ops; its output starts as NaN, so an element the kernel does not
// write fails.
//
// Tolerances: 1e-5 for the GEMM and direct paths (float sums of up to a few thousand
// products against double; measured below 2e-6); where Winograd may run (3x3 stride 1, at
// least 8 channels per group) 5e-5 for F(2x2, 3x3) (more than 16 input channels per group;
// measured 1.2e-5 with 512) and 2e-4 for F(4x4, 3x3) (8 to 16: its transforms amplify float
// rounding; measured below 7e-5 with 200 input channels).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/loader.h"
#include "kernels/cpu/conv.h"
#include "kernels/registry.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "runtime/thread_pool.h"
#include "simd/winograd.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

constexpr double kTol = 1e-5;
constexpr double kWinograd2Tol = 5e-5;
constexpr double kWinograd4Tol = 2e-4;

/// The activations of FusedConv and how the reference model spells them.
struct ActSpec {
  std::string name;           // FusedConv's activation attribute
  std::vector<float> params;  // activation_params
};

const std::vector<ActSpec>& all_acts() {
  static const std::vector<ActSpec> acts = {
      {"", {}},
      {"Relu", {}},
      {"Clip", {-0.5f, 0.75f}},
      {"LeakyRelu", {0.1f}},
      {"HardSigmoid", {0.3f, 0.4f}},
      {"HardSwish", {}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"SiLU", {}},
      {"Gelu", {}},
      {"GeluTanh", {}},
  };
  return acts;
}

/// One random convolution case.
struct ConvCase {
  int64_t n = 1, c = 1, m = 1, group = 1;
  std::vector<int64_t> in, k, strides, dil, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
  bool bias = false, w_const = true, z = false;
  size_t act = 0;
  int threads = 1;

  size_t nsp() const { return in.size(); }
  Dims x_dims() const {
    Dims d{n, c};
    d.insert(d.end(), in.begin(), in.end());
    return d;
  }
  Dims w_dims() const {
    Dims d{m, c / group};
    d.insert(d.end(), k.begin(), k.end());
    return d;
  }
  /// Output extents, or empty when the window does not fit.
  Dims y_dims() const {
    Dims d{n, m};
    for (size_t i = 0; i < nsp(); ++i) {
      const int64_t ek = (k[i] - 1) * dil[i] + 1;
      int64_t o;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        o = (in[i] + strides[i] - 1) / strides[i];
      } else {
        const int64_t span = in[i] + (auto_pad == "VALID" ? 0 : pads[i] + pads[i + nsp()]) - ek;
        if (span < 0) return {};
        o = span / strides[i] + 1;
      }
      d.push_back(o);
    }
    return d;
  }
  std::vector<AttrSpec> attrs() const {
    std::vector<AttrSpec> a = {AttrSpec::Int("group", group), AttrSpec::Ints("strides", strides),
                               AttrSpec::Ints("dilations", dil), AttrSpec::Ints("kernel_shape", k)};
    if (auto_pad == "NOTSET")
      a.push_back(AttrSpec::Ints("pads", pads));
    else
      a.push_back(AttrSpec::String("auto_pad", auto_pad));
    return a;
  }
  /// The tolerance of the algorithms that may take it: Winograd F(4x4, 3x3) up to 16
  /// input channels per group, F(2x2, 3x3) above (conv_winograd.cc), else im2col / direct.
  double tol() const {
    const bool wino = nsp() == 2 && k[0] == 3 && k[1] == 3 && strides[0] == 1 && strides[1] == 1 &&
                      dil[0] == 1 && dil[1] == 1 && c / group >= 8 && m / group >= 8;
    if (!wino) return kTol;
    return c / group <= 16 ? kWinograd4Tol : kWinograd2Tol;
  }
  std::string str() const {
    std::string s = "x " + dims_str(x_dims()) + " w " + dims_str(w_dims()) + " group " +
                    std::to_string(group) + " strides " + dims_str(strides) + " dilations " +
                    dims_str(dil) + " pads " + dims_str(pads) + " auto_pad " + auto_pad +
                    (bias ? " bias" : "") + (w_const ? " W const" : " W input") + (z ? " Z" : "") +
                    " act '" + all_acts()[act].name + "' threads " + std::to_string(threads);
    return s;
  }
};

Tensor random_float(const Dims& d, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
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

/// The tensors of one case.
struct CaseData {
  Tensor x, w, b, z;
};

CaseData make_data(const ConvCase& cc, std::mt19937& rng) {
  CaseData d;
  d.x = random_float(cc.x_dims(), rng);
  d.w = random_float(cc.w_dims(), rng);
  d.b = random_float({cc.m}, rng);
  d.z = random_float(cc.y_dims(), rng);
  return d;
}

/// The reference model of a case: Conv (+ Add Z) (+ the activation as standard ops), W
/// and B initializers or inputs. With fused = false only the Conv.
std::pair<ModelSpec, Feeds> conv_model(const ConvCase& cc, const CaseData& d, bool fused) {
  GraphSpec g;
  Feeds feeds;
  g.inputs.push_back(tensor_info("x", kFloat, spec(cc.x_dims())));
  feeds.push_back({"x", d.x});
  std::vector<std::string> ins{"x", "w"};
  if (cc.w_const) {
    g.initializers.push_back(initializer("w", d.w));
  } else {
    g.inputs.push_back(tensor_info("w", kFloat, spec(cc.w_dims())));
    feeds.push_back({"w", d.w});
  }
  if (cc.bias) {
    ins.push_back("b");
    if (cc.w_const) {
      g.initializers.push_back(initializer("b", d.b));
    } else {
      g.inputs.push_back(tensor_info("b", kFloat, {cc.m}));
      feeds.push_back({"b", d.b});
    }
  }
  const Dims yd = cc.y_dims();
  std::string cur = "conv";
  g.nodes.push_back(NodeSpec("Conv", ins, {cur}, cc.attrs()));
  auto next = [&](const std::string& op, std::vector<std::string> in,
                  std::vector<AttrSpec> at = {}) {
    const std::string out = "t" + std::to_string(g.nodes.size());
    g.nodes.push_back(NodeSpec(op, std::move(in), {out}, std::move(at)));
    cur = out;
  };
  if (fused && cc.z) {
    g.inputs.push_back(tensor_info("z", kFloat, spec(yd)));
    feeds.push_back({"z", d.z});
    next("Add", {cur, "z"});
  }
  const ActSpec& a = all_acts()[fused ? cc.act : 0];
  const std::string x = cur;
  if (a.name == "Relu" || a.name == "Sigmoid" || a.name == "Tanh" || a.name == "HardSwish") {
    next(a.name, {x});
  } else if (a.name == "Clip") {
    g.initializers.push_back(TensorSpec::floats("clip_lo", {}, {a.params[0]}));
    g.initializers.push_back(TensorSpec::floats("clip_hi", {}, {a.params[1]}));
    next("Clip", {x, "clip_lo", "clip_hi"});
  } else if (a.name == "LeakyRelu") {
    next("LeakyRelu", {x}, {AttrSpec::Float("alpha", a.params[0])});
  } else if (a.name == "HardSigmoid") {
    next("HardSigmoid", {x},
         {AttrSpec::Float("alpha", a.params[0]), AttrSpec::Float("beta", a.params[1])});
  } else if (a.name == "SiLU") {
    next("Sigmoid", {x});
    next("Mul", {x, cur});
  } else if (a.name == "Gelu") {
    next("Gelu", {x});
  } else if (a.name == "GeluTanh") {
    next("Gelu", {x}, {AttrSpec::String("approximate", "tanh")});
  }
  g.outputs = {tensor_info(cur, kFloat, spec(yd))};
  return {ModelSpec(g, 20), feeds};
}

Tensor run_session(const ModelSpec& m, const Feeds& feeds, bool reference, int threads) {
  const std::string bytes = m.serialize();
  SessionOptions opts;
  opts.threads = threads;
  opts.reference_kernels = reference;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  return s->run(feeds)[0].tensor();
}

/// Fails when an element differs by more than tol * (|ref| + scale), scale = max(1, the
/// RMS of the reference output): float rounding of a convolution grows with the
/// magnitude of its sums, not of each output (an output near 0 is a sum of large terms
/// that cancel).
void expect_close(const Tensor& ref, const Tensor& got, double tol, const std::string& what) {
  ASSERT_EQ(ref.dims(), got.dims()) << what;
  double ss = 0;
  for (int64_t i = 0; i < ref.numel(); ++i)
    ss += double(ref.data<float>()[i]) * ref.data<float>()[i];
  const double scale = std::max(1.0, std::sqrt(ss / std::max<int64_t>(ref.numel(), 1)));
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.data<float>()[i], g = got.data<float>()[i];
    worst = std::max(worst, std::fabs(r - g) / (std::fabs(r) + scale));
    ASSERT_LE(std::fabs(r - g), tol * (std::fabs(r) + scale))
        << what << " at " << i << ": " << g << " vs " << r;
  }
  if (getenv("CONV_TEST_ERR"))
    fprintf(stderr, "err %.3g scale %.3g %s\n", worst, scale, what.c_str());
}

/// Conv through sessions: optimized (cc.threads) against the reference.
void check_conv(const ConvCase& cc, std::mt19937& rng) {
  const CaseData d = make_data(cc, rng);
  const auto [model, feeds] = conv_model(cc, d, false);
  const Tensor ref = run_session(model, feeds, true, 1);
  const Tensor got = run_session(model, feeds, false, cc.threads);
  expect_close(ref, got, cc.tol(), "Conv " + cc.str());
}

void no_reference(kernels::KernelContext& ctx) {
  ctx.fail("the optimized FusedConv kernel handed a valid case to the reference");
}

ir::Attribute attribute(const AttrSpec& a) {
  ir::Attribute at;
  at.name = a.name;
  if (a.type == AttrSpec::kInt) {
    at.type = ir::Attribute::Type::kInt;
    at.i = *a.i;
  } else if (a.type == AttrSpec::kInts) {
    at.type = ir::Attribute::Type::kInts;
    at.ints = a.ints;
  } else if (a.type == AttrSpec::kFloats) {
    at.type = ir::Attribute::Type::kFloats;
    at.floats = a.floats;
  } else {
    at.type = ir::Attribute::Type::kString;
    at.s = *a.s;
  }
  return at;
}

/// The case's FusedConv node, with channels_last = 1 when asked.
ir::Node fused_node(const ConvCase& cc, bool channels_last) {
  ir::Node node;
  node.op_type = "FusedConv";
  node.domain = "ai.onyx";
  node.opset = 1;
  node.inputs = {"x", "w", cc.bias ? "b" : "", cc.z ? "z" : ""};
  node.outputs = {"y"};
  for (const AttrSpec& a : cc.attrs()) node.attrs.push_back(attribute(a));
  if (channels_last) node.attrs.push_back(attribute(AttrSpec::Int("channels_last", 1)));
  const ActSpec& act = all_acts()[cc.act];
  if (!act.name.empty()) node.attrs.push_back(attribute(AttrSpec::String("activation", act.name)));
  if (!act.params.empty())
    node.attrs.push_back(attribute(AttrSpec::Floats("activation_params", act.params)));
  return node;
}

/// FusedConv's optimized kernel object for `node`, made by the registry's factory (W
/// constant when w_const) with the static types of x and y a session would give (kernels
/// pick by them: Winograd's weights, the transposed pointwise GEMM), run directly on x, the
/// case's W and bias, and z; its output of dims yd starts as NaN.
Tensor run_kernel_object(const ConvCase& cc, const ir::Node& node, bool w_const, const Tensor& x,
                         const CaseData& d, const Tensor& z, const Dims& yd) {
  const std::vector<const kernels::KernelDef*> defs =
      kernels::default_registry().find_optimized("ai.onyx", "FusedConv", 1, DType::kFloat);
  if (defs.empty()) throw std::runtime_error("no optimized FusedConv kernel is registered");
  ThreadPool pool(cc.threads);
  std::vector<const Tensor*> constants(4, nullptr);
  if (w_const) constants[1] = &d.w;
  ir::Shape xs, ys;
  for (int64_t v : x.dims()) xs.push_back(ir::Dim(v));
  for (int64_t v : yd) ys.push_back(ir::Dim(v));
  const ir::TypeInfo xt = ir::TypeInfo::tensor(DType::kFloat, xs), yt = ir::TypeInfo::tensor(DType::kFloat, ys);
  kernels::KernelInit init{node, {&xt}, {&yt}, constants, no_reference, &pool};
  std::unique_ptr<kernels::Kernel> k = defs[0]->factory(init);
  if (!k) throw std::runtime_error("FusedConv declined " + cc.str());
  if (!k->overwrites_outputs())
    throw std::runtime_error("FusedConv does not say it overwrites its output");
  const Value vx(x), vw(d.w), vb(d.b), vz(z);
  std::vector<const Value*> ins{&vx, &vw, cc.bias ? &vb : nullptr, cc.z ? &vz : nullptr};
  Tensor y(DType::kFloat, yd);
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = std::nanf("");
  std::vector<Value> outs{Value(y)};
  kernels::KernelContext ctx(node, ins, &outs, nullptr, &pool);
  k->run(ctx);
  return outs[0].tensor();
}

/// FusedConv's kernel object on the case's tensors (W constant or not, as the case says).
Tensor run_fused_kernel(const ConvCase& cc, const CaseData& d) {
  return run_kernel_object(cc, fused_node(cc, false), cc.w_const, d.x, d, d.z, cc.y_dims());
}

/// FusedConv's kernel against the reference session of Conv + Add + activation. Sigmoid,
/// Tanh and GELU come from vector approximations (a few ulp; erf within 1.5e-7), well
/// inside the tolerance.
void check_fused(const ConvCase& cc, const CaseData& d) {
  const auto [model, feeds] = conv_model(cc, d, true);
  const Tensor ref = run_session(model, feeds, true, 1);
  expect_close(ref, run_fused_kernel(cc, d), cc.tol(), "FusedConv " + cc.str());
}

/// A random case; `large` picks bigger channel counts and images.
ConvCase random_case(std::mt19937& rng, int it, bool large) {
  auto ri = [&](int lo, int hi) {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  ConvCase cc;
  const int64_t ks[] = {1, 3, 5, 7};
  const size_t nsp = it % 9 == 4 ? 1 : (it % 13 == 6 ? 3 : 2);
  cc.n = it % 5 == 3 ? 3 : 1;
  const int gk = it % 4;  // 0, 1: group 1; 2: group 2; 3: group C (depthwise or multiplier)
  const int64_t cg = large ? ri(16, 96) : ri(1, 17), mg = large ? ri(16, 96) : ri(1, 17);
  cc.group = gk == 2 ? 2 : (gk == 3 ? ri(1, 17) : 1);
  cc.c = gk == 3 ? cc.group : cg * cc.group;
  cc.m = gk == 3 ? cc.group * (it % 8 == 3 ? ri(2, 3) : 1) : mg * cc.group;
  for (size_t d = 0; d < nsp; ++d) {
    cc.in.push_back(large ? ri(20, 60) : ri(1, nsp == 3 ? 7 : 17));
    cc.k.push_back(nsp == 3 ? ri(1, 3) : ks[ri(0, 3)]);
    cc.strides.push_back(ri(1, 3) == 3 && it % 3 == 0 ? 3 : ri(1, 2));
    cc.dil.push_back(it % 6 == 5 ? 2 : 1);
  }
  for (size_t d = 0; d < 2 * nsp; ++d) cc.pads.push_back(ri(0, 3));
  const int ap = it % 10;
  cc.auto_pad = ap == 7 ? "SAME_UPPER" : ap == 8 ? "SAME_LOWER" : ap == 9 ? "VALID" : "NOTSET";
  cc.bias = it % 2 == 0;
  cc.w_const = it % 7 != 2;
  cc.threads = (it / 2) % 2 == 0 ? 1 : 3;
  return cc;
}

TEST(ConvKernels, RandomShapesMatchReference) {
  std::mt19937 rng(101);
  int runs = 0;
  for (int it = 0; it < 400; ++it) {
    ConvCase cc = random_case(rng, it, false);
    if (cc.y_dims().empty()) continue;
    ++runs;
    check_conv(cc, rng);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(runs, 300);
}

TEST(ConvKernels, LargeShapesMatchReference) {
  std::mt19937 rng(102);
  int runs = 0;
  for (int it = 0; it < 24; ++it) {
    ConvCase cc = random_case(rng, it, true);
    if (cc.nsp() == 3 || cc.y_dims().empty()) continue;
    ++runs;
    check_conv(cc, rng);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(runs, 12);
}

/// Few input channels and wide rows: the direct implicit-GEMM path (conv_direct.cc) at
/// every stride, dilation, pad and auto_pad.
TEST(ConvKernels, DirectShapesMatchReference) {
  std::mt19937 rng(107);
  int runs = 0;
  for (int it = 0; it < 120; ++it) {
    ConvCase cc = random_case(rng, it, false);
    if (cc.nsp() != 2) continue;
    std::uniform_int_distribution<int> wide(32, 90), cin(1, 6);
    cc.group = it % 4 == 2 ? 2 : 1;
    cc.c = cin(rng) * cc.group;
    cc.m = (cc.m / cc.group + 1) * cc.group;
    cc.in[1] = wide(rng);
    if (cc.y_dims().empty()) continue;
    ++runs;
    check_conv(cc, rng);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(runs, 60);
}

/// Shapes that reach the channel-vector direct convolution (conv_cv.cc; natively): blocks
/// of 4 vectors of output channels with a partial last one, blocks of 2 (32 channels or
/// fewer per group), tiles of positions that wrap output rows, dilation, strides 2 and
/// mixed, asymmetric pads, groups and batch 2, 5x5 windows, 1x1 windows on small images
/// (stride 1 and 2), a depth of several 256-deep blocks with a partial last one.
std::vector<ConvCase> cv_cases() {
  std::vector<ConvCase> v;
  auto add = [&](int64_t n, int64_t c, int64_t m, int64_t group, std::vector<int64_t> in,
                 std::vector<int64_t> k, std::vector<int64_t> st, std::vector<int64_t> pads,
                 std::vector<int64_t> dil = {1, 1}) {
    ConvCase cc;
    cc.n = n;
    cc.c = c;
    cc.m = m;
    cc.group = group;
    cc.in = std::move(in);
    cc.k = std::move(k);
    cc.strides = std::move(st);
    cc.pads = std::move(pads);
    cc.dil = std::move(dil);
    cc.bias = true;
    v.push_back(cc);
  };
  add(1, 96, 96, 1, {9, 10}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2});  // 64 + 32 channels, dilated
  add(2, 40, 48, 2, {11, 13}, {3, 3}, {2, 2}, {1, 0, 0, 1});         // groups, batch 2, s2
  add(1, 16, 300, 1, {12, 9}, {3, 3}, {2, 1}, {1, 1, 1, 1});         // mixed strides, 4 x 64 + 44
  add(1, 128, 32, 1, {20, 21}, {3, 3}, {1, 1}, {1, 1, 1, 1});        // 32 channels, 420 positions
  add(1, 80, 24, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1});           // 24 channels, depth 720
  add(1, 512, 100, 1, {5, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0});         // pointwise, small image
  add(1, 256, 64, 1, {13, 13}, {1, 1}, {2, 2}, {0, 0, 0, 0});        // strided 1x1 to 7x7
  add(1, 24, 48, 1, {15, 15}, {5, 5}, {2, 2}, {2, 2, 2, 2});         // 5x5 stride 2
  add(1, 130, 120, 1, {6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1});         // depth 1170: 5 blocks
  add(1, 256, 256, 1, {10, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1});       // Winograd's largest W
  return v;
}

/// Shapes picked to reach each algorithm: Winograd (3x3 stride 1, >= 8 channels per
/// group, >= 8 tiles), pointwise (1x1 stride 1, no pads; odd widths leave a partial last
/// panel), depthwise at strides 1/2 and 3x3/5x5 with dilations, the one-channel first
/// layer and ResNet/MobileNet-like layers. (No input channels is an error in both kernels:
/// tests/unit/hostile_test.cc.)
std::vector<ConvCase> chosen_cases() {
  std::vector<ConvCase> v;
  auto add = [&](int64_t n, int64_t c, int64_t m, int64_t group, std::vector<int64_t> in,
                 std::vector<int64_t> k, std::vector<int64_t> st, std::vector<int64_t> pads,
                 std::vector<int64_t> dil = {1, 1}) {
    ConvCase cc;
    cc.n = n;
    cc.c = c;
    cc.m = m;
    cc.group = group;
    cc.in = std::move(in);
    cc.k = std::move(k);
    cc.strides = std::move(st);
    cc.pads = std::move(pads);
    cc.dil = std::move(dil);
    cc.bias = true;
    v.push_back(cc);
  };
  add(1, 16, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1, 1, 1});  // Winograd F(4x4), 16 tiles
  add(1, 17, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1, 1, 1});  // Winograd F(2x2), 64 tiles
  add(1, 64, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1, 1, 1});  // Winograd, ResNet-like
  add(1, 32, 24, 1, {7, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1});    // F(2x2), partial tiles
  add(2, 24, 40, 1, {13, 19}, {3, 3}, {1, 1},
      {1, 0, 0, 1});                                        // Winograd, odd sizes, asymmetric pads
  add(1, 9, 11, 1, {30, 7}, {3, 3}, {1, 1}, {0, 0, 0, 0});  // Winograd F(4x4), partial tiles
  add(1, 12, 10, 1, {13, 19}, {3, 3}, {1, 1}, {1, 0, 0, 1});        // F(4x4), odd sizes
  add(1, 32, 48, 2, {17, 17}, {3, 3}, {1, 1}, {1, 1, 1, 1});        // Winograd per group
  add(1, 200, 136, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1});      // Winograd, many channels
  add(1, 24, 144, 1, {14, 15}, {1, 1}, {1, 1}, {0, 0, 0, 0});       // pointwise, partial panel
  add(3, 17, 5, 1, {9, 11}, {1, 1}, {1, 1}, {0, 0, 0, 0});          // pointwise, batch 3
  add(1, 300, 40, 1, {7, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0});         // pointwise, 1-column tail, K > 256
  add(1, 64, 20, 1, {13, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1});        // im2col to 7x7, depth blocks
  add(2, 40, 13, 1, {9, 20}, {1, 1}, {1, 1}, {0, 0, 0, 0});         // pointwise, 4-column tail
  // Pointwise over small images: the transposed GEMM (conv_pointwise_t.h), batch 2,
  // output channels not a multiple of a vector, a single row of positions.
  add(2, 48, 40, 1, {6, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0});
  add(1, 20, 33, 1, {1, 9}, {1, 1}, {1, 1}, {0, 0, 0, 0});
  add(1, 192, 1152, 1, {7, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0});  // EfficientNet's 7x7 expand
  // W over the GEMM's packing limit (2.1 MB; conv.cc's large_pointwise_t).
  add(1, 256, 2060, 1, {5, 9}, {1, 1}, {1, 1}, {0, 0, 0, 0});
  add(2, 256, 2060, 1, {10, 17}, {1, 1}, {2, 2}, {0, 0, 0, 0});  // the same strided, batch 2
  add(1, 576, 144, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0});        // 1x1 image (GEMV)
  add(2, 37, 13, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0});          // GEMV, odd K and M
  add(1, 18, 10, 2, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0});          // GEMV per group
  add(1, 64, 128, 1, {14, 14}, {1, 1}, {2, 2}, {0, 0, 0, 0});       // strided 1x1 (im2col)
  // Strided 1x1 with work enough (3.2M multiply-adds) for the gather to run on the
  // threads too: it must write the caller's buffer, not each worker's thread_local one.
  add(1, 96, 160, 1, {30, 28}, {1, 1}, {2, 2}, {0, 0, 0, 0});
  add(1, 3, 64, 1, {37, 41}, {7, 7}, {2, 2}, {3, 3, 3, 3});         // ResNet stem (im2col)
  add(1, 3, 64, 1, {39, 80}, {7, 7}, {2, 2}, {3, 3, 3, 3});         // ResNet stem (direct)
  add(1, 3, 32, 1, {33, 30}, {3, 3}, {2, 2}, {1, 1, 1, 1});         // MobileNet stem (im2col)
  add(1, 3, 32, 1, {21, 70}, {3, 3}, {2, 2}, {1, 1, 1, 1});         // MobileNet stem (direct)
  add(1, 3, 16, 1, {9, 67}, {3, 3}, {2, 2}, {0, 1, 1, 0});          // direct, odd, asymmetric
  add(2, 4, 8, 2, {7, 40}, {3, 3}, {1, 1}, {1, 1, 1, 1});           // direct per group
  add(1, 1, 16, 1, {32, 53}, {3, 3}, {1, 1}, {1, 1, 1, 1});         // one input channel
  add(1, 32, 32, 32, {29, 29}, {3, 3}, {1, 1}, {1, 1, 1, 1});       // depthwise
  add(1, 40, 40, 40, {30, 31}, {3, 3}, {2, 2}, {1, 1, 1, 1});       // depthwise stride 2
  add(1, 12, 12, 12, {20, 40}, {5, 5}, {1, 1}, {2, 2, 2, 2});       // depthwise 5x5
  add(1, 12, 12, 12, {21, 39}, {5, 5}, {2, 2}, {2, 1, 2, 1});       // depthwise 5x5 stride 2
  add(1, 8, 8, 8, {23, 35}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 2});  // depthwise dilated
  add(2, 6, 12, 6, {15, 33}, {3, 3}, {1, 1}, {1, 1, 1, 1});         // channel multiplier 2
  add(1, 16, 16, 16, {40, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1});        // depthwise, rows of 3
  add(1, 10, 10, 10, {31, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1});        // depthwise, rows of 3, s2
  add(2, 9, 9, 9, {23, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1});           // depthwise, rows of 9
  add(1, 7, 7, 7, {11, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0});           // depthwise 1x1, rows of 1
  add(1, 3, 3, 3, {90, 70}, {3, 3}, {1, 1}, {1, 1, 1, 1});          // depthwise, 2 row blocks
  // The channel-blocked depthwise kernel (a vector of channels per pixel): partial channel
  // blocks, small planes, strides, dilations, several row blocks, batch 2.
  add(1, 40, 40, 40, {7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1});         // 7x7 plane, 2.5 blocks
  add(1, 96, 96, 96, {14, 15}, {5, 5}, {2, 2}, {2, 2, 2, 2});       // 5x5 stride 2
  add(2, 20, 20, 20, {9, 11}, {3, 3}, {1, 1}, {2, 1, 0, 2}, {2, 2});  // dilated, odd pads
  add(1, 33, 33, 33, {56, 57}, {3, 3}, {2, 2}, {1, 1, 1, 1});       // wide rows, stride 2
  add(1, 17, 17, 17, {200, 30}, {3, 3}, {2, 2}, {1, 1, 1, 1});      // many row blocks
  add(1, 64, 64, 64, {5, 4}, {3, 3}, {2, 3}, {0, 1, 1, 0});         // mixed strides, tiny
  add(1, 2, 4, 2, {1500, 13}, {3, 3}, {1, 1}, {1, 1, 1, 1});        // narrow rows, 6 row blocks
  add(1, 2, 2, 2, {1999, 15}, {5, 5}, {2, 2}, {2, 2, 2, 2});        // narrow, s2, 2 blocks
  add(1, 2, 2, 2, {40, 35}, {3, 3}, {2, 1}, {0, 1, 2, 0});          // mixed strides, odd pads
  add(1, 512, 64, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1});         // deep, small image
  add(1, 64, 64, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2});  // dilated 3x3 (im2col)
  // Few tiles for the threads: im2col panels shared by the row blocks (3 depth blocks; 11
  // with a partial last one; per image and group with odd sizes and asymmetric pads).
  add(1, 64, 80, 1, {14, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1});
  add(1, 300, 260, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1});
  add(2, 96, 64, 2, {15, 13}, {3, 3}, {2, 2}, {1, 0, 1, 0});
  // Few Winograd tile blocks for the threads (2 at 3 threads): each block a task, and with
  // work enough (the last two) V shared by the row blocks (F(4x4); F(4x4) at odd sizes,
  // batch 2; F(2x2) is reached by the 200 -> 136 and 64 -> 64 layers above).
  add(1, 16, 64, 1, {32, 30}, {3, 3}, {1, 1}, {1, 1, 1, 1});
  add(2, 12, 48, 1, {21, 19}, {3, 3}, {1, 1}, {1, 0, 1, 1});
  add(1, 16, 128, 1, {32, 30}, {3, 3}, {1, 1}, {1, 1, 1, 1});
  add(2, 12, 192, 1, {21, 19}, {3, 3}, {1, 1}, {1, 0, 1, 1});
  // Strided layers through im2col read a padded, phase-split copy of X (conv_im2col.cc's
  // Phased): a YOLO-like 3x3 stride-2 downsample, odd sizes with asymmetric pads, stride 3
  // and mixed strides, a dilated window, 5x5, groups and batch 2, a pad wider than the
  // kernel's reach, 1x3 windows.
  add(1, 32, 64, 1, {40, 40}, {3, 3}, {2, 2}, {1, 1, 1, 1});
  add(1, 20, 23, 1, {23, 19}, {3, 3}, {2, 2}, {0, 1, 2, 0});
  add(2, 18, 10, 2, {17, 26}, {3, 3}, {3, 2}, {1, 2, 0, 1});
  add(1, 24, 16, 1, {21, 22}, {3, 3}, {2, 2}, {2, 2, 2, 2}, {2, 3});
  add(1, 20, 12, 1, {19, 18}, {5, 5}, {2, 2}, {2, 1, 1, 2});
  add(1, 40, 8, 1, {9, 11}, {3, 3}, {2, 2}, {4, 3, 4, 5});
  add(1, 60, 24, 1, {12, 31}, {1, 3}, {3, 2}, {0, 1, 0, 1});
  // Strided 1x1 windows without pads read a compact gather of X as a pointwise layer
  // (conv_im2col.cc): ResNet's shortcut (rows of 28 through the vector gather), odd sizes
  // with groups and batch 2, mixed strides whose last leaves a remainder, 1-D and 3-D.
  add(1, 64, 96, 1, {56, 56}, {1, 1}, {2, 2}, {0, 0, 0, 0});
  add(2, 18, 12, 3, {15, 13}, {1, 1}, {2, 2}, {0, 0, 0, 0});
  add(1, 20, 24, 1, {17, 20}, {1, 1}, {3, 2}, {0, 0, 0, 0});
  add(1, 16, 40, 1, {75}, {1}, {2}, {0, 0}, {1});
  add(1, 8, 16, 1, {5, 9, 8}, {1, 1, 1}, {2, 1, 3}, {0, 0, 0, 0, 0, 0}, {1, 1, 1});
  for (const ConvCase& cc : cv_cases()) v.push_back(cc);
  return v;
}

TEST(ConvKernels, ChosenShapesMatchReference) {
  std::mt19937 rng(103);
  for (ConvCase cc : chosen_cases()) {
    for (int threads : {1, 3}) {
      for (bool w_const : {true, false}) {
        cc.threads = threads;
        cc.w_const = w_const;
        check_conv(cc, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The cases above do reach conv_cv here (natively), on every SIMD target compiled in and
// supported (AVX-512: blocks of 64 or 32 channels, tiles of 6 or 12 positions; AVX2 and
// SSE4: 16 or 8 channels, 6 positions), at 1 and 3 threads.
TEST(ConvKernels, ChannelVectorEveryTarget) {
#ifdef __EMSCRIPTEN__
  GTEST_SKIP() << "conv_cv is native only";
#else
  std::mt19937 rng(109);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (ConvCase cc : cv_cases()) {
      // (The geometry as the kernel sees it, to know the case takes conv_cv.)
      kernels::cpu::ConvShape s;
      s.batch = cc.n;
      s.channels = cc.c;
      s.maps = cc.m;
      s.group = cc.group;
      s.cg = cc.c / cc.group;
      s.mg = cc.m / cc.group;
      s.g.nsp = 2;
      s.g.in = cc.in;
      s.g.out = {cc.y_dims()[2], cc.y_dims()[3]};
      s.g.kernel = cc.k;
      s.g.strides = cc.strides;
      s.g.dilations = cc.dil;
      s.g.pad_begin = {cc.pads[0], cc.pads[1]};
      kernels::set_sizes(s.g);
      s.kdepth = s.cg * s.g.kernel_size;
      EXPECT_TRUE(kernels::cpu::cv_suits(s) && kernels::cpu::cv_preferred(s)) << cc.str();
      for (int threads : {1, 3}) {
        cc.threads = threads;
        cc.w_const = true;
        check_conv(cc, rng);
        if (HasFatalFailure()) break;
      }
      if (HasFatalFailure()) break;
    }
    if (HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
#endif
}

TEST(ConvKernels, FusedConvEveryActivationMatchesReference) {
  std::mt19937 rng(104);
  std::vector<ConvCase> cases = chosen_cases();
  for (int it = 0; it < 60; ++it) {
    ConvCase cc = random_case(rng, it, false);
    if (!cc.y_dims().empty()) cases.push_back(cc);
  }
  size_t i = 0;
  for (ConvCase& cc : cases) {
    cc.act = i % all_acts().size();
    cc.z = (i / 2) % 2 == 0;
    cc.bias = i % 3 != 1;
    cc.threads = (i / 4) % 2 == 0 ? 1 : 3;
    ++i;
    check_fused(cc, make_data(cc, rng));
    if (HasFatalFailure()) return;
  }
}

TEST(ConvKernels, FusedPointwiseOnSmallImagesWithResidual) {
  // The transposed pointwise GEMM applies bias and activation in the SGEMM's epilogue
  // without a residual, and adds the residual before the activation after transposing.
  std::mt19937 rng(108);
  auto pointwise = [](int64_t n, int64_t c, int64_t m, const Dims& hw) {
    ConvCase cc;
    cc.n = n;
    cc.c = c;
    cc.m = m;
    cc.in = {hw[0], hw[1]};
    cc.k = {1, 1};
    cc.strides = {1, 1};
    cc.dil = {1, 1};
    cc.pads = {0, 0, 0, 0};
    return cc;
  };
  int i = 0;
  for (const Dims& hw : {Dims{7, 7}, Dims{1, 9}, Dims{5, 11}}) {
    for (size_t act = 0; act < all_acts().size(); ++act, ++i) {
      ConvCase cc = pointwise(i % 3 == 0 ? 2 : 1, 24 + i % 5, 32 + 7 * (i % 3), hw);
      cc.bias = i % 2 == 0;
      cc.z = i % 4 != 3;
      cc.act = act;
      cc.threads = i % 2 == 0 ? 1 : 3;
      check_fused(cc, make_data(cc, rng));
      if (HasFatalFailure()) return;
    }
  }
  // Enough output channels that the transpose back, the residual and the activation run
  // over the threads, by blocks of 16 channels (200: a partial last block).
  for (size_t act = 0; act < all_acts().size(); ++act) {
    ConvCase cc = pointwise(act % 2 == 0 ? 1 : 2, 40, 200, Dims{7, 7});
    cc.bias = true;
    cc.z = act % 3 != 2;
    cc.act = act;
    cc.threads = 2 + static_cast<int>(act % 2);
    check_fused(cc, make_data(cc, rng));
    if (HasFatalFailure()) return;
  }
}

TEST(ConvKernels, PointwiseGemvOfOneByOneImages) {
  // A 1x1 convolution of a 1x1 image (a squeeze-excite block's layers after a global
  // pooling): widening layers run on W^T made at planning, vectorized along the output
  // channels with a contiguous epilogue (every lane its own bias and residual); narrowing
  // ones on dot products. Channel counts around the vector widths, both directions, a
  // batch of 2, through the fused kernel and through sessions (W constant or an input).
  std::mt19937 rng(109);
  const std::vector<std::pair<int64_t, int64_t>> cm = {
      {1, 1}, {3, 5}, {4, 64}, {8, 65}, {48, 1152}, {17, 100}, {16, 63}, {20, 129}, {96, 24}, {1152, 48}, {7, 7}};
  int i = 0;
  for (const auto& [c, m] : cm) {
    for (int rep = 0; rep < 3; ++rep, ++i) {
      ConvCase cc;
      cc.n = i % 4 == 1 ? 2 : 1;
      cc.c = c;
      cc.m = m;
      cc.in = {1, 1};
      cc.k = {1, 1};
      cc.strides = {1, 1};
      cc.dil = {1, 1};
      cc.pads = {0, 0, 0, 0};
      cc.bias = rep != 1;
      cc.z = rep == 2;
      cc.act = (i * 5) % all_acts().size();
      cc.threads = i % 2 == 0 ? 1 : 3;
      const CaseData d = make_data(cc, rng);
      check_fused(cc, d);
      if (HasFatalFailure()) return;
      cc.w_const = rep != 0;
      check_conv(cc, rng);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(ConvKernels, FusedConvActivationsOnLargeValues) {
  // Sums far from 0 (inputs scaled by 20): the activations saturate, Sigmoid's exp
  // overflows, GELU's erf tail is 0 or 1.
  std::mt19937 rng(105);
  for (size_t a = 0; a < all_acts().size(); ++a) {
    ConvCase cc;
    cc.c = 8;
    cc.m = 9;
    cc.in = {11, 12};
    cc.k = {3, 3};
    cc.strides = {1, 1};
    cc.dil = {1, 1};
    cc.pads = {1, 1, 1, 1};
    cc.bias = true;
    cc.z = a % 2 == 0;
    cc.act = a;
    cc.threads = 1;
    CaseData d = make_data(cc, rng);
    for (int64_t i = 0; i < d.x.numel(); ++i) d.x.data<float>()[i] *= 20.0f;
    check_fused(cc, d);
    if (HasFatalFailure()) return;
  }
}

/// ConvTranspose through sessions, any rank, groups, strides, dilations, pads (negative
/// ones stand for an output_shape larger than the natural extent), output_padding.
TEST(ConvKernels, ConvTransposeMatchesReference) {
  std::mt19937 rng(106);
  auto ri = [&](int lo, int hi) {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  int runs = 0;
  for (int it = 0; it < 160; ++it) {
    const size_t nsp = it % 7 == 3 ? 1 : (it % 11 == 5 ? 3 : 2);
    const int64_t group = it % 4 == 3 ? 2 : 1, cg = it % 10 == 0 ? ri(30, 70) : ri(1, 9),
                  mg = ri(1, 9);
    const int64_t n = it % 5 == 2 ? 3 : 1;
    Dims xd{n, cg * group}, wd{cg * group, mg}, yd{n, mg * group};
    std::vector<int64_t> st, dl, pads, op, oshape;
    bool ok = true;
    const bool use_shape = it % 6 == 1;
    for (size_t d = 0; d < nsp; ++d) {
      const int64_t in = ri(1, nsp == 3 ? 5 : 13), k = ri(1, 4), s = ri(1, 3),
                    dil = it % 5 == 4 ? 2 : 1;
      const int64_t p0 = ri(0, 2), p1 = ri(0, 2), opd = ri(0, static_cast<int>(s) - 1);
      int64_t out = s * (in - 1) + opd + (k - 1) * dil + 1 - (use_shape ? 0 : p0 + p1);
      if (use_shape) out += ri(-1, 2);  // an explicit, possibly larger, output_shape
      if (out < 1) ok = false;
      xd.push_back(in);
      wd.push_back(k);
      yd.push_back(out);
      st.push_back(s);
      dl.push_back(dil);
      op.push_back(opd);
      oshape.push_back(out);
      pads.push_back(p0);
    }
    for (size_t d = 0; d < nsp; ++d) pads.push_back(pads[d] == 0 ? 0 : ri(0, 2));
    if (!use_shape)
      for (size_t d = 0; d < nsp; ++d)
        yd[2 + d] =
            st[d] * (xd[2 + d] - 1) + op[d] + (wd[2 + d] - 1) * dl[d] + 1 - pads[d] - pads[d + nsp];
    for (size_t d = 0; d < nsp; ++d)
      if (yd[2 + d] < 1) ok = false;
    if (!ok) continue;
    ++runs;
    const bool bias = it % 2 == 0, w_const = it % 3 != 1;
    const int threads = (it / 2) % 2 == 0 ? 1 : 3;
    GraphSpec g;
    Feeds feeds;
    const Tensor x = random_float(xd, rng), w = random_float(wd, rng),
                 b = random_float({mg * group}, rng);
    g.inputs.push_back(tensor_info("x", kFloat, spec(xd)));
    feeds.push_back({"x", x});
    std::vector<std::string> ins{"x", "w"};
    if (w_const) {
      g.initializers.push_back(initializer("w", w));
    } else {
      g.inputs.push_back(tensor_info("w", kFloat, spec(wd)));
      feeds.push_back({"w", w});
    }
    if (bias) {
      ins.push_back("b");
      g.initializers.push_back(initializer("b", b));
    }
    std::vector<AttrSpec> attrs = {AttrSpec::Int("group", group), AttrSpec::Ints("strides", st),
                                   AttrSpec::Ints("dilations", dl),
                                   AttrSpec::Ints("output_padding", op)};
    if (use_shape)
      attrs.push_back(AttrSpec::Ints("output_shape", oshape));
    else
      attrs.push_back(AttrSpec::Ints("pads", pads));
    g.nodes = {NodeSpec("ConvTranspose", ins, {"y"}, attrs)};
    g.outputs = {tensor_info("y", kFloat, spec(yd))};
    const ModelSpec m(g, 17);
    const Tensor ref = run_session(m, feeds, true, 1);
    const Tensor got = run_session(m, feeds, false, threads);
    expect_close(ref, got, kTol,
                 "ConvTranspose x " + dims_str(xd) + " w " + dims_str(wd) + " y " + dims_str(yd) +
                     " group " + std::to_string(group) + " threads " + std::to_string(threads));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(runs, 100);
}

/// `t` [N, C, H, W] as [N, H, W, C] (to_last) or back.
Tensor move_channels(const Tensor& t, bool to_last) {
  const Dims& d = t.dims();
  const int64_t n = d[0], a = to_last ? d[1] : d[3], h = to_last ? d[2] : d[1], w = to_last ? d[3] : d[2];
  Tensor r(DType::kFloat, to_last ? Dims{n, h, w, a} : Dims{n, a, h, w});
  const float* s = t.data<float>();
  float* o = r.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < a; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const int64_t first = ((b * a + c) * h + y) * w + x, last = ((b * h + y) * w + x) * a + c;
          if (to_last)
            o[last] = s[first];
          else
            o[first] = s[last];
        }
  return r;
}

/// FusedConv with channels_last = 1 through its optimized kernel object (as the planner
/// makes it, W constant, static NHWC types), on the case's tensors moved to channels last;
/// the output, starting as NaN, moved back. A valid case handed to the reference fails.
Tensor run_channels_last_kernel(const ConvCase& cc, const CaseData& d) {
  const Dims yd = move_channels(Tensor(DType::kFloat, cc.y_dims()), true).dims();
  return move_channels(run_kernel_object(cc, fused_node(cc, true), true, move_channels(d.x, true), d,
                                         move_channels(d.z, true), yd),
                       false);
}

/// The same node in a model run on the reference kernels (channels_last's reference:
/// Transpose, the Conv composition, Transpose back).
Tensor run_channels_last_reference(const ConvCase& cc, const CaseData& d) {
  GraphSpec g;
  const Tensor x = move_channels(d.x, true), z = move_channels(d.z, true);
  const Dims yd = move_channels(Tensor(DType::kFloat, cc.y_dims()), true).dims();
  g.inputs.push_back(tensor_info("x", kFloat, spec(x.dims())));
  g.initializers.push_back(initializer("w", d.w));
  Feeds feeds{{"x", x}};
  std::vector<std::string> ins{"x", "w", cc.bias ? "b" : "", cc.z ? "z" : ""};
  if (cc.bias) g.initializers.push_back(initializer("b", d.b));
  if (cc.z) {
    g.inputs.push_back(tensor_info("z", kFloat, spec(z.dims())));
    feeds.push_back({"z", z});
  }
  std::vector<AttrSpec> at = cc.attrs();
  at.push_back(AttrSpec::Int("channels_last", 1));
  const ActSpec& act = all_acts()[cc.act];
  if (!act.name.empty()) at.push_back(AttrSpec::String("activation", act.name));
  if (!act.params.empty()) at.push_back(AttrSpec::Floats("activation_params", act.params));
  g.nodes.push_back(NodeSpec("FusedConv", ins, {"y"}, at, "", "ai.onyx"));
  g.outputs = {tensor_info("y", kFloat, spec(yd))};
  ModelSpec m(g, 17);
  m.opsets.push_back({"ai.onyx", 1});
  return move_channels(run_session(m, feeds, true, 1), false);
}

TEST(ConvKernels, ChannelsLastMatchesReference) {
  // ai.onyx FusedConv with channels_last (made by src/opt/channels_last.cc): depthwise
  // layers (3x3 and 5x5 at strides 1 and 2 on their fast paths, 7x7 and dilated windows on
  // the tested-taps path, images from 1x1 up, asymmetric pads, channel counts around the
  // vector widths so the last block is partial) and pointwise ones, with and without bias
  // and residual, every activation; the optimized kernel and the reference composition
  // against Conv + Add + activation channels first.
  std::mt19937 rng(111);
  struct Shape {
    int64_t c, m, group, h, w, k, s, d, pb, pe;
  };
  const std::vector<Shape> shapes = {
      {16, 16, 16, 14, 14, 3, 1, 1, 1, 1}, {20, 20, 20, 9, 11, 3, 1, 1, 1, 1},  {96, 96, 96, 28, 28, 3, 2, 1, 1, 1},
      {36, 36, 36, 7, 7, 5, 1, 1, 2, 2},   {40, 40, 40, 14, 13, 5, 2, 1, 2, 1}, {3, 3, 3, 5, 6, 3, 1, 1, 0, 2},
      {17, 17, 17, 8, 8, 7, 1, 1, 3, 3},   {24, 24, 24, 10, 10, 3, 1, 2, 2, 2}, {64, 64, 64, 1, 1, 3, 1, 1, 1, 1},
      {33, 33, 33, 2, 3, 3, 2, 1, 1, 0},   {48, 48, 48, 6, 30, 3, 1, 1, 1, 1},
      {32, 96, 1, 14, 14, 1, 1, 1, 0, 0},  {96, 20, 1, 7, 9, 1, 1, 1, 0, 0},   {5, 7, 1, 3, 3, 1, 1, 1, 0, 0},
      {160, 320, 1, 7, 7, 1, 1, 1, 0, 0},  {64, 128, 1, 1, 1, 1, 1, 1, 0, 0},  {48, 1152, 1, 1, 1, 1, 1, 1, 0, 0}};
  int i = 0;
  for (const Shape& sh : shapes) {
    for (int rep = 0; rep < 2; ++rep, ++i) {
      ConvCase cc;
      cc.n = i % 5 == 2 ? 2 : 1;
      cc.c = sh.c;
      cc.m = sh.m;
      cc.group = sh.group;
      cc.in = {sh.h, sh.w};
      cc.k = {sh.k, sh.k};
      cc.strides = {sh.s, sh.s};
      cc.dil = {sh.d, sh.d};
      cc.pads = {sh.pb, sh.pb, sh.pe, sh.pe};
      cc.bias = rep == 0 || i % 3 == 0;
      cc.z = rep == 1;
      cc.act = (i * 7) % all_acts().size();
      cc.threads = i % 2 == 0 ? 1 : 3;
      if (cc.y_dims().empty()) continue;
      const CaseData d = make_data(cc, rng);
      const auto [model, feeds] = conv_model(cc, d, true);
      const Tensor want = run_session(model, feeds, true, 1);
      expect_close(want, run_channels_last_kernel(cc, d), kTol, "channels-last FusedConv " + cc.str());
      if (HasFatalFailure()) return;
      expect_close(want, run_channels_last_reference(cc, d), kTol, "channels-last reference " + cc.str());
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace onyx::test

// The Winograd kernel transforms (factored into shared sums) against the products that
// define them, G g G^T with the G of F(4x4, 3x3) and of F(2x2, 3x3).
TEST(WinogradKernels, TransformsAreGgGt) {
  const double G4[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                           {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                           {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  auto expect = [](const double (*G)[3], int n, const float* g, const double* got) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) want += G[i][a] * static_cast<double>(g[a * 3 + b]) * G[j][b];
        ASSERT_NEAR(got[i * n + j], want, 1e-12 * (1 + std::fabs(want))) << i << "," << j;
      }
  };
  for (int trial = 0; trial < 50; ++trial) {
    float g[9];
    for (float& x : g) x = u(rng);
    double o4[36], o2[16];
    onyx::simd::winograd_kernel(g, o4);
    onyx::simd::winograd_kernel2(g, o2);
    expect(G4, 6, g, o4);
    expect(G2, 4, g, o2);
  }
}
