// Reference kernels of the ai.onyx fused ops (see fused.h). Each is a composition of the
// reference kernels of the ONNX ops it stands for, run one after another on the same
// buffers: FusedConv is the Conv kernel, then the Add kernel for Z and the activation's
// own kernel, both in place on Y; Attention is Transpose, MatMul, Mul, Add, Softmax and
// MatMul. So a fused node computes what its unfused pattern computes, through the same
// loops, and these kernels stay the oracle the optimized ones are tested against.
#include "kernels/reference/fused.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "shape/infer.h"

namespace onyx::kernels {

std::string_view activation_name(FusedActivation a) {
  switch (a) {
    case FusedActivation::kNone:
      return "";
    case FusedActivation::kRelu:
      return "Relu";
    case FusedActivation::kClip:
      return "Clip";
    case FusedActivation::kSigmoid:
      return "Sigmoid";
    case FusedActivation::kTanh:
      return "Tanh";
    case FusedActivation::kLeakyRelu:
      return "LeakyRelu";
    case FusedActivation::kHardSigmoid:
      return "HardSigmoid";
    case FusedActivation::kHardSwish:
      return "HardSwish";
    case FusedActivation::kSiLU:
      return "SiLU";
    case FusedActivation::kGelu:
      return "Gelu";
    case FusedActivation::kGeluTanh:
      return "GeluTanh";
  }
  return "";
}

Activation parse_activation(const ir::Node& node) {
  const std::string name = node.attr_s("activation", "");
  const std::vector<float> p = node.attr_floats("activation_params");
  Activation a;
  bool found = false;
  for (int k = 0; k <= static_cast<int>(FusedActivation::kGeluTanh); ++k)
    if (activation_name(static_cast<FusedActivation>(k)) == name) {
      a.kind = static_cast<FusedActivation>(k);
      found = true;
    }
  if (!found)
    fail_model(
        "{}: attribute 'activation' is \"{}\"; expected one of \"\", Relu, Clip, Sigmoid, "
        "Tanh, LeakyRelu, HardSigmoid, HardSwish, SiLU, Gelu, GeluTanh",
        node.describe(), name);
  size_t want = 0;
  switch (a.kind) {
    case FusedActivation::kClip:
      want = 2;
      a.alpha = std::numeric_limits<float>::lowest();
      a.beta = std::numeric_limits<float>::max();
      break;
    case FusedActivation::kLeakyRelu:
      want = 1;
      a.alpha = 0.01f;
      break;
    case FusedActivation::kHardSigmoid:
      want = 2;
      a.alpha = 0.2f;
      a.beta = 0.5f;
      break;
    default:
      break;
  }
  if (!p.empty() && p.size() != want)
    fail_model("{}: activation \"{}\" takes {} activation_params, got {}", node.describe(), name,
               want, p.size());
  if (p.size() >= 1) a.alpha = p[0];
  if (p.size() >= 2) a.beta = p[1];
  return a;
}

namespace {

// Opsets of the ONNX ops the fused kernels are made of (their current semantics).
constexpr int kOpset = 20;

ir::Attribute attr_float(const char* name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_int(const char* name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_ints(const char* name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute attr_string(const char* name, std::string v) {
  ir::Attribute a;
  a.name = name;
  a.type = ir::Attribute::Type::kString;
  a.s = std::move(v);
  return a;
}

/// A default-domain node standing for one step of the fused node `of`: its name says
/// which node it is part of, so errors from the step's kernel name the fused node.
ir::Node step_node(const ir::Node& of, const char* op, size_t inputs,
                   std::vector<ir::Attribute> attrs) {
  ir::Node n;
  n.name = (of.name.empty() ? of.op_type : of.name) + "/" + op;
  n.op_type = op;
  n.opset = kOpset;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  n.outputs = {"out"};
  n.attrs = std::move(attrs);
  return n;
}

/// A copy of the fused node as the ONNX op it extends (same inputs and attributes), so
/// that op's kernel and shape function read it as their own.
ir::Node as_onnx(const ir::Node& fused, const char* op) {
  ir::Node n = fused;
  n.domain.clear();
  n.op_type = op;
  n.opset = kOpset;
  return n;
}

/// Runs the reference kernel of `step` on `in` into `out` (tensors allocated by the
/// caller; an output may share its buffer with an input of an elementwise step).
void run_step(KernelContext& ctx, const ir::Node& step, const std::vector<const Value*>& in,
              std::vector<Value>& out) {
  const Registry& reg = default_registry();
  const KernelDef* any = reg.find("", step.op_type, step.opset, DType::kUndefined);
  DType dt = DType::kUndefined;
  if (any && any->type_input >= 0 && static_cast<size_t>(any->type_input) < in.size() &&
      in[any->type_input] && in[any->type_input]->is_tensor())
    dt = in[any->type_input]->tensor().dtype();
  const KernelDef* k = reg.find("", step.op_type, step.opset, dt);
  if (!k) fail_unsupported("{}: no reference kernel for dtype {}", step.describe(), dtype_name(dt));
  KernelContext sub(step, in, &out, nullptr, ctx.pool(), nullptr, ctx.fast_paths());
  k->fn(sub);
}

/// Runs `step` on tensors and returns its output 0, allocated (through ctx, so the run's
/// limits count it) in the shape the step's shape function gives.
Tensor run_new(KernelContext& ctx, const ir::Node& step, const std::vector<const Tensor*>& in) {
  std::vector<ir::TypeInfo> types;
  types.reserve(in.size());
  for (const Tensor* t : in)
    types.push_back(ir::TypeInfo::tensor(t->dtype(), ir::shape_of(t->dims())));
  std::vector<const ir::TypeInfo*> type_ptrs;
  for (const auto& t : types) type_ptrs.push_back(&t);
  shape::InferContext ictx(step, type_ptrs, in, nullptr);
  shape::ShapeFn fn = shape::shape_registry().find("", step.op_type);
  if (!fn) fail_unsupported("{}: no shape function", step.describe());
  fn(ictx);
  const ir::TypeInfo& t = ictx.outputs()[0];
  if (!t.is_tensor() || !t.has_shape || !ir::shape_known(t.shape))
    ctx.fail("step {} has no concrete output shape", step.op_type);
  std::vector<Value> vals;
  for (const Tensor* x : in) vals.emplace_back(*x);
  std::vector<const Value*> ptrs;
  for (const auto& v : vals) ptrs.push_back(&v);
  std::vector<Value> out{Value(ctx.new_tensor(t.elem, ir::shape_dims(t.shape)))};
  run_step(ctx, step, ptrs, out);
  return out[0].tensor();
}

/// Runs an elementwise `step` with `y` as its first input and as its output.
void run_in_place(KernelContext& ctx, const ir::Node& step, Tensor& y,
                  const std::vector<const Tensor*>& more) {
  std::vector<Value> vals{Value(y)};
  for (const Tensor* t : more) vals.emplace_back(*t);
  std::vector<const Value*> ptrs;
  for (const auto& v : vals) ptrs.push_back(&v);
  std::vector<Value> out{Value(y)};
  run_step(ctx, step, ptrs, out);
}

/// A scalar of dtype `dt` holding `v` (through the Cast kernel, so every float type
/// rounds as Cast rounds).
Tensor scalar_as(KernelContext& ctx, float v, DType dt) {
  Tensor f = Tensor::scalar(DType::kFloat, v);
  if (dt == DType::kFloat) return f;
  ir::Node cast = step_node(ctx.node(), "Cast", 1, {attr_int("to", static_cast<int64_t>(dt))});
  return run_new(ctx, cast, {&f});
}

/// Applies the node's activation to y in place through the activation op's kernel.
void activate(KernelContext& ctx, const Activation& a, Tensor& y) {
  const ir::Node& n = ctx.node();
  switch (a.kind) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:
      run_in_place(ctx, step_node(n, "Relu", 1, {}), y, {});
      return;
    case FusedActivation::kSigmoid:
      run_in_place(ctx, step_node(n, "Sigmoid", 1, {}), y, {});
      return;
    case FusedActivation::kTanh:
      run_in_place(ctx, step_node(n, "Tanh", 1, {}), y, {});
      return;
    case FusedActivation::kHardSwish:
      run_in_place(ctx, step_node(n, "HardSwish", 1, {}), y, {});
      return;
    case FusedActivation::kSiLU:
      run_in_place(ctx, step_node(n, "Swish", 1, {attr_float("alpha", 1.0f)}), y, {});
      return;
    case FusedActivation::kLeakyRelu:
      run_in_place(ctx, step_node(n, "LeakyRelu", 1, {attr_float("alpha", a.alpha)}), y, {});
      return;
    case FusedActivation::kHardSigmoid:
      run_in_place(ctx,
                   step_node(n, "HardSigmoid", 1,
                             {attr_float("alpha", a.alpha), attr_float("beta", a.beta)}),
                   y, {});
      return;
    case FusedActivation::kGelu:
    case FusedActivation::kGeluTanh:
      run_in_place(ctx,
                   step_node(n, "Gelu", 1,
                             {attr_string("approximate",
                                          a.kind == FusedActivation::kGelu ? "none" : "tanh")}),
                   y, {});
      return;
    case FusedActivation::kClip: {
      Tensor lo = scalar_as(ctx, a.alpha, y.dtype()), hi = scalar_as(ctx, a.beta, y.dtype());
      run_in_place(ctx, step_node(n, "Clip", 3, {}), y, {&lo, &hi});
      return;
    }
  }
}

/// Runs the ONNX op `op` that the fused node extends on the node's first `inputs`
/// inputs, into the node's output 0.
void run_base(KernelContext& ctx, const char* op, size_t inputs) {
  ir::Node base = as_onnx(ctx.node(), op);
  base.inputs.resize(std::min(base.inputs.size(), inputs));
  std::vector<const Value*> in;
  for (size_t i = 0; i < inputs && i < ctx.num_inputs(); ++i)
    in.push_back(ctx.has_input(i) ? ctx.input_value(i) : nullptr);
  std::vector<Value> out{Value(ctx.output(0))};
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    out.push_back(ctx.has_output(i) ? Value(ctx.output(i)) : Value());
  run_step(ctx, base, in, out);
}

/// perm for channels last -> first (to_first) or back, over `rank` axes:
/// [0, r-1, 1, ..., r-2] or [0, 2, ..., r-1, 1].
std::vector<int64_t> channel_perm(size_t rank, bool to_first) {
  std::vector<int64_t> p{0};
  if (to_first) p.push_back(static_cast<int64_t>(rank) - 1);
  for (size_t i = to_first ? 1 : 2; i + (to_first ? 1 : 0) < rank; ++i) p.push_back(static_cast<int64_t>(i));
  if (!to_first) p.push_back(1);
  return p;
}

/// `t` with its channels moved from last to first (to_first) or back, through Transpose.
Tensor move_channels(KernelContext& ctx, const Tensor& t, bool to_first) {
  return run_new(ctx,
                 step_node(ctx.node(), "Transpose", 1, {attr_ints("perm", channel_perm(t.rank(), to_first))}),
                 {&t});
}

/// Writes the channels-first `y` into the node's channels-last output 0.
void store_channels_last(KernelContext& ctx, const Tensor& y) {
  const Value yv(y);
  std::vector<Value> out{Value(ctx.output(0))};
  run_step(ctx, step_node(ctx.node(), "Transpose", 1, {attr_ints("perm", channel_perm(y.rank(), false))}),
           {&yv}, out);
}

/// FusedConv with channels_last: X and Z moved to channels first, the plain composition,
/// Y moved back.
void fused_conv_channels_last(KernelContext& ctx, const Activation& act) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3)
    ctx.fail("channels_last: X must have rank >= 3, got {}", dims_str(x.dims()));
  const Tensor xt = move_channels(ctx, x, true);
  ir::Node base = as_onnx(ctx.node(), "Conv");
  std::vector<const Tensor*> in{&xt, &ctx.input(1)};
  if (ctx.num_inputs() > 2 && ctx.has_input(2)) in.push_back(&ctx.input(2));
  base.inputs.resize(in.size());
  Tensor y = run_new(ctx, base, in);
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    const Tensor& z = ctx.input(3);
    if (z.rank() != x.rank() || z.dtype() != y.dtype())
      ctx.fail("Z is {}{}, expected the shape of Y", dtype_name(z.dtype()), dims_str(z.dims()));
    const Tensor zt = move_channels(ctx, z, true);
    if (zt.dims() != y.dims())
      ctx.fail("Z is {}{}, expected Y's {} (channels last)", dtype_name(z.dtype()), dims_str(z.dims()),
               dims_str(ctx.output(0).dims()));
    run_in_place(ctx, step_node(ctx.node(), "Add", 2, {}), y, {&zt});
  }
  activate(ctx, act, y);
  store_channels_last(ctx, y);
}

void fused_conv(KernelContext& ctx) {
  const Activation act = parse_activation(ctx.node());
  if (ctx.attr_i("channels_last", 0) != 0) {
    fused_conv_channels_last(ctx, act);
    return;
  }
  run_base(ctx, "Conv", 3);
  Tensor& y = ctx.output(0);
  if (ctx.has_input(3)) {
    const Tensor& z = ctx.input(3);
    if (z.dims() != y.dims() || z.dtype() != y.dtype())
      ctx.fail("Z is {}{}, expected Y's {}{}", dtype_name(z.dtype()), dims_str(z.dims()),
               dtype_name(y.dtype()), dims_str(y.dims()));
    run_in_place(ctx, step_node(ctx.node(), "Add", 2, {}), y, {&z});
  }
  activate(ctx, act, y);
}

void fused_gemm(KernelContext& ctx) {
  const Activation act = parse_activation(ctx.node());
  run_base(ctx, "Gemm", 3);
  activate(ctx, act, ctx.output(0));
}

void fused_matmul(KernelContext& ctx) {
  const Activation act = parse_activation(ctx.node());
  run_base(ctx, "MatMul", 2);
  Tensor& y = ctx.output(0);
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.rank() != 1 || y.rank() < 1 || b.dim(0) != y.dim(y.rank() - 1) || b.dtype() != y.dtype())
      ctx.fail("bias is {}{}, expected a 1-D {} of the last dim of Y {}", dtype_name(b.dtype()),
               dims_str(b.dims()), dtype_name(y.dtype()), dims_str(y.dims()));
    run_in_place(ctx, step_node(ctx.node(), "Add", 2, {}), y, {&b});
  }
  activate(ctx, act, y);
}

