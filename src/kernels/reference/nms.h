// NonMaxSuppression selection, shared by its shape function (the output length depends
// on the data) and its reference kernel.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/cancel.h"
#include "base/error.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

/// One selected box: [batch_index, class_index, box_index].
using NmsPick = std::array<int64_t, 3>;

namespace nms_detail {

struct Corners {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

inline Corners corners(const float* b, bool center) {
  if (center) {  // [x_center, y_center, width, height]
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  // [y1, x1, y2, x2] with any diagonal pair of corners
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

/// True when the IoU of a and b is strictly greater than `threshold`.
inline bool overlaps(const Corners& a, const Corners& b, float threshold) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1);
  const float area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return false;
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  const float inter = ih * iw;
  return inter / (area_a + area_b - inter) > threshold;
}

}  // namespace nms_detail

/// The scalar inputs of NonMaxSuppression (inputs 2..4; nullptr when omitted).
struct NmsParams {
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
};

inline NmsParams nms_params(const Tensor* max_boxes, const Tensor* iou, const Tensor* score) {
  NmsParams p;
  auto one = [](const Tensor* t, const char* name, DType want) {
    if (t->numel() != 1 || t->dtype() != want)
      fail_runtime("{} must be a single {} value, got {} {}", name, dtype_name(want),
                   dtype_name(t->dtype()), dims_str(t->dims()));
  };
  if (max_boxes && max_boxes->numel() > 0) {
    one(max_boxes, "max_output_boxes_per_class", DType::kInt64);
    p.max_per_class = *max_boxes->data<int64_t>();
  }
  if (iou && iou->numel() > 0) {
    one(iou, "iou_threshold", DType::kFloat);
    p.iou_threshold = *iou->data<float>();
  }
  if (score && score->numel() > 0) {
    one(score, "score_threshold", DType::kFloat);
    p.has_score_threshold = true;
    p.score_threshold = *score->data<float>();
  }
  return p;
}

/// Greedy NMS per (batch, class): boxes [B, N, 4] float, scores [B, C, N] float. Boxes
/// scoring at most the score threshold (when given) or NaN are dropped; candidates go
/// by score, descending (ties: lower box index first); a candidate is kept unless its
/// IoU with an already kept box of its class exceeds the IoU threshold; at most
/// max_per_class are kept per class. Throws onyx::Error on inconsistent shapes.
inline std::vector<NmsPick> nms_select(const Tensor& boxes, const Tensor& scores,
                                       const NmsParams& p, bool center_point_box) {
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    fail_runtime("boxes must have shape [num_batches, spatial_dimension, 4], got {}",
                 dims_str(boxes.dims()));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    fail_runtime("scores must have shape [num_batches, num_classes, spatial_dimension] = [{}, C, {}], got {}",
                 boxes.dim(0), boxes.dim(1), dims_str(scores.dims()));
  if (boxes.dtype() != DType::kFloat || scores.dtype() != DType::kFloat)
    fail_runtime("boxes and scores must be float");
  std::vector<NmsPick> out;
  if (p.max_per_class <= 0) return out;
  const int64_t nb = boxes.dim(0), nc = scores.dim(1), n = boxes.dim(1);
  std::vector<nms_detail::Corners> c(static_cast<size_t>(n));
  std::vector<int64_t> order;
  std::vector<int64_t> kept;
  for (int64_t b = 0; b < nb; ++b) {
    const float* bp = boxes.data<float>() + b * n * 4;
    for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(i)] = nms_detail::corners(bp + i * 4, center_point_box);
    for (int64_t k = 0; k < nc; ++k) {
      const float* sp = scores.data<float>() + (b * nc + k) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!std::isnan(sp[i]) && (!p.has_score_threshold || sp[i] > p.score_threshold))
          order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return sp[i] > sp[j]; });
      kept.clear();
      CancelPoll poll;  // base/cancel.h: n boxes that all survive compare n^2 / 2 pairs
      for (int64_t i : order) {
        poll(static_cast<int64_t>(kept.size()));
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        bool suppressed = false;
        for (int64_t j : kept)
          if (nms_detail::overlaps(c[static_cast<size_t>(i)], c[static_cast<size_t>(j)], p.iou_threshold)) {
            suppressed = true;
            break;
          }
        if (suppressed) continue;
        kept.push_back(i);
        out.push_back({b, k, i});
      }
    }
  }
  return out;
}

}  // namespace onyx::kernels
