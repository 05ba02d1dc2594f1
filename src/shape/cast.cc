// Shape functions of the cast family: Cast and CastLike.
#include <algorithm>
#include <cctype>

#include "shape/elementwise.h"

namespace onyx::shape {

namespace {

/// The target type of Cast: an int code, or (Cast-1..5) a TensorProto type name.
DType cast_target(const InferContext& ctx) {
  const ir::Attribute* a = ctx.node().attr("to");
  if (!a) ctx.fail("attribute 'to' is required");
  if (a->type == ir::Attribute::Type::kString) {
    std::string s = a->s;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    for (int32_t c = 1; c <= kMaxDTypeCode; ++c)
      if (dtype_name(static_cast<DType>(c)) == s) return static_cast<DType>(c);
    ctx.fail("attribute 'to' names an unknown type \"{}\"", a->s);
  }
  int64_t code = ctx.attr_i("to", 0);
  if (code < 1 || code > kMaxDTypeCode || !dtype_valid(static_cast<int32_t>(code)))
    ctx.fail("attribute 'to' is not a valid TensorProto data type: {}", code);
  DType t = static_cast<DType>(code);
  if (t == DType::kComplex64 || t == DType::kComplex128)
    ctx.fail("casting to {} is not supported by the operator", dtype_name(t));
  return t;
}

void set_like_input(InferContext& ctx, DType dt) {
  const ir::TypeInfo& t = ctx.input_type(0);
  if (t.is_tensor() && t.has_shape)
    ctx.set_output(0, dt, t.shape);
  else
    ctx.set_output_unranked(0, dt);
}

void cast(InferContext& ctx) {
  if (ctx.has_attr("round_mode")) {
    std::string m = ctx.attr_s("round_mode", "up");
    if (m != "up" && m != "down" && m != "nearest")
      ctx.fail("attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"{}\"", m);
  }
  set_like_input(ctx, cast_target(ctx));
}

void cast_like(InferContext& ctx) { set_like_input(ctx, ctx.input_dtype(1)); }

}  // namespace

void register_cast_shapes(ShapeRegistry& r) {
  r.add("", "Cast", cast);
  r.add("", "CastLike", cast_like);
}

}  // namespace onyx::shape
