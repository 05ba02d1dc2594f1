// Greedy CTC decoding: the post-processing of sequence models (OCR, speech) that stays
// outside the graph. Shared by the CLI (`onyx parity --decode ctc`) and the bindings.
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
