// Shape functions of the misc family: BitCast, NonMaxSuppression, TfIdfVectorizer and
// the training-domain optimizers Adagrad, Adam and Momentum.
#include <algorithm>

#include "kernels/reference/nms.h"
#include "shape/infer.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

constexpr const char* kTraining = "ai.onnx.preview.training";

void set_like(InferContext& ctx, size_t in, size_t out, DType dt) {
  if (ctx.has_shape(in)) ctx.set_output(out, dt, ctx.input_shape(in));
  else ctx.set_output_unranked(out, dt);
}

void bit_cast(InferContext& ctx) {
  const int64_t to = ctx.attr_i("to", 0);
  if (!ctx.has_attr("to")) ctx.fail("attribute 'to' is required");
  if (to <= 0 || to > kMaxDTypeCode || !dtype_valid(static_cast<int32_t>(to)) ||
      static_cast<DType>(to) == DType::kString)
    ctx.fail("attribute 'to' must be a non-string TensorProto data type, got {}", to);
  const DType in = ctx.input_dtype(0);
  const auto out = static_cast<DType>(to);
  if (in == DType::kString) ctx.fail("cannot bitcast from string");
  if (dtype_bits(in) != dtype_bits(out))
    ctx.fail("cannot bitcast {} ({} bits) to {} ({} bits): the bit widths must match",
             dtype_name(in), dtype_bits(in), dtype_name(out), dtype_bits(out));
  set_like(ctx, 0, 0, out);
}

void non_max_suppression(InferContext& ctx) {
  const int64_t cpb = ctx.attr_i("center_point_box", 0);
  if (cpb != 0 && cpb != 1) ctx.fail("attribute 'center_point_box' must be 0 or 1, got {}", cpb);
  for (size_t i : {size_t{0}, size_t{1}})
    if (ctx.input_dtype(i) != DType::kFloat)
      ctx.fail("input {} must be float, got {}", i, dtype_name(ctx.input_dtype(i)));
  if (ctx.has_shape(0) && ctx.input_rank(0) != 3)
    ctx.fail("boxes must be 3-D [num_batches, spatial_dimension, 4], got {}",
             ir::shape_str(ctx.input_shape(0)));
  if (ctx.has_shape(1) && ctx.input_rank(1) != 3)
    ctx.fail("scores must be 3-D [num_batches, num_classes, spatial_dimension], got {}",
             ir::shape_str(ctx.input_shape(1)));
  if (ctx.has_shape(0) && ctx.has_shape(1) && ctx.input_rank(0) == 3 && ctx.input_rank(1) == 3) {
    const Shape& b = ctx.input_shape(0);
    const Shape& s = ctx.input_shape(1);
    auto differ = [](const Dim& x, const Dim& y) { return x.known() && y.known() && x.value != y.value; };
    if (b[2].known() && b[2].value != 4)
      ctx.fail("boxes must be [num_batches, spatial_dimension, 4], got {}", ir::shape_str(b));
    if (differ(b[0], s[0]) || differ(b[1], s[2]))
      ctx.fail("scores {} do not fit boxes {}: expected [{}, num_classes, {}]", ir::shape_str(s),
               ir::shape_str(b), b[0].str(), b[1].str());
  }
  Dim count = ctx.fresh_dim();
  bool known = ctx.input_value(0) && ctx.input_value(1);
  for (size_t i = 2; i < 5; ++i)
    if (ctx.has_input(i) && !ctx.input_value(i)) known = false;
  if (known) {
    auto value = [&](size_t i) { return ctx.has_input(i) ? ctx.input_value(i) : nullptr; };
    try {
      kernels::NmsParams p = kernels::nms_params(value(2), value(3), value(4));
      count = Dim(static_cast<int64_t>(
          kernels::nms_select(*ctx.input_value(0), *ctx.input_value(1), p, cpb == 1).size()));
    } catch (const Error& e) {
      ctx.fail("{}", e.what());
    }
  }
  ctx.set_output(0, DType::kInt64, {count, Dim(3)});
}

