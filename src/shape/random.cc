// Shape functions of the random family: RandomNormal, RandomUniform, their *Like forms,
// Bernoulli and Multinomial.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

bool is_float_type(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

/// The 'dtype' attribute as a DType (`def` when absent); fails on an invalid code.
DType dtype_attr(const InferContext& ctx, DType def) {
  if (!ctx.has_attr("dtype")) return def;
  const int64_t c = ctx.attr_i("dtype", 0);
  if (c <= 0 || c > kMaxDTypeCode || !dtype_valid(static_cast<int32_t>(c)))
    ctx.fail("attribute 'dtype' is not a valid TensorProto data type: {}", c);
  return static_cast<DType>(c);
}

DType float_dtype(const InferContext& ctx, DType def) {
  const DType t = dtype_attr(ctx, def);
  if (!is_float_type(t))
    ctx.fail("output type must be float, double, float16 or bfloat16, got {}{}", dtype_name(t),
             ctx.has_attr("dtype") ? "" : " (from the input; set 'dtype')");
  return t;
}

void random_fixed(InferContext& ctx) {
  const DType dt = float_dtype(ctx, DType::kFloat);
  if (!ctx.has_attr("shape")) ctx.fail("attribute 'shape' is required");
  const std::vector<int64_t> dims = ctx.attr_ints("shape");
  check_rank(ctx, static_cast<int64_t>(dims.size()), "the output (attribute 'shape')");
  Shape s;
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("attribute 'shape' has a negative dim {}", d);
    s.emplace_back(d);
  }
  ctx.set_output(0, dt, std::move(s));
}

void random_like(InferContext& ctx) {
  const DType dt = float_dtype(ctx, ctx.input_dtype(0));
  if (ctx.has_shape(0)) ctx.set_output(0, dt, ctx.input_shape(0));
  else ctx.set_output_unranked(0, dt);
}

void bernoulli(InferContext& ctx) {
  const DType in = ctx.input_dtype(0);
  if (!is_float_type(in)) ctx.fail("input must be a float tensor, got {}", dtype_name(in));
  const DType out = dtype_attr(ctx, in);
  if (!is_float_type(out) && !(dtype_is_integer(out) && dtype_bits(out) >= 8) &&
      out != DType::kBool)
    ctx.fail("output type must be numeric or bool, got {}", dtype_name(out));
  if (ctx.has_shape(0)) ctx.set_output(0, out, ctx.input_shape(0));
  else ctx.set_output_unranked(0, out);
}

void multinomial(InferContext& ctx) {
  const DType in = ctx.input_dtype(0);
  if (!is_float_type(in)) ctx.fail("input must be a float tensor, got {}", dtype_name(in));
  const DType out = dtype_attr(ctx, DType::kInt32);
  if (out != DType::kInt32 && out != DType::kInt64)
    ctx.fail("attribute 'dtype' must be int32 or int64, got {}", dtype_name(out));
  const int64_t n = ctx.attr_i("sample_size", 1);
  if (n < 0) ctx.fail("attribute 'sample_size' must be >= 0, got {}", n);
  Dim batch = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    const Shape& s = ctx.input_shape(0);
    if (s.size() != 2) ctx.fail("input must be 2-D [batch_size, class_size], got {}", ir::shape_str(s));
    batch = s[0];
  }
  ctx.set_output(0, out, {batch, Dim(n)});
}

}  // namespace

void register_random_shapes(ShapeRegistry& r) {
  r.add("", "RandomNormal", random_fixed);
  r.add("", "RandomUniform", random_fixed);
  r.add("", "RandomNormalLike", random_like);
  r.add("", "RandomUniformLike", random_like);
  r.add("", "Bernoulli", bernoulli);
  r.add("", "Multinomial", multinomial);
}

}  // namespace onyx::shape
