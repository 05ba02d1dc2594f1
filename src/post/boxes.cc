#include "onyx/boxes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/half.h"

namespace onyx::post {

double box_iou(const Box& a, const Box& b) {
  for (double v : {a.x1, a.y1, a.x2, a.y2, b.x1, b.y1, b.x2, b.y2})
    if (!std::isfinite(v)) return 0;
  double area_a = std::max(0.0, a.x2 - a.x1) * std::max(0.0, a.y2 - a.y1);
  double area_b = std::max(0.0, b.x2 - b.x1) * std::max(0.0, b.y2 - b.y1);
  double iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  double ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  double inter = iw > 0 && ih > 0 ? iw * ih : 0.0;
  double uni = area_a + area_b - inter;
  if (!(uni > 0) || !std::isfinite(uni)) return 0;
  return std::clamp(inter / uni, 0.0, 1.0);
}

Box box_from(const double* v, BoxFormat format) {
  if (format == BoxFormat::kXyxy) return {v[0], v[1], v[2], v[3]};
  return {v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
}

void check_box_options(const BoxDecodeOptions& opt) {
  if (!std::isfinite(opt.score_threshold))
    fail_arg("box decoding: the score threshold must be a finite number, got {}", opt.score_threshold);
  if (!(opt.iou_threshold >= 0 && opt.iou_threshold <= 1))
    fail_arg("box decoding: the NMS IoU threshold must be in [0, 1], got {}", opt.iou_threshold);
  if (opt.max_detections < 0)
    fail_arg("box decoding: max detections must be 0 (no limit) or more, got {}", opt.max_detections);
}

namespace {

/// Descending score, then ascending candidate index: a strict weak order also for equal scores.
bool by_score(const Detection& a, const Detection& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.index < b.index;
}

}  // namespace

std::vector<Detection> nms_per_class(std::vector<Detection> dets, double iou_threshold, int64_t max_detections) {
  // NaN scores would break the ordering; they never survive.
  dets.erase(std::remove_if(dets.begin(), dets.end(), [](const Detection& d) { return std::isnan(d.score); }), dets.end());
  // Group by class, each group by descending score.
  std::stable_sort(dets.begin(), dets.end(), [](const Detection& a, const Detection& b) {
    if (a.cls != b.cls) return a.cls < b.cls;
    return by_score(a, b);
  });
  std::vector<Detection> kept;
  const size_t limit = max_detections > 0 ? static_cast<size_t>(max_detections) : std::numeric_limits<size_t>::max();
  for (size_t begin = 0; begin < dets.size();) {
    size_t end = begin;
    while (end < dets.size() && dets[end].cls == dets[begin].cls) ++end;
    const size_t first_kept = kept.size();
    for (size_t i = begin; i < end; ++i) {
      // Once a class has `limit` boxes, its later (lower-scored) ones can never make the cut.
      if (kept.size() - first_kept >= limit) break;
      bool suppressed = false;
      for (size_t k = first_kept; k < kept.size() && !suppressed; ++k)
        suppressed = box_iou(dets[i].box, kept[k].box) > iou_threshold;
      if (!suppressed) kept.push_back(dets[i]);
    }
    begin = end;
  }
  std::sort(kept.begin(), kept.end(), by_score);
  if (kept.size() > limit) kept.resize(limit);
  return kept;
}

std::vector<Detection> decode_boxes(const double* rows, int64_t boxes, int64_t row_len, const BoxDecodeOptions& opt) {
  check_box_options(opt);
  if (row_len < 6)
    fail_arg("box decoding needs rows of at least 6 numbers (4 box, objectness, 1 or more class scores), got {}", row_len);
  const int64_t classes = row_len - 5;
  std::vector<Detection> cand;
  for (int64_t b = 0; b < boxes; ++b) {
    const double* r = rows + b * row_len;
    const double obj = r[4];
    int64_t best = -1;
    double best_score = 0;
    for (int64_t c = 0; c < classes; ++c) {
      double s = obj * r[5 + c];
      if (std::isnan(s)) continue;
      if (best < 0 || s > best_score) best = c, best_score = s;
    }
    if (best < 0 || !(best_score >= opt.score_threshold)) continue;
    cand.push_back({box_from(r, opt.format), best_score, best, b});
  }
  return nms_per_class(std::move(cand), opt.iou_threshold, opt.max_detections);
}

std::vector<std::vector<Detection>> decode_boxes(const Tensor& t, const BoxDecodeOptions& opt) {
  check_box_options(opt);
  if (t.rank() != 2 && t.rank() != 3)
    fail_arg("box decoding needs a YOLO-style output of rank 3 [N, boxes, 5 + classes] or 2 [boxes, 5 + classes], got {}",
             dims_str(t.dims()));
  const int64_t row_len = t.dims().back();
  if (row_len < 6)
    fail_arg("box decoding needs a last dim of at least 6 (cx, cy, w, h or x1, y1, x2, y2, then objectness and 1 or more "
             "class scores), got {}",
             dims_str(t.dims()));
  std::vector<double> v(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kFloat: std::copy_n(t.data<float>(), v.size(), v.begin()); break;
    case DType::kDouble: std::copy_n(t.data<double>(), v.size(), v.begin()); break;
    case DType::kFloat16:
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.data<Float16>()[i]);
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.data<BFloat16>()[i]);
      break;
    default:
      fail_arg("box decoding needs a float output, got {} {}", dtype_name(t.dtype()), dims_str(t.dims()));
  }
  const int64_t images = t.rank() == 3 ? t.dim(0) : 1;
  const int64_t boxes = t.rank() == 3 ? t.dim(1) : t.dim(0);
  std::vector<std::vector<Detection>> out;
  for (int64_t n = 0; n < images; ++n) out.push_back(decode_boxes(v.data() + n * boxes * row_len, boxes, row_len, opt));
  return out;
}

double BoxMatch::mean_iou() const {
  return matched ? iou_sum / static_cast<double>(matched) : std::numeric_limits<double>::quiet_NaN();
}

void BoxMatch::add(const BoxMatch& o) {
  got += o.got, want += o.want, matched += o.matched, iou_sum += o.iou_sum;
}

BoxMatch match_detections(const std::vector<Detection>& got, const std::vector<Detection>& want, double iou_threshold) {
  BoxMatch m;
  m.got = static_cast<int64_t>(got.size());
  m.want = static_cast<int64_t>(want.size());
  std::vector<size_t> order(got.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (std::isnan(got[a].score) != std::isnan(got[b].score)) return std::isnan(got[b].score);  // NaN last
    return got[a].score > got[b].score;
  });
  std::vector<bool> taken(want.size(), false);
  for (size_t gi : order) {
    int64_t best = -1;
    double best_iou = 0;
    for (size_t wi = 0; wi < want.size(); ++wi) {
      if (taken[wi] || want[wi].cls != got[gi].cls) continue;
      double iou = box_iou(got[gi].box, want[wi].box);
      if (iou >= iou_threshold && (best < 0 || iou > best_iou)) best = static_cast<int64_t>(wi), best_iou = iou;
    }
    if (best < 0) continue;
    taken[static_cast<size_t>(best)] = true;
    ++m.matched;
    m.iou_sum += best_iou;
    m.pairs.emplace_back(static_cast<int64_t>(gi), best);
    m.pair_iou.push_back(best_iou);
  }
  return m;
}

}  // namespace onyx::post