void tfidf_vectorizer(InferContext& ctx) {
  const DType in = ctx.input_dtype(0);
  const bool has_s = ctx.has_attr("pool_strings"), has_i = ctx.has_attr("pool_int64s");
  if (has_s == has_i) ctx.fail("exactly one of 'pool_strings' and 'pool_int64s' must be set");
  if (has_s && in != DType::kString)
    ctx.fail("input must be string with 'pool_strings', got {}", dtype_name(in));
  if (has_i && in != DType::kInt32 && in != DType::kInt64)
    ctx.fail("input must be int32 or int64 with 'pool_int64s', got {}", dtype_name(in));
  const std::vector<int64_t> idx = ctx.attr_ints("ngram_indexes");
  if (idx.empty()) ctx.fail("attribute 'ngram_indexes' is required and must not be empty");
  int64_t width = 0;
  for (int64_t v : idx) {
    if (v < 0) ctx.fail("'ngram_indexes' must be >= 0, got {}", v);
    width = std::max(width, checked_add(ctx, v, 1, "the output width (max 'ngram_indexes' + 1)"));
  }
  // ngram_counts[g] is where the (g+1)-grams start in the pool
  const std::vector<int64_t> starts = ctx.attr_ints("ngram_counts");
  const auto pool = static_cast<int64_t>(has_s ? ctx.node().attr_strings("pool_strings").size()
                                                : ctx.attr_ints("pool_int64s").size());
  int64_t ngrams = 0;
  for (size_t g = 0; g < starts.size(); ++g) {
    const int64_t b = starts[g], e = g + 1 < starts.size() ? starts[g + 1] : pool;
    const auto len = static_cast<int64_t>(g + 1);
    if (b < 0 || e < b || e > pool || (e - b) % len != 0)
      ctx.fail("'ngram_counts' entry {} ({}) does not delimit whole {}-grams in a pool of {}", g,
               b, len, pool);
    ngrams += (e - b) / len;
  }
  if (ngrams != static_cast<int64_t>(idx.size()))
    ctx.fail("the pool holds {} n-grams but 'ngram_indexes' has {} entries", ngrams, idx.size());
  const std::vector<float> w = ctx.node().attr_floats("weights");
  if (!w.empty() && w.size() != idx.size())
    ctx.fail("'weights' has {} entries, 'ngram_indexes' {}", w.size(), idx.size());
  const int64_t lo = ctx.attr_i("min_gram_length", 0), hi = ctx.attr_i("max_gram_length", 0);
  if (lo < 1 || hi < lo)
    ctx.fail("need 1 <= min_gram_length <= max_gram_length, got {} and {}", lo, hi);
  if (ctx.attr_i("max_skip_count", 0) < 0)
    ctx.fail("'max_skip_count' must be >= 0, got {}", ctx.attr_i("max_skip_count", 0));
  const std::string mode = ctx.attr_s("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    ctx.fail("attribute 'mode' must be \"TF\", \"IDF\" or \"TFIDF\", got \"{}\"", mode);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, DType::kFloat);
    return;
  }
  const Shape& s = ctx.input_shape(0);
  if (s.size() == 1) ctx.set_output(0, DType::kFloat, {Dim(width)});
  else if (s.size() == 2) ctx.set_output(0, DType::kFloat, {s[0], Dim(width)});
  else ctx.fail("input must be 1-D [C] or 2-D [N, C], got {}", ir::shape_str(s));
}

/// Optimizers: inputs R, T, then `groups` lists of n tensors; outputs are the lists
/// named by `out_groups` (indexes into the input lists), n tensors each.
void optimizer(InferContext& ctx, size_t groups, const std::vector<size_t>& out_groups) {
  if (ctx.num_inputs() < 2 + groups || (ctx.num_inputs() - 2) % groups != 0)
    ctx.fail("expected R, T and {} lists of equal length, got {} inputs", groups,
             ctx.num_inputs());
  const size_t n = (ctx.num_inputs() - 2) / groups;
  for (size_t i : {size_t{0}, size_t{1}})
    if (ctx.has_shape(i) && !ctx.input_shape(i).empty() &&
        !(ctx.input_rank(i) == 1 && ctx.input_shape(i)[0] == Dim(1)))
      ctx.fail("input {} ({}) must be a scalar, got {}", i, i == 0 ? "R" : "T",
               ir::shape_str(ctx.input_shape(i)));
  if (ctx.input_dtype(0) != DType::kFloat && ctx.input_dtype(0) != DType::kDouble)
    ctx.fail("R must be float or double, got {}", dtype_name(ctx.input_dtype(0)));
  if (ctx.input_dtype(1) != DType::kInt64)
    ctx.fail("T must be int64, got {}", dtype_name(ctx.input_dtype(1)));
  if (ctx.num_outputs() > out_groups.size() * n)
    ctx.fail("at most {} outputs, got {}", out_groups.size() * n, ctx.num_outputs());
  for (size_t g = 0; g < groups; ++g)
    for (size_t k = 0; k < n; ++k) {
      const DType dt = ctx.input_dtype(2 + g * n + k);
      if (dt != DType::kFloat && dt != DType::kDouble)
        ctx.fail("input {} must be float or double, got {}", 2 + g * n + k, dtype_name(dt));
      if (g > 0 && ctx.has_shape(2 + g * n + k) && ctx.has_shape(2 + k) &&
          ctx.input_shape(2 + g * n + k) != ctx.input_shape(2 + k))
        ctx.fail("input {} has shape {} but the tensor it belongs to has {}", 2 + g * n + k,
                 ir::shape_str(ctx.input_shape(2 + g * n + k)), ir::shape_str(ctx.input_shape(2 + k)));
    }
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    const size_t in = 2 + out_groups[o / n] * n + o % n;
    set_like(ctx, in, o, ctx.input_dtype(in));
  }
}

void adagrad(InferContext& ctx) { optimizer(ctx, 3, {0, 2}); }
void adam(InferContext& ctx) { optimizer(ctx, 4, {0, 2, 3}); }
void momentum(InferContext& ctx) {
  const std::string mode = ctx.attr_s("mode", "");
  if (mode != "standard" && mode != "nesterov")
    ctx.fail("attribute 'mode' must be \"standard\" or \"nesterov\", got \"{}\"", mode);
  for (const char* a : {"alpha", "beta", "norm_coefficient"})
    if (!ctx.has_attr(a)) ctx.fail("attribute '{}' is required", a);
  optimizer(ctx, 3, {0, 2});
}

}  // namespace

void register_misc_shapes(ShapeRegistry& r) {
  r.add("", "BitCast", bit_cast);
  r.add("", "NonMaxSuppression", non_max_suppression);
  r.add("", "TfIdfVectorizer", tfidf_vectorizer);
  r.add(kTraining, "Adagrad", adagrad);
  r.add(kTraining, "Adam", adam);
  r.add(kTraining, "Momentum", momentum);
}

}  // namespace onyx::shape
