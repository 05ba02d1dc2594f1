// Shape functions of the ai.onnx.ml family: LabelEncoder, TreeEnsemble, Binarizer,
// ArrayFeatureExtractor.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

constexpr const char* kMl = "ai.onnx.ml";

/// The element type named by a keys_* / values_* attribute family ("keys" or
/// "values"), or kUndefined when none is set. Fails when several are.
DType encoder_attr_type(const InferContext& ctx, const std::string& prefix) {
  DType t = DType::kUndefined;
  int count = 0;
  const std::pair<const char*, DType> lists[] = {
      {"_strings", DType::kString}, {"_int64s", DType::kInt64}, {"_floats", DType::kFloat}};
  for (const auto& [suffix, dt] : lists)
    if (ctx.has_attr(prefix + suffix)) {
      t = dt;
      ++count;
    }
  if (const ir::Attribute* a = ctx.node().attr(prefix + "_tensor")) {
    t = a->t.dtype();
    ++count;
  }
  if (count > 1) ctx.fail("only one of the '{}_*' attributes may be set", prefix);
  return t;
}

/// Number of entries of the keys_* / values_* attribute that is set.
int64_t encoder_attr_len(const InferContext& ctx, const std::string& prefix) {
  const ir::Node& n = ctx.node();
  if (const Tensor* t = n.attr_t(prefix + "_tensor")) return t->numel();
  if (n.has_attr(prefix + "_strings")) return static_cast<int64_t>(n.attr_strings(prefix + "_strings").size());
  if (n.has_attr(prefix + "_int64s")) return static_cast<int64_t>(n.attr_ints(prefix + "_int64s").size());
  return static_cast<int64_t>(n.attr_floats(prefix + "_floats").size());
}

void label_encoder(InferContext& ctx) {
  const DType in = ctx.input_dtype(0);
  DType out;
  if (ctx.opset() < 2) {
    // ai.onnx.ml-1: string <-> int64 through 'classes_strings'
    if (in == DType::kString) out = DType::kInt64;
    else if (in == DType::kInt64) out = DType::kString;
    else ctx.fail("input must be string or int64, got {}", dtype_name(in));
  } else {
    const DType k = encoder_attr_type(ctx, "keys");
    out = encoder_attr_type(ctx, "values");
    if (k == DType::kUndefined || out == DType::kUndefined)
      ctx.fail("one 'keys_*' and one 'values_*' attribute must be set");
    if (k != in)
      ctx.fail("input type {} differs from the keys type {}", dtype_name(in), dtype_name(k));
    if (encoder_attr_len(ctx, "keys") != encoder_attr_len(ctx, "values"))
      ctx.fail("keys ({}) and values ({}) must have the same length", encoder_attr_len(ctx, "keys"),
               encoder_attr_len(ctx, "values"));
    for (DType t : {k, out})
      if (t != DType::kString && t != DType::kInt64 && t != DType::kFloat && t != DType::kInt32 &&
          t != DType::kInt16 && t != DType::kDouble)
        ctx.fail("keys and values must be string, int64, int32, int16, float or double, got {}",
                 dtype_name(t));
  }
  if (ctx.has_shape(0)) ctx.set_output(0, out, ctx.input_shape(0));
  else ctx.set_output_unranked(0, out);
}

void tree_ensemble(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kFloat16)
    ctx.fail("X must be float, double or float16, got {}", dtype_name(dt));
  if (!ctx.has_attr("n_targets")) ctx.fail("attribute 'n_targets' is required");
  const int64_t targets = ctx.attr_i("n_targets", 0);
  if (targets < 0) ctx.fail("attribute 'n_targets' must be >= 0, got {}", targets);
  const int64_t agg = ctx.attr_i("aggregate_function", 1);
  if (agg < 0 || agg > 3) ctx.fail("attribute 'aggregate_function' must be 0..3, got {}", agg);
  const int64_t post = ctx.attr_i("post_transform", 0);
  if (post < 0 || post > 4) ctx.fail("attribute 'post_transform' must be 0..4, got {}", post);
  Dim n = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    const Shape& s = ctx.input_shape(0);
    if (s.size() != 2 && s.size() != 1)
      ctx.fail("X must be [N, F], got {}", ir::shape_str(s));
    n = s.size() == 2 ? s[0] : Dim(1);
  }
  ctx.set_output(0, dt, {n, Dim(targets)});
}

void binarizer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kInt64 && dt != DType::kInt32)
    ctx.fail("X must be float, double, int64 or int32, got {}", dtype_name(dt));
  propagate(ctx);
}

void array_feature_extractor(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != DType::kInt64)
    ctx.fail("Y (indices) must be int64, got {}", dtype_name(ctx.input_dtype(1)));
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  Shape s = ctx.input_shape(0);
  if (s.empty()) ctx.fail("X must have rank >= 1");
  Dim count = ctx.fresh_dim();
  if (ctx.has_shape(1)) {
    int64_t c = 1;
    for (const Dim& d : ctx.input_shape(1)) {
      if (!d.known()) {
        c = -1;
        break;
      }
      c = checked_mul(ctx, c, d.value, "the number of indices Y");
    }
    if (c >= 0) count = Dim(c);
  }
  if (s.size() == 1) s.insert(s.begin(), Dim(1));
  s.back() = count;
  ctx.set_output(0, dt, std::move(s));
}

}  // namespace

void register_ml_shapes(ShapeRegistry& r) {
  r.add(kMl, "LabelEncoder", label_encoder);
  r.add(kMl, "TreeEnsemble", tree_ensemble);
  r.add(kMl, "Binarizer", binarizer);
  r.add(kMl, "ArrayFeatureExtractor", array_feature_extractor);
}

}  // namespace onyx::shape
