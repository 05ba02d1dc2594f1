// Reference kernels of the string family: StringConcat, StringSplit, StringNormalizer,
// RegexFullMatch.
#ifndef __EMSCRIPTEN__
#include <regex>
#endif
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/checked.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/string_ops.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

void string_concat(KernelContext& ctx) {
  map2<std::string, std::string, std::string>(
      ctx.input(0), ctx.input(1), ctx.output(0),
      [](const std::string& a, const std::string& b) { return a + b; });
}

void string_split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  Tensor* counts = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  const std::string delim = ctx.attr_s("delimiter", "");
  const int64_t maxsplit = ctx.has_attr("maxsplit") ? ctx.attr_i("maxsplit", -1) : -1;
  const int64_t n = x.numel();
  const int64_t width = y.rank() == x.rank() + 1 ? y.dims().back() : -1;
  int64_t want = -1;
  if (width < 0 || !mul_fits(n, width, want) || y.numel() != want)
    ctx.fail("output shape {} does not fit input {}", dims_str(y.dims()), dims_str(x.dims()));
  const std::string* xp = x.data<std::string>();
  std::string* yp = y.data<std::string>();
  for (int64_t k = 0; k < n; ++k) {
    const std::vector<std::string_view> parts = split_string(xp[k], delim, maxsplit);
    if (static_cast<int64_t>(parts.size()) > width)
      ctx.fail("element {} splits into {} substrings, more than the output width {}", k,
               parts.size(), width);
    for (int64_t j = 0; j < width; ++j)
      yp[k * width + j] = j < static_cast<int64_t>(parts.size()) ? std::string(parts[static_cast<size_t>(j)])
                                                                 : std::string();
    if (counts) counts->data<int64_t>()[k] = static_cast<int64_t>(parts.size());
  }
}

void string_normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string action = ctx.attr_s("case_change_action", "NONE");
  const std::string* xp = x.data<std::string>();
  const std::vector<size_t> keep =
      string_normalizer_keep(xp, static_cast<size_t>(x.numel()), ctx.node().attr_strings("stopwords"),
                             ctx.attr_i("is_case_sensitive", 0) != 0);
  const int64_t want = keep.empty() ? 1 : static_cast<int64_t>(keep.size());
  if (y.numel() != want)
    ctx.fail("output shape {} does not hold the {} kept strings", dims_str(y.dims()), want);
  std::string* yp = y.data<std::string>();
  if (keep.empty()) {
    yp[0].clear();
    return;
  }
  for (size_t k = 0; k < keep.size(); ++k) {
    const std::string& s = xp[keep[k]];
    if (action == "UPPER") yp[k] = change_case(s, true);
    else if (action == "LOWER") yp[k] = change_case(s, false);
    else yp[k] = s;
  }
}

#ifndef __EMSCRIPTEN__
// Left out of the WebAssembly build (see register_string).
void regex_full_match(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string pattern = ctx.attr_s("pattern", "");
  const TranslatedRegex t = translate_re2(pattern);
  if (!t.error.empty()) ctx.fail("pattern: {}", t.error);
  auto flags = std::regex::ECMAScript;
  if (t.icase) flags |= std::regex::icase;
  const std::string* xp = x.data<std::string>();
  uint8_t* yp = static_cast<uint8_t*>(y.raw());
#if defined(__GLIBCXX__)
  // libstdc++'s default executor backtracks: "(a*)*c" against 30 a's never finished (a
  // hostile model hung `onyx run`, past --timeout: nothing polls inside regex_match).
  // RE2's syntax, which ONNX specifies, has no back-references, so its patterns can run on
  // the breadth-first executor (__polynomial): time linear in the string (1M characters
  // in 60-210 ms for small patterns), no recursion per character. Its cost per character
  // grows with the pattern's states; the bound below keeps one element's match to about a
  // second (1.5M characters for a 6-byte pattern; a 1.9 KB alternation of 60 branches
  // over its 17,000 allowed characters: 1.1 s), and the run's terminate flag is polled
  // between elements.
  flags |= std::regex_constants::__polynomial;
  const size_t budget = size_t{1} << 25;
  const char* engine = "std::regex's breadth-first executor, linear in the string";
#else
  // Other standard libraries match by recursion, about one frame per character and
  // pattern element: a few thousand characters against a small pattern overflow an 8 MB
  // stack (SIGSEGV). This budget keeps a factor of three from that in measurements.
  const size_t budget = size_t{1} << 16;
  const char* engine = "std::regex, which recurses per character";
#endif
  const size_t per_char = pattern.size() + 16;
  std::wregex re;
  try {
    re.assign(t.pattern, flags);
  } catch (const std::regex_error& e) {
    ctx.fail("invalid pattern \"{}\": {}", pattern, e.what());
  }
  CancelPoll poll;  // base/cancel.h
  for (int64_t k = 0; k < x.numel(); ++k) {
    if (xp[k].size() > budget / per_char)
      ctx.fail("element {} has {} bytes; with this {}-byte pattern the regex engine ({}) matches at most {}", k,
               xp[k].size(), pattern.size(), engine, budget / per_char);
    poll(static_cast<int64_t>(xp[k].size() * per_char));
    try {
      yp[k] = std::regex_match(utf8_to_wide(xp[k]), re) ? 1 : 0;
    } catch (const std::regex_error& e) {
      ctx.fail("matching element {} failed: {}", k, e.what());
    }
  }
}
#endif

}  // namespace

void register_string(Registry& r) {
  r.add("", "StringConcat", 20, 1000, {DType::kString}, string_concat);
  r.add("", "StringSplit", 20, 1000, {DType::kString}, string_split);
  r.add("", "StringNormalizer", 10, 1000, {DType::kString}, string_normalizer);
#ifndef __EMSCRIPTEN__
  KernelDef re;
  re.op = "RegexFullMatch";
  re.since = 20;
  re.dtypes = {DType::kString};
  re.fn = regex_full_match;
  re.wasm = false;
  // Measured with em++ -O2: a program using std::wregex is ~190 KB larger.
  re.wasm_reason =
      "it runs on std::wregex, which adds about 190 KB to the .wasm download for one "
      "rarely used op";
  r.add(std::move(re));
#endif
}

}  // namespace onyx::kernels