/// ai.onyx GlobalAveragePool: ONNX's, with the channels last when channels_last = 1.
void global_average_pool(KernelContext& ctx) {
  if (ctx.attr_i("channels_last", 0) == 0) {
    run_base(ctx, "GlobalAveragePool", 1);
    return;
  }
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3)
    ctx.fail("channels_last: X must have rank >= 3, got {}", dims_str(x.dims()));
  const Tensor xt = move_channels(ctx, x, true);
  const Tensor y = run_new(ctx, as_onnx(ctx.node(), "GlobalAveragePool"), {&xt});
  store_channels_last(ctx, y);
}

void gelu(KernelContext& ctx) {
  run_base(ctx, "Gelu", 1);
}

void layer_norm(KernelContext& ctx) {
  run_base(ctx, "LayerNormalization", 3);
}

void attention(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    ctx.fail("Q, K and V must have rank >= 2, got {}, {}, {}", dims_str(q.dims()),
             dims_str(k.dims()), dims_str(v.dims()));
  const int64_t head = q.dim(q.rank() - 1);
  const float scale = ctx.has_attr("scale") ? ctx.attr_f("scale", 1.0f)
                                            : 1.0f / std::sqrt(static_cast<float>(head));
  std::vector<int64_t> perm(k.rank());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  Tensor kt = run_new(ctx, step_node(n, "Transpose", 1, {attr_ints("perm", perm)}), {&k});
  Tensor scores = run_new(ctx, step_node(n, "MatMul", 2, {}), {&q, &kt});
  Tensor s = scalar_as(ctx, scale, q.dtype());
  run_in_place(ctx, step_node(n, "Mul", 2, {}), scores, {&s});
  if (ctx.has_input(3)) {
    const Tensor& m = ctx.input(3);
    Tensor bias = m;
    if (m.dtype() == DType::kBool) {  // true: attend (add 0); false: masked out (add -inf)
      Tensor zero = scalar_as(ctx, 0.0f, q.dtype());
      Tensor ninf = scalar_as(ctx, -std::numeric_limits<float>::infinity(), q.dtype());
      bias = run_new(ctx, step_node(n, "Where", 3, {}), {&m, &zero, &ninf});
    } else if (m.dtype() != q.dtype()) {
      ctx.fail("mask must be bool or {} (Q's dtype), got {}", dtype_name(q.dtype()),
               dtype_name(m.dtype()));
    }
    const Dims sd = scores.dims();
    scores = run_new(ctx, step_node(n, "Add", 2, {}), {&scores, &bias});
    const Dims& ad = scores.dims();
    if (ad[ad.size() - 1] != sd[sd.size() - 1] || ad[ad.size() - 2] != sd[sd.size() - 2])
      ctx.fail("mask {} does not broadcast to the scores' last two axes {}", dims_str(m.dims()),
               dims_str(sd));
  }
  Tensor p = run_new(ctx, step_node(n, "Softmax", 1, {attr_int("axis", -1)}), {&scores});
  const Value pv(p);
  std::vector<Value> out{Value(ctx.output(0))};
  run_step(ctx, step_node(n, "MatMul", 2, {}), {&pv, ctx.input_value(2)}, out);
}

}  // namespace

void register_fused(Registry& r) {
  const std::string d(kOnyxDomain);
  r.add(d, "FusedConv", 1, 1, float_types(), fused_conv);
  r.add(d, "FusedGemm", 1, 1, float_types(), fused_gemm);
  r.add(d, "FusedMatMul", 1, 1, float_types(), fused_matmul);
  r.add(d, "Gelu", 1, 1, float_types(), gelu);
  r.add(d, "LayerNormalization", 1, 1, float_types(), layer_norm);
  r.add(d, "Attention", 1, 1, float_types(), attention);
  r.add(d, "GlobalAveragePool", 1, 1, float_types(), global_average_pool);
}

}  // namespace onyx::kernels
