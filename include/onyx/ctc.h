// CTC decoding (greedy and prefix beam search): the post-processing of sequence models
// (OCR, speech) that stays outside the graph. Shared by the CLI (`onyx parity --decode
// ctc`, `onyx ocr`) and the bindings; models/crnn-digits/ctc_decode.py is its numpy twin.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::post {

/// Greedy (best path) decoding of one sequence of frame scores, `frames` x `classes`,
/// row-major: takes the arg-max class of every frame, collapses runs of the same class
/// and drops `blank`. Scores may be logits, probabilities or log-probabilities (arg-max
/// is the same). Ties go to the lowest class index; NaN scores never win.
std::vector<int64_t> ctc_greedy_decode(const float* scores, int64_t frames, int64_t classes,
                                       int64_t blank);

/// Where the time and batch axes of a rank-3 score tensor are.
enum class CtcLayout {
  kBatchTimeClass,  ///< [N, T, C] (batch_first models)
  kTimeBatchClass,  ///< [T, N, C] (PyTorch's CTCLoss convention)
};

/// Decodes every sequence of a float tensor of scores: rank 2 is one sequence [T, C];
/// rank 3 follows `layout`. Float16/double are converted. Throws onyx::Error on another
/// rank or dtype, or a blank outside [0, C).
std::vector<std::vector<int64_t>> ctc_greedy_decode(const Tensor& scores, int64_t blank,
                                                    CtcLayout layout = CtcLayout::kBatchTimeClass);

/// What the frame scores given to beam search are.
enum class CtcScores {
  kLogits,         ///< logits or log-probabilities: a log-softmax is taken per frame
  kProbabilities,  ///< probabilities (a softmax inside the graph): their natural log is taken
};

/// Per-frame log-probabilities, `frames` x `classes` (double), of scores of `kind`.
/// Logits: x - max - log(sum(exp(x - max))) per frame, in double, summing in class order.
/// A NaN score counts as -inf (that class is impossible); when some scores of a frame are
/// +inf they share its probability equally; a frame with no usable score (all NaN or
/// -inf) is a certain blank. Probabilities: log(p), with p <= 0 or NaN giving -inf and the
/// same rule for a frame without a positive probability.
std::vector<double> ctc_log_probs(const float* scores, int64_t frames, int64_t classes, int64_t blank,
                                  CtcScores kind = CtcScores::kLogits);

/// A labelling found by beam search and the log of its probability: the sum over every
/// alignment (frame path) that collapses to it, as far as the beam kept those paths.
struct CtcBeamResult {
  std::vector<int64_t> labels;
  double log_prob = 0;
};

/// CTC prefix beam search (Hannun et al. 2014) over per-frame log-probabilities
/// `log_probs` [frames, classes]. Each prefix carries the log-probabilities of its paths
/// ending in a blank (pb) and in its last label (pnb); per frame, every kept prefix is
/// extended by every class whose log-probability is not -inf (a repeated label without a
/// blank in between extends the prefix only from pb; from pnb it collapses), then the
/// `beam_width` prefixes with the highest total log(exp(pb) + exp(pnb)) are kept. The
/// result is the kept prefix with the highest total. Ties (equal doubles) go to the shorter
/// prefix, then to the lexicographically smaller label sequence. Kept prefixes are
/// extended in that order and classes in increasing index, so sums are formed in a fixed
/// order. With a width at least the number of distinct prefixes the search is exact.
/// Throws onyx::Error on a width < 1, no classes, or a blank outside [0, classes).
CtcBeamResult ctc_beam_search(const double* log_probs, int64_t frames, int64_t classes, int64_t blank,
                              int64_t beam_width);

/// Beam search on raw scores: ctc_log_probs() then ctc_beam_search().
CtcBeamResult ctc_beam_decode(const float* scores, int64_t frames, int64_t classes, int64_t blank,
                              int64_t beam_width, CtcScores kind = CtcScores::kLogits);

/// Beam search of every sequence of a score tensor (rank 2 [T, C], or rank 3 after
/// `layout`; float16/double converted to float first, as for greedy decoding).
std::vector<CtcBeamResult> ctc_beam_decode(const Tensor& scores, int64_t blank, int64_t beam_width,
                                           CtcLayout layout = CtcLayout::kBatchTimeClass,
                                           CtcScores kind = CtcScores::kLogits);

/// The symbols of an alphabet file's text: several non-empty lines give one symbol per
/// line (multi-character symbols, or a space written as a line holding one space);
/// a single line gives one symbol per UTF-8 character. A trailing newline is ignored.
std::vector<std::string> parse_alphabet(const std::string& text);

/// Maps class indices to text. `alphabet` lists the non-blank classes in order (class k
/// is alphabet[k < blank ? k : k - 1]), or has one entry per class, blank included
/// (class k is alphabet[k]). Throws onyx::Error when a label has no symbol.
std::string ctc_labels_to_text(const std::vector<int64_t>& labels,
                               const std::vector<std::string>& alphabet, int64_t blank,
                               int64_t classes);

/// Levenshtein distance between two symbol sequences (insert, delete, substitute: 1 each).
size_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);

/// Splits UTF-8 text into characters (code points; invalid bytes stand alone).
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace onyx::post
