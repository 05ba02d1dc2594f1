// post:: greedy CTC decoding, alphabets and edit distance on hand-checked cases.
#include <gtest/gtest.h>

#include <cmath>

#include "onyx/error.h"
#include "post/ctc.h"

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

}  // namespace
}  // namespace onyx::post
