// Results of `onyx parity` and their renderings: JSON, markdown and self-contained HTML
// reports with an error histogram drawn as SVG.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onyx/boxes.h"

namespace onyx::cli {

/// Error histogram bins of |onyx - reference| per element: exact zero, below 1e-12, one bin
/// per decade [1e-12, 1e-11) ... [1e2, 1e3), at least 1e3, and non-finite mismatches.
struct ErrorHistogram {
  static constexpr int kMinExp = -12, kMaxExp = 3;
  static constexpr int kBins = 1 + 1 + (kMaxExp - kMinExp) + 1 + 1;
  int64_t counts[kBins] = {};
  void add(double abs_err);
  static std::string label(int bin);
};

/// One output of one sample, compared with its reference.
struct OutputCompare {
  bool compared = false;
  bool skipped = false;      ///< not compared and not a failure (no reference array)
  std::string problem;       ///< why it was not compared (a failure unless skipped)
  int64_t elements = 0;
  int64_t outside = 0;       ///< elements outside tolerance
  double max_abs = 0, mean_abs = 0, max_rel = 0, cosine = 1;
  double ratio = 0;          ///< max |d| / (atol + rtol |ref|): above 1 fails
  std::string worst_at;      ///< index of the element with the highest ratio, "[0, 17]"
  double worst_got = 0, worst_want = 0;
  int64_t top1_rows = 0, top1_agree = 0;
  bool within() const { return compared && outside == 0; }
};

/// A decoded sequence that differs from the reference's.
struct CtcMismatch {
  std::string sample;
  int64_t index = 0;  ///< sequence within the sample's batch
  std::string got, want;
  size_t distance = 0;
};

/// One image whose decoded detections differ from the reference's (not every box matched).
struct BoxDifference {
  std::string sample;
  int64_t image = 0;  ///< index within the sample's batch
  int64_t got = 0, want = 0, matched = 0;
  double mean_iou = 0;  ///< NaN when nothing matched
};

/// Box decoding (`--decode boxes`) of one sample: detection counts summed over its images.
struct SampleBoxes {
  bool decoded = false;
  int64_t images = 0, images_agree = 0;
  post::BoxMatch match;  ///< onyx's detections against the reference's (pairs not kept)
  double min_iou = 1;    ///< lowest IoU of a matched pair (1 when none matched)
  std::vector<BoxDifference> differences;
};

struct SampleResult {
  std::string name;
  bool pass = true;
  std::string error;                    ///< run or load failure
  std::vector<OutputCompare> outputs;   ///< one per model output
  double ratio = 0;                     ///< worst over outputs
  std::string worst_output;
  double run_ms = 0;
  SampleBoxes boxes;
};

struct OutputSummary {
  std::string name;
  int64_t samples = 0, within = 0, elements = 0, outside = 0;
  double sum_abs = 0, max_abs = 0, max_rel = 0, cos_min = 1, cos_sum = 0;
  int64_t top1_rows = 0, top1_agree = 0;
  bool top1_applicable = false;
  std::string worst_sample;
  double worst_ratio = -1;
  ErrorHistogram hist;
};

struct CtcSummary {
  bool enabled = false;
  std::string output;
  int64_t blank = 0;
  bool has_alphabet = false;
  int64_t sequences = 0, exact = 0;
  size_t edits = 0, ref_chars = 0;
  std::vector<CtcMismatch> mismatches;  ///< the first ones, for the report
};

struct BoxSummary {
  bool enabled = false;
  std::string output;
  post::BoxDecodeOptions options;
  double match_iou = 0.5;       ///< IoU a pair needs to count as matched
  int64_t images = 0;           ///< images decoded in both
  int64_t images_agree = 0;     ///< images where every box matched, in both directions
  post::BoxMatch total;         ///< counts over every image
  double min_iou = 1;           ///< lowest IoU of a matched pair
  std::vector<BoxDifference> differences;  ///< the first images that differ, for the report
};

struct ParityResult {
  std::string model, model_sha256, inputs_dir, reference_dir, reference_source;
  std::string date;  ///< when the run started, UTC, ISO 8601
  double rtol = 0, atol = 0;
  std::vector<SampleResult> samples;
  std::vector<OutputSummary> outputs;
  CtcSummary ctc;
  BoxSummary boxes;
  std::vector<std::string> notes;
  double seconds = 0;
  int worst_count = 5;
  int64_t passed() const;
  bool pass() const { return !samples.empty() && passed() == static_cast<int64_t>(samples.size()); }
  /// Samples by descending ratio (errors first), at most `n`.
  std::vector<const SampleResult*> worst(size_t n) const;
};

nlohmann::json parity_json(const ParityResult& r);
/// One-screen text summary for the terminal.
std::string parity_text(const ParityResult& r);
/// Writes the report: `path` ending in .html (self-contained) or .md (with the histograms
/// as PATH_STEM-OUTPUT-errors.svg next to it). Throws onyx::Error on another extension.
void write_parity_report(const ParityResult& r, const std::string& path);
/// The histogram of one output as a standalone SVG picture.
std::string error_histogram_svg(const OutputSummary& o, double atol);

/// "1.2e-05"-style short number, "inf", "nan".
std::string short_num(double v);

}  // namespace onyx::cli
