#include "onyx/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

namespace {

/// Checks a score tensor and copies it to floats; sets `n`, `t`, `classes`.
std::vector<float> score_floats(const Tensor& scores, int64_t blank, CtcLayout layout, int64_t& n, int64_t& t,
                                int64_t& classes) {
  if (scores.rank() != 2 && scores.rank() != 3)
    fail_arg("CTC decoding needs scores of rank 2 [T, C] or 3 ([N, T, C] or [T, N, C]), got {}",
             dims_str(scores.dims()));
  classes = scores.dims().back();
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
  if (scores.rank() == 2) {
    n = 1;
    t = scores.dim(0);
  } else {
    n = layout == CtcLayout::kBatchTimeClass ? scores.dim(0) : scores.dim(1);
    t = layout == CtcLayout::kBatchTimeClass ? scores.dim(1) : scores.dim(0);
  }
  return f;
}

/// The scores of sequence `b`, [t, classes] contiguous.
std::vector<float> sequence_of(const std::vector<float>& f, int64_t b, int64_t n, int64_t t, int64_t classes,
                               bool time_major) {
  std::vector<float> seq(static_cast<size_t>(t * classes));
  for (int64_t k = 0; k < t; ++k)
    std::copy_n(f.data() + (time_major ? k * n + b : b * t + k) * classes, classes, seq.data() + k * classes);
  return seq;
}

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// log(exp(a) + exp(b)), exact when one side is -inf.
double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

}  // namespace

std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& scores, int64_t blank,
                                                    CtcLayout layout) {
  int64_t n = 0, t = 0, classes = 0;
  std::vector<float> f = score_floats(scores, blank, layout, n, t, classes);
  bool time_major = scores.rank() == 3 && layout == CtcLayout::kTimeBatchClass;
  std::vector<std::vector<int64_t>> out;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<float> seq = sequence_of(f, b, n, t, classes, time_major);
    out.push_back(ctc_greedy_decode(seq.data(), t, classes, blank));
  }
  return out;
}

std::vector<double> ctc_log_probs(const float* scores, int64_t frames, int64_t classes, int64_t blank,
                                  CtcScores kind) {
  if (classes < 1 || blank < 0 || blank >= classes)
    fail_arg("CTC log-probabilities: blank {} is outside the {} classes", blank, classes);
  std::vector<double> lp(static_cast<size_t>(frames * classes));
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = scores + t * classes;
    double* out = lp.data() + t * classes;
    for (int64_t c = 0; c < classes; ++c) {
      double x = static_cast<double>(row[c]);
      if (kind == CtcScores::kProbabilities) x = std::isnan(x) || x <= 0 ? kNegInf : std::log(x);
      out[c] = std::isnan(x) ? kNegInf : x;
    }
    double m = kNegInf;
    for (int64_t c = 0; c < classes; ++c) m = std::max(m, out[c]);
    if (m == kNegInf) {  // nothing usable: a certain blank
      for (int64_t c = 0; c < classes; ++c) out[c] = c == blank ? 0.0 : kNegInf;
      continue;
    }
    if (std::isinf(m)) {  // +inf scores share the frame equally
      double k = 0;
      for (int64_t c = 0; c < classes; ++c) k += out[c] == m ? 1 : 0;
      for (int64_t c = 0; c < classes; ++c) out[c] = out[c] == m ? -std::log(k) : kNegInf;
      continue;
    }
    if (kind == CtcScores::kProbabilities) continue;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(out[c] - m);
    double log_sum = std::log(sum);
    for (int64_t c = 0; c < classes; ++c) out[c] = out[c] - m - log_sum;
  }
  return lp;
}

CtcBeamResult ctc_beam_search(const double* log_probs, int64_t frames, int64_t classes, int64_t blank,
                              int64_t beam_width) {
  if (beam_width < 1) fail_arg("CTC beam search: the beam width must be at least 1, got {}", beam_width);
  if (classes < 1 || blank < 0 || blank >= classes)
    fail_arg("CTC beam search: blank {} is outside the {} classes", blank, classes);
  struct Beam {
    std::vector<int64_t> prefix;
    double pb, pnb, total;
  };
  // Best first: higher total, then shorter, then lexicographically smaller.
  auto better = [](const Beam& a, const Beam& b) {
    if (a.total != b.total) return a.total > b.total;
    if (a.prefix.size() != b.prefix.size()) return a.prefix.size() < b.prefix.size();
    return a.prefix < b.prefix;
  };
  std::vector<Beam> beams{{{}, 0.0, kNegInf, 0.0}};
  std::map<std::vector<int64_t>, std::pair<double, double>> next;  // prefix -> (pb, pnb)
  auto add = [&](const std::vector<int64_t>& prefix, double pb, double pnb) {
    auto it = next.try_emplace(prefix, kNegInf, kNegInf).first;
    it->second.first = log_add(it->second.first, pb);
    it->second.second = log_add(it->second.second, pnb);
  };
  for (int64_t t = 0; t < frames; ++t) {
    const double* lp = log_probs + t * classes;
    next.clear();
    for (const Beam& b : beams) {
      const double both = log_add(b.pb, b.pnb);
      const int64_t last = b.prefix.empty() ? -1 : b.prefix.back();
      for (int64_t c = 0; c < classes; ++c) {
        const double p = lp[c];
        if (p == kNegInf || std::isnan(p)) continue;
        if (c == blank) {
          add(b.prefix, both + p, kNegInf);
          continue;
        }
        std::vector<int64_t> ext = b.prefix;
        ext.push_back(c);
        if (c == last) {
          add(b.prefix, kNegInf, b.pnb + p);  // a repeat without a blank collapses
          add(ext, kNegInf, b.pb + p);        // after a blank it is a new label
        } else {
          add(ext, kNegInf, both + p);
        }
      }
    }
    beams.clear();
    for (auto& [prefix, pr] : next) {
      double total = log_add(pr.first, pr.second);
      if (total == kNegInf) continue;
      beams.push_back({prefix, pr.first, pr.second, total});
    }
    size_t keep = std::min(beams.size(), static_cast<size_t>(beam_width));
    std::partial_sort(beams.begin(), beams.begin() + static_cast<std::ptrdiff_t>(keep), beams.end(), better);
    beams.resize(keep);
    if (beams.empty())  // every path has probability 0 (log-probabilities of -inf or NaN)
      fail_arg("CTC beam search: frame {} gives every prefix probability 0", t);
  }
  return {beams.front().prefix, beams.front().total};
}

CtcBeamResult ctc_beam_decode(const float* scores, int64_t frames, int64_t classes, int64_t blank,
                              int64_t beam_width, CtcScores kind) {
  std::vector<double> lp = ctc_log_probs(scores, frames, classes, blank, kind);
  return ctc_beam_search(lp.data(), frames, classes, blank, beam_width);
}

std::vector<CtcBeamResult> ctc_beam_decode(const Tensor& scores, int64_t blank, int64_t beam_width,
                                           CtcLayout layout, CtcScores kind) {
  int64_t n = 0, t = 0, classes = 0;
  std::vector<float> f = score_floats(scores, blank, layout, n, t, classes);
  bool time_major = scores.rank() == 3 && layout == CtcLayout::kTimeBatchClass;
  std::vector<CtcBeamResult> out;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<float> seq = sequence_of(f, b, n, t, classes, time_major);
    out.push_back(ctc_beam_decode(seq.data(), t, classes, blank, beam_width, kind));
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
