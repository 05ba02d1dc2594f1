// Shape functions of the elementwise family: unary math, activations, broadcast
// arithmetic, variadic Max/Min/Sum/Mean and Clip.
#include "shape/elementwise.h"

#include <algorithm>

namespace onyx::shape {

void require_same_dtype(const InferContext& ctx, const std::vector<size_t>& inputs) {
  DType first = DType::kUndefined;
  size_t first_i = 0;
  for (size_t i : inputs) {
    if (!ctx.has_input(i)) continue;
    DType d = ctx.input_dtype(i);
    if (d == DType::kUndefined) continue;
    if (first == DType::kUndefined) {
      first = d;
      first_i = i;
    } else if (d != first) {
      ctx.fail("inputs {} and {} must have the same element type, got {} and {}", first_i, i,
               dtype_name(first), dtype_name(d));
    }
  }
}

void require_dtype(const InferContext& ctx, size_t i, const std::vector<DType>& allowed,
                   const char* what) {
  if (!ctx.has_input(i)) return;
  DType d = ctx.input_dtype(i);
  if (d == DType::kUndefined) return;
  if (std::find(allowed.begin(), allowed.end(), d) == allowed.end())
    ctx.fail("input {} must be {}, got {}", i, what, dtype_name(d));
}

ir::Shape legacy_rhs_shape(const InferContext& ctx, const ir::Shape& a, const ir::Shape& b) {
  if (ctx.attr_i("broadcast", 0) == 0) {
    bool differ = a.size() != b.size();
    for (size_t k = 0; !differ && k < a.size(); ++k)
      differ = a[k].known() && b[k].known() && a[k].value != b[k].value;
    if (differ)
      ctx.fail("without broadcast=1 (opset {}) both inputs must have the same shape, got {} and {}",
               ctx.opset(), ir::shape_str(a), ir::shape_str(b));
    return b;
  }
  if (b.size() > a.size())
    ctx.fail("with broadcast=1 input B {} must not have a higher rank than A {}", ir::shape_str(b),
             ir::shape_str(a));
  if (!ctx.has_attr("axis")) return b;  // suffix matching is numpy's alignment
  int64_t rank = static_cast<int64_t>(a.size());
  int64_t axis = normalize_axis(ctx, ctx.attr_i("axis", 0), std::max<int64_t>(rank, 1));
  if (axis + static_cast<int64_t>(b.size()) > rank)
    ctx.fail("B of shape {} does not fit into A of shape {} starting at axis {}",
             ir::shape_str(b), ir::shape_str(a), axis);
  ir::Shape out = b;
  out.resize(static_cast<size_t>(rank - axis), ir::Dim(1));
  return out;
}

void infer_broadcast(InferContext& ctx, const std::vector<size_t>& inputs, DType out, bool legacy) {
  std::vector<ir::Shape> shapes;
  for (size_t i : inputs) {
    if (!ctx.has_input(i)) ctx.fail("input {} is required", i);
    if (!ctx.has_shape(i)) {
      ctx.set_output_unranked(0, out);
      return;
    }
    shapes.push_back(ctx.input_shape(i));
  }
  if (legacy && ctx.opset() < 7 && shapes.size() == 2)
    shapes[1] = legacy_rhs_shape(ctx, shapes[0], shapes[1]);
  std::vector<const ir::Shape*> ptrs;
  for (const ir::Shape& s : shapes) ptrs.push_back(&s);
  ctx.set_output(0, out, broadcast_shapes(ctx, ptrs));
}

namespace {

void unary_same(InferContext& ctx) {
  if (!ctx.has_input(0)) ctx.fail("input 0 is required");
  propagate(ctx, 0, 0);
}

void unary_bool(InferContext& ctx) {
  const ir::TypeInfo& t = ctx.input_type(0);
  if (t.is_tensor() && t.has_shape)
    ctx.set_output(0, DType::kBool, t.shape);
  else
    ctx.set_output_unranked(0, DType::kBool);
}

void binary_same(InferContext& ctx) {
  require_same_dtype(ctx, {0, 1});
  infer_broadcast(ctx, {0, 1}, ctx.input_dtype(0), true);
}

void bitshift(InferContext& ctx) {
  std::string dir = ctx.attr_s("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    ctx.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"{}\"", dir);
  require_same_dtype(ctx, {0, 1});
  require_dtype(ctx, 0, {DType::kUint8, DType::kUint16, DType::kUint32, DType::kUint64},
                "an unsigned integer tensor");
  infer_broadcast(ctx, {0, 1}, ctx.input_dtype(0));
}

void mod(InferContext& ctx) {
  int64_t f = ctx.attr_i("fmod", 0);
  if (f != 0 && f != 1) ctx.fail("attribute 'fmod' must be 0 or 1, got {}", f);
  require_same_dtype(ctx, {0, 1});
  infer_broadcast(ctx, {0, 1}, ctx.input_dtype(0));
}

void pow_shape(InferContext& ctx) { infer_broadcast(ctx, {0, 1}, ctx.input_dtype(0), true); }

void variadic(InferContext& ctx) {
  std::vector<size_t> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(i);
  if (ins.empty()) ctx.fail("needs at least one input");
  require_same_dtype(ctx, ins);
  infer_broadcast(ctx, ins, ctx.input_dtype(ins[0]));
}

void prelu(InferContext& ctx) {
  require_same_dtype(ctx, {0, 1});
  propagate(ctx, 0, 0);
  if (!ctx.has_shape(0) || !ctx.has_shape(1)) return;
  const ir::Shape& x = ctx.input_shape(0);
  ir::Shape s = ctx.input_shape(1);
  if (ctx.opset() < 7) {
    // PRelu-1/6: slope is either one element or X's shape without the leading axis
    // aligned at axis 1 (channels); numpy-align it by padding trailing 1s.
    if (s.size() == 1 && x.size() >= 2 && !(s[0].known() && s[0].value == 1))
      s.resize(x.size() - 1, ir::Dim(1));
  }
  if (s.size() > x.size())
    ctx.fail("slope of shape {} does not broadcast to X of shape {}", ir::shape_str(s),
             ir::shape_str(x));
  for (size_t j = 0; j < s.size(); ++j) {
    const ir::Dim& d = s[j];
    const ir::Dim& xd = x[j + x.size() - s.size()];
    if (d.known() && xd.known() && d.value != 1 && d.value != xd.value)
      ctx.fail("slope of shape {} does not broadcast to X of shape {}", ir::shape_str(s),
               ir::shape_str(x));
  }
}

void clip(InferContext& ctx) {
  propagate(ctx, 0, 0);
  if (ctx.opset() < 11) return;
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input_dtype(i) != DType::kUndefined && ctx.input_dtype(0) != DType::kUndefined &&
        ctx.input_dtype(i) != ctx.input_dtype(0))
      ctx.fail("input {} ({}) must have the element type of input 0 ({})", i == 1 ? "min" : "max",
               dtype_name(ctx.input_dtype(i)), dtype_name(ctx.input_dtype(0)));
    if (ctx.has_shape(i)) {
      const ir::Shape& s = ctx.input_shape(i);
      for (const ir::Dim& d : s)
        if (d.known() && d.value != 1)
          ctx.fail("input {} ({}) must be a scalar, got shape {}", i, i == 1 ? "min" : "max",
                   ir::shape_str(s));
    }
  }
}

void gelu(InferContext& ctx) {
  std::string a = ctx.attr_s("approximate", "none");
  if (a != "none" && a != "tanh")
    ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", a);
  propagate(ctx, 0, 0);
}

}  // namespace

void register_elementwise_shapes(ShapeRegistry& r) {
  for (const char* op :
       {"Abs", "Neg", "Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin",
        "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf",
        "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu",
        "Softplus", "Softsign", "ThresholdedRelu", "Shrink", "Mish", "Swish"})
    r.add("", op, unary_same);
  r.add("", "Gelu", gelu);
  r.add("", "IsNaN", unary_bool);
  r.add("", "IsInf", unary_bool);
  r.add("", "PRelu", prelu);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) r.add("", op, binary_same);
  r.add("", "Pow", pow_shape);
  r.add("", "Mod", mod);
  r.add("", "BitShift", bitshift);
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) r.add("", op, variadic);
  r.add("", "Clip", clip);
}

}  // namespace onyx::shape
