// Optimized float unary ops: math functions and activations (Relu, Clip, Sigmoid, Tanh,
// Gelu, ...) on the SIMD functions of src/simd/activations.cc, threaded over blocks of
// elements. Twins of src/kernels/reference/elementwise.cc and Clip in
// elementwise_binary.cc; the attributes are read once, when the kernel is made.
#include <limits>
#include <string>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "simd/activations.h"

namespace onyx::kernels::cpu {
namespace {

/// Elements per block: a cheap op moves memory, a transcendental one computes.
int64_t grain_of(simd::Unary op) {
  switch (op) {
    case simd::Unary::kRelu:
    case simd::Unary::kLeakyRelu:
    case simd::Unary::kClip:
    case simd::Unary::kHardSigmoid:
    case simd::Unary::kHardSwish:
    case simd::Unary::kNeg:
    case simd::Unary::kAbs:
    case simd::Unary::kFloor:
    case simd::Unary::kCeil:
    case simd::Unary::kRound:
    case simd::Unary::kSign:
    case simd::Unary::kThresholdedRelu:
    case simd::Unary::kIdentity:
    case simd::Unary::kSquare:
    case simd::Unary::kCube:
    case simd::Unary::kOne:
      return 1 << 15;
    default:
      return 1 << 12;
  }
}

/// y = op(x) over the whole tensor; false when the dtypes or sizes are not float ones.
bool run_unary(KernelContext& ctx, simd::Unary op, simd::UnaryParams p) {
  if (!ctx.has_input(0)) return false;
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (!is_float(x) || !is_float(y) || x.numel() != y.numel()) return false;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_blocks(ctx.pool(), x.numel(), grain_of(op),
                  [&](int64_t i0, int64_t i1) { simd::unary(op, p, px + i0, py + i0, i1 - i0); });
  return true;
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(simd::Unary op, simd::UnaryParams p, KernelFn reference)
      : op_(op), p_(p), reference_(reference) {}
  void run(KernelContext& ctx) const override {
    if (!run_unary(ctx, op_, p_)) reference_(ctx);
  }
  std::string_view name() const override { return "cpu.unary"; }
  bool overwrites_outputs() const override { return true; }

 private:
  simd::Unary op_;
  simd::UnaryParams p_;
  KernelFn reference_;
};

/// Clip: bounds from attributes before opset 11, from optional single-value inputs after.
class ClipKernel final : public Kernel {
 public:
  ClipKernel(bool from_inputs, float lo, float hi, KernelFn reference)
      : from_inputs_(from_inputs), lo_(lo), hi_(hi), reference_(reference) {}
  void run(KernelContext& ctx) const override {
    simd::UnaryParams p{lo_, hi_};
    bool ok = true;
    if (from_inputs_) {
      for (size_t i = 1; i <= 2 && ok; ++i) {
        if (!ctx.has_input(i)) continue;
        const Tensor& b = ctx.input(i);
        ok = is_float(b) && b.numel() == 1;
        if (ok) (i == 1 ? p.a : p.b) = b.data<float>()[0];
      }
    }
    if (!ok || !run_unary(ctx, simd::Unary::kClip, p)) reference_(ctx);
  }
  std::string_view name() const override { return "cpu.clip"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool from_inputs_;
  float lo_, hi_;
  KernelFn reference_;
};

template <simd::Unary Op>
std::unique_ptr<Kernel> make_plain(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  return std::make_unique<UnaryKernel>(Op, simd::UnaryParams{}, init.reference);
}

/// Ops with float attributes: `a` and `b` name them (nullptr: unused), with defaults.
struct AttrOp {
  const char* op;
  simd::Unary fn;
  const char* a;
  float a_def;
  const char* b;
  float b_def;
};

constexpr AttrOp kAttrOps[] = {
    {"LeakyRelu", simd::Unary::kLeakyRelu, "alpha", 0.01f, nullptr, 0},
    {"HardSigmoid", simd::Unary::kHardSigmoid, "alpha", 0.2f, "beta", 0.5f},
    {"Elu", simd::Unary::kElu, "alpha", 1.0f, nullptr, 0},
    {"Selu", simd::Unary::kSelu, "alpha", 1.67326319217681884765625f, "gamma",
     1.05070102214813232421875f},
    {"Celu", simd::Unary::kCelu, "alpha", 1.0f, nullptr, 0},
    {"ThresholdedRelu", simd::Unary::kThresholdedRelu, "alpha", 1.0f, nullptr, 0},
    {"Swish", simd::Unary::kSwish, "alpha", 1.0f, nullptr, 0},
};

std::unique_ptr<Kernel> make_attr_op(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  for (const AttrOp& e : kAttrOps) {
    if (init.node.op_type != e.op) continue;
    simd::UnaryParams p;
    p.a = init.node.attr_f(e.a, e.a_def);
    if (e.b) p.b = init.node.attr_f(e.b, e.b_def);
    if (e.fn == simd::Unary::kCelu && p.a == 0) return nullptr;  // the reference reports it
    return std::make_unique<UnaryKernel>(e.fn, p, init.reference);
  }
  return nullptr;
}

std::unique_ptr<Kernel> make_clip(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  const bool from_inputs = init.node.opset >= 11;
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (!from_inputs) {
    lo = init.node.attr_f("min", lo);
    hi = init.node.attr_f("max", hi);
  }
  return std::make_unique<ClipKernel>(from_inputs, lo, hi, init.reference);
}

/// Gelu (ONNX 20 and ai.onyx 1): approximate "none" (erf) or "tanh".
std::unique_ptr<Kernel> make_gelu(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  const std::string a = init.node.attr_s("approximate", "none");
  if (a != "none" && a != "tanh") return nullptr;  // the reference reports it
  return std::make_unique<UnaryKernel>(a == "tanh" ? simd::Unary::kGeluTanh : simd::Unary::kGelu,
                                       simd::UnaryParams{}, init.reference);
}

}  // namespace

void register_activation(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  struct Plain {
    const char* op;
    KernelFactory make;
  };
  const Plain plain[] = {
      {"Relu", make_plain<simd::Unary::kRelu>},
      {"Sigmoid", make_plain<simd::Unary::kSigmoid>},
      {"Tanh", make_plain<simd::Unary::kTanh>},
      {"HardSwish", make_plain<simd::Unary::kHardSwish>},
      {"Exp", make_plain<simd::Unary::kExp>},
      {"Log", make_plain<simd::Unary::kLog>},
      {"Sqrt", make_plain<simd::Unary::kSqrt>},
      {"Reciprocal", make_plain<simd::Unary::kReciprocal>},
      {"Neg", make_plain<simd::Unary::kNeg>},
      {"Abs", make_plain<simd::Unary::kAbs>},
      {"Erf", make_plain<simd::Unary::kErf>},
      {"Softplus", make_plain<simd::Unary::kSoftplus>},
      {"Mish", make_plain<simd::Unary::kMish>},
      {"Softsign", make_plain<simd::Unary::kSoftsign>},
      {"Floor", make_plain<simd::Unary::kFloor>},
      {"Ceil", make_plain<simd::Unary::kCeil>},
      {"Round", make_plain<simd::Unary::kRound>},
      {"Sign", make_plain<simd::Unary::kSign>},
  };
  for (const Plain& p : plain) r.add_optimized("", p.op, 1, 1000, f32, p.make);
  for (const AttrOp& e : kAttrOps) r.add_optimized("", e.op, 1, 1000, f32, make_attr_op);
  r.add_optimized("", "Clip", 1, 1000, f32, make_clip);
  r.add_optimized("", "Gelu", 20, 1000, f32, make_gelu);
  r.add_optimized("ai.onyx", "Gelu", 1, 1, f32, make_gelu);
}

}  // namespace onyx::kernels::cpu
