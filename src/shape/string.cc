// Shape functions of the string family: StringConcat, StringSplit, StringNormalizer,
// RegexFullMatch.
#include <algorithm>
#ifndef __EMSCRIPTEN__
#include <regex>
#endif

#include "kernels/reference/string_ops.h"
#include "shape/elementwise.h"

namespace onyx::shape {

namespace {

using ir::Dim;
using ir::Shape;

void require_string(const InferContext& ctx, size_t i) {
  if (ctx.input_dtype(i) != DType::kString)
    ctx.fail("input {} must be a string tensor, got {}", i, dtype_name(ctx.input_dtype(i)));
}

void string_concat(InferContext& ctx) {
  require_string(ctx, 0);
  require_string(ctx, 1);
  infer_broadcast(ctx, {0, 1}, DType::kString);
}

void string_split(InferContext& ctx) {
  require_string(ctx, 0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, DType::kString);
    ctx.set_output_unranked(1, DType::kInt64);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  Dim width = ctx.fresh_dim();
  if (const Tensor* v = ctx.input_value(0)) {
    const std::string delim = ctx.attr_s("delimiter", "");
    const int64_t maxsplit = ctx.has_attr("maxsplit") ? ctx.attr_i("maxsplit", -1) : -1;
    size_t w = 0;
    for (int64_t k = 0; k < v->numel(); ++k)
      w = std::max(w, kernels::split_string(v->data<std::string>()[k], delim, maxsplit).size());
    width = Dim(static_cast<int64_t>(w));
  }
  Shape out = in;
  out.push_back(width);
  ctx.set_output(0, DType::kString, std::move(out));
  ctx.set_output(1, DType::kInt64, in);
}

void string_normalizer(InferContext& ctx) {
  require_string(ctx, 0);
  const std::string action = ctx.attr_s("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("attribute 'case_change_action' must be \"NONE\", \"LOWER\" or \"UPPER\", got \"{}\"",
             action);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, DType::kString);
    return;
  }
  const Shape& in = ctx.input_shape(0);
  const bool two_d = in.size() == 2;
  if (!(in.size() == 1 || (two_d && (!in[0].known() || in[0].value == 1))))
    ctx.fail("input must be [C] or [1, C], got {}", ir::shape_str(in));
  Dim count = ctx.fresh_dim();
  if (!ctx.has_attr("stopwords")) {
    count = in.back();
  } else if (const Tensor* v = ctx.input_value(0)) {
    const size_t kept =
        kernels::string_normalizer_keep(v->data<std::string>(), static_cast<size_t>(v->numel()),
                                        ctx.node().attr_strings("stopwords"),
                                        ctx.attr_i("is_case_sensitive", 0) != 0)
            .size();
    count = Dim(std::max<int64_t>(static_cast<int64_t>(kept), 1));  // all dropped: one ""
  }
  if (count.known() && count.value == 0) count = Dim(1);
  if (two_d) ctx.set_output(0, DType::kString, {Dim(1), count});
  else ctx.set_output(0, DType::kString, {count});
}

void regex_full_match(InferContext& ctx) {
  require_string(ctx, 0);
  if (!ctx.has_attr("pattern")) ctx.fail("attribute 'pattern' is required");
  if (!ctx.input_value(0)) {  // check the pattern once, when the session is created
    const kernels::TranslatedRegex t = kernels::translate_re2(ctx.attr_s("pattern", ""));
    if (!t.error.empty()) ctx.fail("pattern: {}", t.error);
#ifndef __EMSCRIPTEN__
    // The WebAssembly build has no RegexFullMatch kernel (src/kernels/reference/string.cc)
    // and so no std::wregex: compiling one here alone put 39 KB of it into the .wasm.
    try {
      std::wregex re(t.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      ctx.fail("invalid pattern \"{}\": {}", ctx.attr_s("pattern", ""), e.what());
    }
#endif
  }
  if (ctx.has_shape(0)) ctx.set_output(0, DType::kBool, ctx.input_shape(0));
  else ctx.set_output_unranked(0, DType::kBool);
}

}  // namespace

void register_string_shapes(ShapeRegistry& r) {
  r.add("", "StringConcat", string_concat);
  r.add("", "StringSplit", string_split);
  r.add("", "StringNormalizer", string_normalizer);
  r.add("", "RegexFullMatch", regex_full_match);
}

}  // namespace onyx::shape
