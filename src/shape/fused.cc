// Shape functions of the ai.onyx fused ops (src/kernels/reference/fused.h): each is the
// shape function of the ONNX op it extends, plus the checks of its extra inputs and of
// its activation attributes.
#include "kernels/reference/fused.h"

#include <algorithm>
#include <string>
#include <vector>

#include "shape/infer.h"

namespace onyx::shape {
namespace {

constexpr int kOpset = 20;  // the ONNX opset whose semantics the fused ops follow

/// Runs the shape function of ONNX op `op` on the node's first `inputs` inputs and
/// returns its output types.
std::vector<ir::TypeInfo> infer_as(InferContext& ctx, const char* op, size_t inputs) {
  ir::Node base = ctx.node();
  base.domain.clear();
  base.op_type = op;
  base.opset = kOpset;
  if (base.inputs.size() > inputs) base.inputs.resize(inputs);
  std::vector<const ir::TypeInfo*> types;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < inputs && i < ctx.num_inputs(); ++i) {
    types.push_back(ctx.has_input(i) ? &ctx.input_type(i) : nullptr);
    values.push_back(ctx.peek_value(i));
  }
  InferContext sub(base, types, values, nullptr);
  ShapeFn fn = shape_registry().find("", op);
  if (!fn) ctx.fail("no shape function for {}", op);
  fn(sub);
  ctx.note_values_read(sub.values_read());  // inputs 0..inputs-1 are the same in both
  return std::move(sub.outputs());
}

/// A tensor type with its channels moved from the last axis to axis 1 (to_first) or back;
/// unchanged when its rank is unknown or below 3.
ir::TypeInfo move_channels(ir::TypeInfo t, bool to_first) {
  if (!t.is_tensor() || !t.has_shape || t.shape.size() < 3) return t;
  ir::Shape& s = t.shape;
  if (to_first) {
    ir::Dim c = s.back();
    s.pop_back();
    s.insert(s.begin() + 1, c);
  } else {
    ir::Dim c = s[1];
    s.erase(s.begin() + 1);
    s.push_back(c);
  }
  return t;
}

/// infer_as for a channels-last node: its rank->=3 inputs among `moved` taken channels
/// first, the outputs moved back.
std::vector<ir::TypeInfo> infer_channels_last(InferContext& ctx, const char* op, size_t inputs,
                                              std::vector<size_t> moved) {
  for (size_t i : moved)
    if (i < ctx.num_inputs() && ctx.has_input(i) && ctx.has_shape(i) && ctx.input_shape(i).size() < 3)
      ctx.fail("channels_last: input {} must have rank >= 3, got {}", i, ir::shape_str(ctx.input_shape(i)));
  ir::Node base = ctx.node();
  base.domain.clear();
  base.op_type = op;
  base.opset = kOpset;
  if (base.inputs.size() > inputs) base.inputs.resize(inputs);
  std::vector<ir::TypeInfo> held;
  held.reserve(inputs);
  std::vector<const ir::TypeInfo*> types;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < inputs && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      types.push_back(nullptr);
    } else {
      const bool mv = std::find(moved.begin(), moved.end(), i) != moved.end();
      held.push_back(mv ? move_channels(ctx.input_type(i), true) : ctx.input_type(i));
      types.push_back(&held.back());
    }
    values.push_back(ctx.peek_value(i));
  }
  InferContext sub(base, types, values, nullptr);
  ShapeFn fn = shape_registry().find("", op);
  if (!fn) ctx.fail("no shape function for {}", op);
  fn(sub);
  ctx.note_values_read(sub.values_read());
  std::vector<ir::TypeInfo> outs = std::move(sub.outputs());
  for (auto& o : outs) o = move_channels(std::move(o), false);
  return outs;
}

void set_all(InferContext& ctx, std::vector<ir::TypeInfo> outs) {
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, std::move(outs[i]));
}

bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  return !a.known() || !b.known() || a.value == b.value;
}

void fused_conv(InferContext& ctx) {
  kernels::parse_activation(ctx.node());
  const bool last = ctx.node().attr_i("channels_last", 0) != 0;
  auto outs = last ? infer_channels_last(ctx, "Conv", 3, {0}) : infer_as(ctx, "Conv", 3);
  if (ctx.has_input(3) && ctx.has_shape(3) && outs[0].is_tensor() && outs[0].has_shape) {
    const ir::Shape& z = ctx.input_shape(3);
    const ir::Shape& y = outs[0].shape;
    bool ok = z.size() == y.size();
    for (size_t i = 0; ok && i < z.size(); ++i) ok = same_dim(z[i], y[i]);
    if (!ok) ctx.fail("Z {} must have the shape of Y {}", ir::shape_str(z), ir::shape_str(y));
  }
  if (ctx.has_input(3) && ctx.input_dtype(3) != ctx.input_dtype(0))
    ctx.fail("Z must have X's dtype {}, got {}", dtype_name(ctx.input_dtype(0)),
             dtype_name(ctx.input_dtype(3)));
  set_all(ctx, std::move(outs));
}

