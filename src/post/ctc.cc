#include "post/ctc.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/half.h"

namespace onyx::post {

std::vector<int64_t> ctc_greedy_decode(const float* scores, int64_t frames, int64_t classes,
                                       int64_t blank) {
  std::vector<int64_t> out;
  int64_t prev = -1;
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = scores + t * classes;
    int64_t best = -1;
    for (int64_t c = 0; c < classes; ++c) {
      if (std::isnan(row[c])) continue;
      if (best < 0 || row[c] > row[best]) best = c;
    }
    if (best < 0) best = blank;  // a frame of NaNs emits nothing
    if (best != blank && best != prev) out.push_back(best);
    prev = best;
  }
  return out;
}

std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& scores, int64_t blank,
                                                    CtcLayout layout) {
  if (scores.rank() != 2 && scores.rank() != 3)
    fail_arg("CTC decoding needs scores of rank 2 [T, C] or 3 ([N, T, C] or [T, N, C]), got {}",
             dims_str(scores.dims()));
  int64_t classes = scores.dims().back();
  if (classes < 1) fail_arg("CTC decoding: scores {} have no classes", dims_str(scores.dims()));
  if (blank < 0 || blank >= classes)
    fail_arg("CTC blank index {} is outside the {} classes of scores {}", blank, classes,
             dims_str(scores.dims()));
  std::vector<float> f(static_cast<size_t>(scores.numel()));
  switch (scores.dtype()) {
    case DType::kFloat: std::copy_n(scores.data<float>(), f.size(), f.begin()); break;
    case DType::kDouble:
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(scores.data<double>()[i]);
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(scores.data<Float16>()[i]);
      break;
    default:
      fail_arg("CTC decoding needs float scores, got {}", dtype_name(scores.dtype()));
  }
  if (scores.rank() == 2) return {ctc_greedy_decode(f.data(), scores.dim(0), classes, blank)};
  int64_t n = layout == CtcLayout::kBatchTimeClass ? scores.dim(0) : scores.dim(1);
  int64_t t = layout == CtcLayout::kBatchTimeClass ? scores.dim(1) : scores.dim(0);
  std::vector<std::vector<int64_t>> out;
  std::vector<float> seq(static_cast<size_t>(t * classes));
  for (int64_t b = 0; b < n; ++b) {
    if (layout == CtcLayout::kBatchTimeClass) {
      out.push_back(ctc_greedy_decode(f.data() + b * t * classes, t, classes, blank));
      continue;
    }
    for (int64_t k = 0; k < t; ++k)
      std::copy_n(f.data() + (k * n + b) * classes, classes, seq.data() + k * classes);
    out.push_back(ctc_greedy_decode(seq.data(), t, classes, blank));
  }
  return out;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) len = 1;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<std::string> parse_alphabet(const std::string& text) {
  std::string t = text;
  if (t.size() >= 3 && t.compare(0, 3, "\xEF\xBB\xBF") == 0) t.erase(0, 3);  // UTF-8 BOM
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= t.size()) {
    size_t e = t.find('\n', start);
    std::string line = t.substr(start, e == std::string::npos ? std::string::npos : e - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    if (e == std::string::npos) break;
    start = e + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return {};
  if (lines.size() == 1) return utf8_chars(lines[0]);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].empty())
      fail_arg("alphabet line {} is empty: with one symbol per line every line needs a symbol "
               "(write a space as a line holding one space)", i + 1);
  return lines;
}

std::string ctc_labels_to_text(const std::vector<int64_t>& labels,
                               const std::vector<std::string>& alphabet, int64_t blank,
                               int64_t classes) {
  bool with_blank = static_cast<int64_t>(alphabet.size()) == classes;
  if (!with_blank && static_cast<int64_t>(alphabet.size()) != classes - 1)
    fail_arg("the alphabet has {} symbols but the scores have {} classes: list the {} non-blank "
             "symbols (or {} with a placeholder at the blank index {})",
             alphabet.size(), classes, classes - 1, classes, blank);
  std::string s;
  for (int64_t k : labels) {
    if (k < 0 || k >= classes || k == blank) fail_arg("CTC label {} is not a symbol class", k);
    s += alphabet[static_cast<size_t>(with_blank || k < blank ? k : k - 1)];
  }
  return s;
}

size_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace onyx::post
