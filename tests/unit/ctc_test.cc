// post:: greedy CTC decoding, alphabets and edit distance on hand-checked cases; prefix
// beam search on hand-checked cases and against a brute-force sum over every alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "onyx/error.h"
#include "onyx/ctc.h"

namespace onyx::post {
namespace {

/// Scores [frames, classes] with a 1 at each frame's class and 0 elsewhere.
std::vector<float> one_hot(const std::vector<int>& best, int classes) {
  std::vector<float> s(best.size() * classes, 0.f);
  for (size_t t = 0; t < best.size(); ++t) s[t * classes + best[t]] = 1.f;
  return s;
}

TEST(CtcGreedy, CollapsesRepeatsAndDropsBlank) {
  // argmax per frame: 1 1 0 1 2 2 0 0 3  ->  runs 1 | blank | 1 | 2 | blank | 3
  auto s = one_hot({1, 1, 0, 1, 2, 2, 0, 0, 3}, 4);
  EXPECT_EQ(ctc_greedy_decode(s.data(), 9, 4, 0), (std::vector<int64_t>{1, 1, 2, 3}));
  // Without a blank between them, repeats collapse into one.
  auto r = one_hot({2, 2, 2, 1, 1}, 4);
  EXPECT_EQ(ctc_greedy_decode(r.data(), 5, 4, 0), (std::vector<int64_t>{2, 1}));
  auto blanks = one_hot({0, 0, 0}, 4);
  EXPECT_TRUE(ctc_greedy_decode(blanks.data(), 3, 4, 0).empty());
  EXPECT_TRUE(ctc_greedy_decode(nullptr, 0, 4, 0).empty());
}

TEST(CtcGreedy, BlankLastAndLogits) {
  // Blank is class 3; scores are log-probabilities (arg-max is all that matters).
  std::vector<float> s = {-0.1f, -3.f, -4.f, -2.f,   // 0
                          -2.f, -3.f, -4.f, -0.2f,   // blank
                          -0.3f, -3.f, -4.f, -2.f,   // 0 again after a blank: kept
                          -5.f, -0.1f, -4.f, -2.f};  // 1
  EXPECT_EQ(ctc_greedy_decode(s.data(), 4, 4, 3), (std::vector<int64_t>{0, 0, 1}));
}

TEST(CtcGreedy, TiesAndNaN) {
  std::vector<float> tie = {0.5f, 0.5f, 0.f};  // tie between blank 0 and 1: lowest index wins
  EXPECT_TRUE(ctc_greedy_decode(tie.data(), 1, 3, 0).empty());
  std::vector<float> nan = {NAN, 0.1f, 0.2f};  // NaN never wins
  EXPECT_EQ(ctc_greedy_decode(nan.data(), 1, 3, 0), (std::vector<int64_t>{2}));
}

TEST(CtcGreedy, TensorLayouts) {
  // Batch 2, time 3, classes 3. Sequence 0: 1 1 2 -> [1, 2]; sequence 1: 2 0 2 -> [2, 2].
  auto a = one_hot({1, 1, 2}, 3), b = one_hot({2, 0, 2}, 3);
  Tensor ntc(DType::kFloat, {2, 3, 3});
  std::copy(a.begin(), a.end(), ntc.data<float>());
  std::copy(b.begin(), b.end(), ntc.data<float>() + 9);
  auto got = ctc_greedy_decode(ntc, 0, CtcLayout::kBatchTimeClass);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(got[1], (std::vector<int64_t>{2, 2}));
  Tensor tnc(DType::kFloat, {3, 2, 3});  // same data with time first
  for (int t = 0; t < 3; ++t)
    for (int c = 0; c < 3; ++c) {
      tnc.data<float>()[(t * 2 + 0) * 3 + c] = a[t * 3 + c];
      tnc.data<float>()[(t * 2 + 1) * 3 + c] = b[t * 3 + c];
    }
  EXPECT_EQ(ctc_greedy_decode(tnc, 0, CtcLayout::kTimeBatchClass), got);
  Tensor tc(DType::kDouble, {3, 3});  // rank 2: one sequence, doubles converted
  for (int i = 0; i < 9; ++i) tc.data<double>()[i] = a[i];
  EXPECT_EQ(ctc_greedy_decode(tc, 0), (std::vector<std::vector<int64_t>>{{1, 2}}));
}

TEST(CtcGreedy, BadArguments) {
  EXPECT_THROW(ctc_greedy_decode(Tensor(DType::kFloat, {5}), 0), Error);
  EXPECT_THROW(ctc_greedy_decode(Tensor(DType::kFloat, {2, 3}), 3), Error);
  EXPECT_THROW(ctc_greedy_decode(Tensor(DType::kFloat, {2, 3}), -1), Error);
  EXPECT_THROW(ctc_greedy_decode(Tensor(DType::kInt64, {2, 3}), 0), Error);
}

TEST(CtcText, AlphabetWithoutAndWithBlank) {
  // Blank 0 and the 3 symbols of "abc": class k is "abc"[k - 1].
  EXPECT_EQ(ctc_labels_to_text({1, 1, 2, 3}, {"a", "b", "c"}, 0, 4), "aabc");
  // Blank last: class k is "abc"[k].
  EXPECT_EQ(ctc_labels_to_text({0, 2}, {"a", "b", "c"}, 3, 4), "ac");
  // Blank in the middle (1): classes 0, 2, 3 are a, b, c.
  EXPECT_EQ(ctc_labels_to_text({0, 2, 3}, {"a", "b", "c"}, 1, 4), "abc");
  // One entry per class including a placeholder at the blank.
  EXPECT_EQ(ctc_labels_to_text({1, 3}, {"-", "a", "b", "c"}, 0, 4), "ac");
  EXPECT_THROW(ctc_labels_to_text({1}, {"a", "b"}, 0, 4), Error);  // 2 symbols for 3 classes
}

TEST(CtcText, ParseAlphabet) {
  EXPECT_EQ(parse_alphabet("0123456789\n"), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  EXPECT_EQ(parse_alphabet("h\xC3\xA9\xE2\x82\xAC"), (std::vector<std::string>{"h", "\xC3\xA9", "\xE2\x82\xAC"}));  // h, é, €
  EXPECT_EQ(parse_alphabet("\xEF\xBB\xBF" "ab\r\n"), (std::vector<std::string>{"a", "b"}));                     // BOM, CRLF
  EXPECT_EQ(parse_alphabet("th\n \nsh\n\n"), (std::vector<std::string>{"th", " ", "sh"}));  // one per line
  EXPECT_TRUE(parse_alphabet("\n\n").empty());
  EXPECT_THROW(parse_alphabet("a\n\nb\n"), Error);  // an empty line inside a per-line alphabet
}

TEST(CtcText, EditDistance) {
  auto d = [](const std::string& a, const std::string& b) { return edit_distance(utf8_chars(a), utf8_chars(b)); };
  EXPECT_EQ(d("kitten", "sitting"), 3u);
  EXPECT_EQ(d("", "abc"), 3u);
  EXPECT_EQ(d("abc", ""), 3u);
  EXPECT_EQ(d("flaw", "lawn"), 2u);
  EXPECT_EQ(d("same", "same"), 0u);
  EXPECT_EQ(d("caf\xC3\xA9", "cafe"), 1u);  // é is one character, not two bytes
}

// ---- beam search ----

/// Scores [frames, classes] from probabilities: their logs (beam search takes a log-softmax,
/// which gives the same probabilities back).
std::vector<float> logs_of(const std::vector<std::vector<double>>& probs) {
  std::vector<float> s;
  for (const auto& row : probs)
    for (double p : row) s.push_back(static_cast<float>(std::log(p)));
  return s;
}

TEST(CtcBeam, SummedPathsBeatTheBestPath) {
  // Two frames, blank 0.6 and "a" 0.4 in each. The best path is blank blank (0.36), so
  // greedy reads "". But "a" has three paths: a a, a -, - a = 0.16 + 0.24 + 0.24 = 0.64.
  auto s = logs_of({{0.6, 0.4}, {0.6, 0.4}});
  EXPECT_TRUE(ctc_greedy_decode(s.data(), 2, 2, 0).empty());
  CtcBeamResult r = ctc_beam_decode(s.data(), 2, 2, 0, 10);
  EXPECT_EQ(r.labels, (std::vector<int64_t>{1}));
  EXPECT_NEAR(r.log_prob, std::log(0.64), 1e-6);
  // Three classes (blank 0, a, b) with 0.5, 0.3, 0.2 in both frames: "" has 0.25;
  // "a": 0.09 + 0.15 + 0.15 = 0.39; "b": 0.04 + 0.10 + 0.10 = 0.24; "ab", "ba": 0.06.
  auto t = logs_of({{0.5, 0.3, 0.2}, {0.5, 0.3, 0.2}});
  EXPECT_TRUE(ctc_greedy_decode(t.data(), 2, 3, 0).empty());
  r = ctc_beam_decode(t.data(), 2, 3, 0, 10);
  EXPECT_EQ(r.labels, (std::vector<int64_t>{1}));
  EXPECT_NEAR(r.log_prob, std::log(0.39), 1e-6);
  // With a beam of 1 only "" (0.5) survives the first frame; its extensions give "" 0.25,
  // "a" 0.15 and "b" 0.10, so the narrow beam misses "a" (0.39).
  r = ctc_beam_decode(t.data(), 2, 3, 0, 1);
  EXPECT_TRUE(r.labels.empty());
  EXPECT_NEAR(r.log_prob, std::log(0.25), 1e-6);
}

TEST(CtcBeam, RepeatsNeedABlank) {
  // a, blank, a (nearly certain) reads "aa"; a, a reads "a".
  auto aba = logs_of({{0.01, 0.98, 0.01}, {0.98, 0.01, 0.01}, {0.01, 0.98, 0.01}});
  EXPECT_EQ(ctc_beam_decode(aba.data(), 3, 3, 0, 5).labels, (std::vector<int64_t>{1, 1}));
  auto aa = logs_of({{0.01, 0.98, 0.01}, {0.01, 0.98, 0.01}});
  EXPECT_EQ(ctc_beam_decode(aa.data(), 2, 3, 0, 5).labels, (std::vector<int64_t>{1}));
  // Blank last (class 2): a, b reads [0, 1].
  auto ab = logs_of({{0.9, 0.05, 0.05}, {0.05, 0.9, 0.05}});
  EXPECT_EQ(ctc_beam_decode(ab.data(), 2, 3, 2, 5).labels, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(ctc_beam_decode(ab.data(), 0, 3, 2, 5).labels.empty());  // no frames
}

TEST(CtcBeam, TieBreakShorterThenSmaller) {
  // One frame, blank, a and b equally likely: "", "a" and "b" all have 1/3.
  std::vector<float> s = {0.f, 0.f, 0.f};
  EXPECT_TRUE(ctc_beam_decode(s.data(), 1, 3, 0, 10).labels.empty());
  // Blank impossible: "a" and "b" tie; the smaller label wins.
  std::vector<float> t = {-INFINITY, 1.f, 1.f};
  EXPECT_EQ(ctc_beam_decode(t.data(), 1, 3, 0, 10).labels, (std::vector<int64_t>{1}));
}

TEST(CtcBeam, LogProbs) {
  std::vector<float> s = {1.f, 2.f, 3.f, NAN, 0.f, 0.f, INFINITY, 1.f, INFINITY, -INFINITY, NAN, -INFINITY};
  std::vector<double> lp = ctc_log_probs(s.data(), 4, 3, 1);
  double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(lp[0], 1 - z, 1e-12);
  EXPECT_NEAR(lp[2], 3 - z, 1e-12);
  EXPECT_EQ(lp[3], -INFINITY);  // NaN: impossible
  EXPECT_NEAR(lp[4], std::log(0.5), 1e-12);
  EXPECT_NEAR(lp[6], std::log(0.5), 1e-12);  // two +inf share the frame
  EXPECT_EQ(lp[7], -INFINITY);
  EXPECT_NEAR(lp[8], std::log(0.5), 1e-12);
  EXPECT_EQ(lp[9], -INFINITY);  // nothing usable: a certain blank (class 1)
  EXPECT_EQ(lp[10], 0.0);
  EXPECT_EQ(lp[11], -INFINITY);
  std::vector<float> p = {0.25f, 0.75f, 0.f, NAN};
  std::vector<double> lq = ctc_log_probs(p.data(), 2, 2, 0, CtcScores::kProbabilities);
  EXPECT_NEAR(lq[0], std::log(0.25), 1e-7);
  EXPECT_NEAR(lq[1], std::log(0.75), 1e-7);
  EXPECT_EQ(lq[2], 0.0);  // no positive probability: a certain blank
  EXPECT_EQ(lq[3], -INFINITY);
}

/// Sum over all C^T paths, grouped by the labelling each collapses to.
std::map<std::vector<int64_t>, double> brute_force(const std::vector<double>& probs, int t, int c, int blank) {
  std::map<std::vector<int64_t>, double> total;
  std::vector<int> path(static_cast<size_t>(t), 0);
  for (;;) {
    double p = 1;
    std::vector<int64_t> labels;
    int prev = -1;
    for (int k = 0; k < t; ++k) {
      p *= probs[static_cast<size_t>(k * c + path[k])];
      if (path[k] != blank && path[k] != prev) labels.push_back(path[k]);
      prev = path[k];
    }
    total[labels] += p;
    int k = 0;
    while (k < t && ++path[k] == c) path[k++] = 0;
    if (k == t) break;
  }
  return total;
}

TEST(CtcBeam, WideBeamIsExact) {
  std::mt19937 rng(2024);
  std::normal_distribution<double> n(0.0, 2.0);
  for (int iter = 0; iter < 300; ++iter) {
    int t = 1 + iter % 6, c = 2 + iter % 2, blank = static_cast<int>(rng() % c);
    std::vector<float> logits(static_cast<size_t>(t * c));
    for (auto& x : logits) x = static_cast<float>(n(rng));
    // Softmax of the float logits, computed here independently.
    std::vector<double> probs(logits.size());
    for (int k = 0; k < t; ++k) {
      double sum = 0;
      for (int j = 0; j < c; ++j) sum += std::exp(static_cast<double>(logits[k * c + j]));
      for (int j = 0; j < c; ++j) probs[k * c + j] = std::exp(static_cast<double>(logits[k * c + j])) / sum;
    }
    auto all = brute_force(probs, t, c, blank);
    auto best = all.begin();
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->second > best->second) best = it;
    CtcBeamResult r = ctc_beam_decode(logits.data(), t, c, blank, 1000);
    ASSERT_EQ(r.labels, best->first) << "case " << iter << ": T " << t << ", C " << c << ", blank " << blank;
    ASSERT_NEAR(std::exp(r.log_prob), best->second, 1e-9) << "case " << iter;
    // A narrow beam sums fewer paths: its probability never exceeds the true one.
    for (int width : {1, 2, 3}) {
      CtcBeamResult nb = ctc_beam_decode(logits.data(), t, c, blank, width);
      ASSERT_LE(std::exp(nb.log_prob), all[nb.labels] + 1e-12) << "case " << iter << ", width " << width;
    }
  }
}

TEST(CtcBeam, TensorLayoutsAndErrors) {
  std::mt19937 rng(4);
  std::normal_distribution<float> n(0.f, 1.f);
  Tensor ntc(DType::kFloat, {2, 4, 3});
  for (int64_t i = 0; i < ntc.numel(); ++i) ntc.data<float>()[i] = n(rng);
  auto got = ctc_beam_decode(ntc, 0, 8);
  ASSERT_EQ(got.size(), 2u);
  for (int b = 0; b < 2; ++b) {
    CtcBeamResult one = ctc_beam_decode(ntc.data<float>() + b * 12, 4, 3, 0, 8);
    EXPECT_EQ(got[b].labels, one.labels);
    EXPECT_EQ(got[b].log_prob, one.log_prob);
  }
  Tensor tnc(DType::kFloat, {4, 2, 3});
  for (int t = 0; t < 4; ++t)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) tnc.data<float>()[(t * 2 + b) * 3 + c] = ntc.data<float>()[(b * 4 + t) * 3 + c];
  auto tm = ctc_beam_decode(tnc, 0, 8, CtcLayout::kTimeBatchClass);
  for (int b = 0; b < 2; ++b) EXPECT_EQ(tm[b].labels, got[b].labels);
  std::vector<float> s = {0.f, 0.f};
  EXPECT_THROW(ctc_beam_decode(s.data(), 1, 2, 0, 0), Error);   // width 0
  EXPECT_THROW(ctc_beam_decode(s.data(), 1, 2, 2, 4), Error);   // blank outside
  EXPECT_THROW(ctc_beam_decode(Tensor(DType::kInt32, {2, 3}), 0, 4), Error);
}

}  // namespace
}  // namespace onyx::post