void global_average_pool(InferContext& ctx) {
  if (ctx.node().attr_i("channels_last", 0) != 0)
    set_all(ctx, infer_channels_last(ctx, "GlobalAveragePool", 1, {0}));
  else
    set_all(ctx, infer_as(ctx, "GlobalAveragePool", 1));
}

void fused_gemm(InferContext& ctx) {
  kernels::parse_activation(ctx.node());
  set_all(ctx, infer_as(ctx, "Gemm", 3));
}

void fused_matmul(InferContext& ctx) {
  kernels::parse_activation(ctx.node());
  auto outs = infer_as(ctx, "MatMul", 2);
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != ctx.input_dtype(0))
      ctx.fail("bias must have A's dtype {}, got {}", dtype_name(ctx.input_dtype(0)),
               dtype_name(ctx.input_dtype(2)));
    if (ctx.has_shape(2)) {
      const ir::Shape& b = ctx.input_shape(2);
      if (b.size() != 1) ctx.fail("bias must be 1-D, got {}", ir::shape_str(b));
      if (outs[0].is_tensor() && outs[0].has_shape) {
        const ir::Shape& y = outs[0].shape;
        if (y.empty() || !same_dim(b[0], y.back()))
          ctx.fail("bias {} must have the length of Y's last axis {}", ir::shape_str(b),
                   ir::shape_str(y));
      }
    }
  }
  set_all(ctx, std::move(outs));
}

void gelu(InferContext& ctx) {
  std::string a = ctx.attr_s("approximate", "none");
  if (a != "none" && a != "tanh")
    ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", a);
  set_all(ctx, infer_as(ctx, "Gelu", 1));
}

void layer_norm(InferContext& ctx) {
  set_all(ctx, infer_as(ctx, "LayerNormalization", 3));
}

/// Q [..., T, D], K [..., S, D], V [..., S, Dv], mask broadcastable to [..., T, S]; the
/// leading axes broadcast against each other as MatMul's do. Y [..., T, Dv].
void attention(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!dtype_is_float(dt)) ctx.fail("Q must be a float tensor, got {}", dtype_name(dt));
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input_dtype(i) != dt)
      ctx.fail("{} must have Q's dtype {}, got {}", i == 1 ? "K" : "V", dtype_name(dt),
               dtype_name(ctx.input_dtype(i)));
  const bool masked = ctx.has_input(3);
  if (masked && ctx.input_dtype(3) != dt && ctx.input_dtype(3) != DType::kBool)
    ctx.fail("mask must be bool or {}, got {}", dtype_name(dt), dtype_name(ctx.input_dtype(3)));
  if (ctx.has_attr("scale")) ctx.attr_f("scale", 1.0f);  // type check
  if (!ctx.has_shape(0) || !ctx.has_shape(1) || !ctx.has_shape(2) ||
      (masked && !ctx.has_shape(3))) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& q = ctx.input_shape(0);
  const ir::Shape& k = ctx.input_shape(1);
  const ir::Shape& v = ctx.input_shape(2);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) ctx.fail("Q, K and V must have rank >= 2");
  const ir::Dim t = q[q.size() - 2], s = k[k.size() - 2];
  if (!same_dim(q.back(), k.back()))
    ctx.fail("Q {} and K {} must have the same last axis (the head size)", ir::shape_str(q),
             ir::shape_str(k));
  if (!same_dim(s, v[v.size() - 2]))
    ctx.fail("K {} and V {} must have the same sequence length (axis -2)", ir::shape_str(k),
             ir::shape_str(v));
  ir::Shape qb(q.begin(), q.end() - 2), kb(k.begin(), k.end() - 2), vb(v.begin(), v.end() - 2), mb;
  std::vector<const ir::Shape*> lead = {&qb, &kb, &vb};
  if (masked) {
    const ir::Shape& m = ctx.input_shape(3);
    auto fits = [](const ir::Dim& d, const ir::Dim& want) {
      return !d.known() || d.value == 1 || !want.known() || d.value == want.value;
    };
    if (m.size() >= 1 && !fits(m.back(), s))
      ctx.fail("mask {} does not broadcast to [..., T, S] with S = {}", ir::shape_str(m), s.str());
    if (m.size() >= 2 && !fits(m[m.size() - 2], t))
      ctx.fail("mask {} does not broadcast to [..., T, S] with T = {}", ir::shape_str(m), t.str());
    if (m.size() > 2) mb.assign(m.begin(), m.end() - 2);
    lead.push_back(&mb);
  }
  ir::Shape y = broadcast_shapes(ctx, lead);
  y.push_back(t);
  y.push_back(v.back());
  ctx.set_output(0, dt, std::move(y));
}

}  // namespace

void register_fused_shapes(ShapeRegistry& r) {
  const std::string d(kernels::kOnyxDomain);
  r.add(d, "FusedConv", fused_conv);
  r.add(d, "FusedGemm", fused_gemm);
  r.add(d, "FusedMatMul", fused_matmul);
  r.add(d, "Gelu", gelu);
  r.add(d, "LayerNormalization", layer_norm);
  r.add(d, "Attention", attention);
  r.add(d, "GlobalAveragePool", global_average_pool);
}

}  // namespace onyx::shape
