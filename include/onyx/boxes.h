// Box decoding for YOLO-style detectors: the post-processing that stays outside the graph
// (confidence filter, per-class non-maximum suppression) and the matching of two sets of
// detections by IoU. Shared by the CLI (`onyx parity --decode boxes`) and the bindings.
#pragma once
#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::post {

/// How the four box numbers of a candidate row are laid out.
enum class BoxFormat {
  kCxCyWh,  ///< centre x, centre y, width, height (YOLOv5 and later)
  kXyxy,    ///< left, top, right, bottom
};

/// An axis-aligned box by its corners. A box with x2 < x1 or y2 < y1 has no area.
struct Box {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

/// One detection after decoding: the box, its confidence and its class.
struct Detection {
  Box box;
  double score = 0;   ///< objectness * class score
  int64_t cls = 0;    ///< class index, 0-based (the column after objectness is class 0)
  int64_t index = 0;  ///< the candidate row it came from
};

struct BoxDecodeOptions {
  BoxFormat format = BoxFormat::kCxCyWh;
  double score_threshold = 0.25;  ///< keep candidates with score >= this
  double iou_threshold = 0.45;    ///< NMS drops a box whose IoU with a kept one of its class is above this
  int64_t max_detections = 300;   ///< per image, after NMS, highest scores first
};

/// Intersection over union of two boxes; 0 when the union has no area or a coordinate
/// is not finite.
double box_iou(const Box& a, const Box& b);

/// Converts the four numbers of a row to corners.
Box box_from(const double* v, BoxFormat format);

/// Greedy non-maximum suppression within each class: by descending score (ties: lower
/// candidate index first) a box is kept unless its IoU with a kept box of the same class is
/// above `iou_threshold`. Returns the kept boxes of all classes by descending score, at
/// most `max_detections` (0: no limit).
std::vector<Detection> nms_per_class(std::vector<Detection> dets, double iou_threshold, int64_t max_detections);

/// Decodes the candidates of one image: `rows` is `boxes` x `row_len` row-major, each row
/// [4 box numbers, objectness, class 0 score, ...] (row_len >= 6). A candidate's class is
/// the one with the highest objectness * class score (ties: lowest index; NaN never
/// wins); candidates below the score threshold (or with a NaN score) are dropped; then
/// per-class NMS and the detection limit. Returns the detections by descending score.
std::vector<Detection> decode_boxes(const double* rows, int64_t boxes, int64_t row_len, const BoxDecodeOptions& opt);

/// Decodes every image of a YOLO-style output: rank 3 [N, B, 5+K] (N images) or rank 2
/// [B, 5+K] (one image). Float, double, float16 and bfloat16 are accepted. Throws
/// onyx::Error on another rank or dtype, a last dim below 6, or invalid options.
std::vector<std::vector<Detection>> decode_boxes(const Tensor& t, const BoxDecodeOptions& opt);

/// Throws onyx::Error when the options are out of range (thresholds not finite, IoU
/// threshold outside [0, 1], max_detections below 1).
void check_box_options(const BoxDecodeOptions& opt);

/// How one set of detections matches a reference set.
struct BoxMatch {
  int64_t got = 0;          ///< detections in the set under test
  int64_t want = 0;         ///< detections in the reference (the ground truth)
  int64_t matched = 0;      ///< pairs with the same class and IoU >= the match threshold
  double iou_sum = 0;       ///< sum of the IoU of the matched pairs
  std::vector<std::pair<int64_t, int64_t>> pairs;  ///< (index in got, index in want)
  std::vector<double> pair_iou;                    ///< IoU of each pair

  /// matched / want; 1 when the reference has no detection.
  double recall() const { return want ? static_cast<double>(matched) / static_cast<double>(want) : 1.0; }
  /// matched / got; 1 when there is no detection under test.
  double precision() const { return got ? static_cast<double>(matched) / static_cast<double>(got) : 1.0; }
  /// Mean IoU of the matched pairs; NaN when none matched.
  double mean_iou() const;
  /// Adds another image's counts (pairs are not carried over).
  void add(const BoxMatch& o);
};

/// Matches `got` with `want` (the reference, taken as ground truth) greedily: detections of
/// `got` by descending score (ties: lower index first) each take the unmatched reference
/// detection of the same class with the highest IoU (ties: lower index), when that IoU is
/// at least `iou_threshold`.
BoxMatch match_detections(const std::vector<Detection>& got, const std::vector<Detection>& want,
                          double iou_threshold = 0.5);

}  // namespace onyx::post
