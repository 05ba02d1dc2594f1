// post:: box decoding, per-class NMS and IoU matching: hand-checked cases, and random cases
// against a brute-force reference written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "onyx/error.h"
#include "onyx/boxes.h"

namespace onyx::post {
namespace {

Detection det(double x1, double y1, double x2, double y2, double score, int64_t cls, int64_t index = 0) {
  return {{x1, y1, x2, y2}, score, cls, index};
}

TEST(BoxIou, HandChecked) {
  Box a{0, 0, 2, 2}, b{1, 1, 3, 3};
  EXPECT_DOUBLE_EQ(box_iou(a, a), 1.0);
  EXPECT_DOUBLE_EQ(box_iou(a, b), 1.0 / 7.0);  // intersection 1, union 4 + 4 - 1
  EXPECT_DOUBLE_EQ(box_iou(b, a), 1.0 / 7.0);
  EXPECT_DOUBLE_EQ(box_iou({0, 0, 4, 4}, {1, 1, 3, 3}), 0.25);  // contained: 4 / 16
  EXPECT_DOUBLE_EQ(box_iou({0, 0, 2, 1}, {0, 0, 1, 1}), 0.5);
  EXPECT_EQ(box_iou({0, 0, 1, 1}, {1, 0, 2, 1}), 0.0);    // touching edges
  EXPECT_EQ(box_iou({0, 0, 1, 1}, {5, 5, 6, 6}), 0.0);    // apart
  EXPECT_EQ(box_iou({1, 1, 1, 1}, {1, 1, 1, 1}), 0.0);    // no area at all
  EXPECT_EQ(box_iou({2, 2, 0, 0}, {0, 0, 2, 2}), 0.0);    // inverted box: no area
  EXPECT_EQ(box_iou({0, 0, NAN, 1}, {0, 0, 1, 1}), 0.0);
  EXPECT_EQ(box_iou({0, 0, INFINITY, 1}, {0, 0, 1, 1}), 0.0);
}

TEST(BoxIou, Formats) {
  double cxcywh[4] = {2, 3, 4, 2};  // centre (2, 3), 4 wide, 2 high
  Box b = box_from(cxcywh, BoxFormat::kCxCyWh);
  EXPECT_DOUBLE_EQ(b.x1, 0);
  EXPECT_DOUBLE_EQ(b.y1, 2);
  EXPECT_DOUBLE_EQ(b.x2, 4);
  EXPECT_DOUBLE_EQ(b.y2, 4);
  double xyxy[4] = {1, 2, 3, 4};
  Box c = box_from(xyxy, BoxFormat::kXyxy);
  EXPECT_EQ(c.x1, 1);
  EXPECT_EQ(c.y1, 2);
  EXPECT_EQ(c.x2, 3);
  EXPECT_EQ(c.y2, 4);
}

TEST(BoxNms, PerClassHandChecked) {
  // A and B overlap with IoU 81 / 119 = 0.68; C is apart; D is A's box in another class.
  std::vector<Detection> in = {det(0, 0, 10, 10, 0.9, 0, 0), det(1, 1, 11, 11, 0.8, 0, 1),
                               det(20, 20, 30, 30, 0.7, 0, 2), det(0, 0, 10, 10, 0.85, 1, 3)};
  auto idx = [](const std::vector<Detection>& v) {
    std::vector<int64_t> o;
    for (const auto& d : v) o.push_back(d.index);
    return o;
  };
  EXPECT_EQ(idx(nms_per_class(in, 0.45, 300)), (std::vector<int64_t>{0, 3, 2}));   // B suppressed by A
  EXPECT_EQ(idx(nms_per_class(in, 0.7, 300)), (std::vector<int64_t>{0, 3, 1, 2}));  // 0.68 is not above 0.7
  EXPECT_EQ(idx(nms_per_class(in, 0.45, 2)), (std::vector<int64_t>{0, 3}));        // the two best
  EXPECT_EQ(idx(nms_per_class(in, 0.45, 0)), (std::vector<int64_t>{0, 3, 2}));     // 0: no limit
  // IoU exactly at the threshold is not above it: both kept.
  std::vector<Detection> half = {det(0, 0, 2, 1, 0.9, 0, 0), det(0, 0, 1, 1, 0.8, 0, 1)};
  EXPECT_EQ(nms_per_class(half, 0.5, 10).size(), 2u);
  EXPECT_EQ(nms_per_class(half, 0.49, 10).size(), 1u);
  // Equal scores: the lower candidate index wins; NaN scores are dropped.
  std::vector<Detection> tie = {det(1, 1, 11, 11, 0.5, 0, 4), det(0, 0, 10, 10, 0.5, 0, 2), det(0, 0, 10, 10, NAN, 0, 1)};
  auto t = nms_per_class(tie, 0.45, 10);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].index, 2);
  EXPECT_TRUE(nms_per_class({}, 0.5, 10).empty());
}

TEST(BoxDecode, RowsHandChecked) {
  // cx, cy, w, h, objectness, class 0, class 1
  std::vector<double> rows = {
      5,   5,  10, 10, 0.9, 0.1, 0.8,    // 0: class 1, 0.72, box [0, 0, 10, 10]
      6,   5,  10, 10, 0.5, 0.5, 0.4,    // 1: class 0, 0.25 exactly: at the threshold, kept
      50,  50, 4,  4,  1.0, 0.3, 0.3,    // 2: tie between classes: class 0, 0.3
      5.5, 5,  10, 10, 0.8, 0.0, 0.85,   // 3: class 1, 0.68, IoU 95/105 with 0: suppressed
      5,   5,  10, 10, 0.2, 0.9, 0.9,    // 4: 0.18, below the threshold
      NAN, 5,  10, 10, NAN, 0.9, 0.9,    // 5: NaN score, dropped
  };
  BoxDecodeOptions opt;  // cxcywh, 0.25, 0.45, 300
  auto d = decode_boxes(rows.data(), 6, 7, opt);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].index, 0);
  EXPECT_EQ(d[0].cls, 1);
  EXPECT_NEAR(d[0].score, 0.72, 1e-12);
  EXPECT_DOUBLE_EQ(d[0].box.x1, 0);
  EXPECT_DOUBLE_EQ(d[0].box.x2, 10);
  EXPECT_EQ(d[1].index, 2);
  EXPECT_EQ(d[1].cls, 0);
  EXPECT_DOUBLE_EQ(d[1].box.x1, 48);
  EXPECT_DOUBLE_EQ(d[1].box.y2, 52);
  EXPECT_EQ(d[2].index, 1);
  EXPECT_EQ(d[2].cls, 0);
  EXPECT_EQ(d[2].score, 0.25);
  // A stricter NMS keeps row 3 too (class 1, IoU 0.905 is not above 0.95).
  opt.iou_threshold = 0.95;
  EXPECT_EQ(decode_boxes(rows.data(), 6, 7, opt).size(), 4u);
  // xyxy: the same numbers read as corners; row 2 becomes [50, 50, 4, 4] (no area).
  opt.iou_threshold = 0.45;
  opt.format = BoxFormat::kXyxy;
  auto x = decode_boxes(rows.data(), 6, 7, opt);
  ASSERT_EQ(x.size(), 3u);  // rows 0 and 3 are [5, 5, 10, 10] and [5.5, 5, 10, 10]: IoU 0.9
  EXPECT_EQ(x[0].index, 0);
  EXPECT_DOUBLE_EQ(x[0].box.x2, 10);
}

TEST(BoxDecode, TensorShapesAndErrors) {
  // Two images, two candidates each, one class: [2, 2, 6].
  Tensor t(DType::kFloat, {2, 2, 6});
  const float v[] = {10, 10, 4, 4, 1.0f, 0.5f,  10, 10, 4, 4, 0.1f, 0.5f,
                     20, 20, 2, 2, 0.5f, 1.0f,  0,  0,  2, 2, 1.0f, 1.0f};
  std::copy(std::begin(v), std::end(v), t.data<float>());
  auto d = decode_boxes(t, BoxDecodeOptions{});
  ASSERT_EQ(d.size(), 2u);
  ASSERT_EQ(d[0].size(), 1u);
  EXPECT_EQ(d[0][0].index, 0);
  EXPECT_DOUBLE_EQ(d[0][0].box.x1, 8);
  ASSERT_EQ(d[1].size(), 2u);
  EXPECT_EQ(d[1][0].index, 1);  // score 1.0 before 0.5
  EXPECT_EQ(d[1][1].index, 0);
  Tensor r2(DType::kDouble, {2, 6});  // rank 2: one image
  std::copy(v, v + 12, r2.data<double>());
  auto e = decode_boxes(r2, BoxDecodeOptions{});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].size(), 1u);

  EXPECT_THROW(decode_boxes(Tensor(DType::kFloat, {6}), BoxDecodeOptions{}), Error);
  EXPECT_THROW(decode_boxes(Tensor(DType::kFloat, {1, 2, 2, 6}), BoxDecodeOptions{}), Error);
  EXPECT_THROW(decode_boxes(Tensor(DType::kFloat, {1, 4, 5}), BoxDecodeOptions{}), Error);  // no class column
  EXPECT_THROW(decode_boxes(Tensor(DType::kInt64, {1, 4, 6}), BoxDecodeOptions{}), Error);
  BoxDecodeOptions bad;
  bad.iou_threshold = 1.5;
  EXPECT_THROW(decode_boxes(t, bad), Error);
  bad = {};
  bad.score_threshold = NAN;
  EXPECT_THROW(decode_boxes(t, bad), Error);
  bad = {};
  bad.max_detections = -1;
  EXPECT_THROW(decode_boxes(t, bad), Error);
  // Empty batch or no candidates: nothing, no error.
  EXPECT_TRUE(decode_boxes(Tensor(DType::kFloat, {0, 4, 6}), BoxDecodeOptions{}).empty());
  auto none = decode_boxes(Tensor(DType::kFloat, {1, 0, 6}), BoxDecodeOptions{});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].empty());
}

TEST(BoxMatchTest, HandChecked) {
  std::vector<Detection> want = {det(0, 0, 10, 10, 0.9, 0), det(20, 0, 30, 10, 0.8, 0), det(0, 20, 10, 30, 0.7, 1)};
  std::vector<Detection> got = {
      det(0, 0, 10, 10, 0.9, 0),   // IoU 1 with want 0
      det(22, 0, 32, 10, 0.8, 0),  // IoU 80 / 120 with want 1
      det(0, 20, 10, 30, 0.7, 2),  // want 2's box, another class: unmatched
      det(5, 20, 15, 30, 0.6, 1),  // IoU 50 / 150 with want 2: below 0.5
  };
  BoxMatch m = match_detections(got, want, 0.5);
  EXPECT_EQ(m.got, 4);
  EXPECT_EQ(m.want, 3);
  EXPECT_EQ(m.matched, 2);
  EXPECT_NEAR(m.iou_sum, 1.0 + 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(m.mean_iou(), 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(m.recall(), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(m.precision(), 0.5, 1e-12);
  ASSERT_EQ(m.pairs.size(), 2u);
  EXPECT_EQ(m.pairs[0], (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(m.pairs[1], (std::pair<int64_t, int64_t>{1, 1}));
  // At IoU 0.3 the fourth detection matches too (1/3).
  EXPECT_EQ(match_detections(got, want, 0.3).matched, 3);

  // Empty sets: recall and precision are 1 when there is nothing to find or nothing found.
  BoxMatch e = match_detections({}, {}, 0.5);
  EXPECT_EQ(e.recall(), 1.0);
  EXPECT_EQ(e.precision(), 1.0);
  EXPECT_TRUE(std::isnan(e.mean_iou()));
  BoxMatch only_ref = match_detections({}, want, 0.5);
  EXPECT_EQ(only_ref.recall(), 0.0);
  EXPECT_EQ(only_ref.precision(), 1.0);
  BoxMatch only_got = match_detections(got, {}, 0.5);
  EXPECT_EQ(only_got.recall(), 1.0);
  EXPECT_EQ(only_got.precision(), 0.0);
  m.add(only_ref);
  EXPECT_EQ(m.want, 6);
  EXPECT_EQ(m.matched, 2);
  EXPECT_NEAR(m.recall(), 2.0 / 6.0, 1e-12);
}

TEST(BoxMatchTest, GreedyByScore) {
  // The higher-scored detection picks first, and picks its best IoU.
  std::vector<Detection> want = {det(0, 0, 10, 10, 1, 0), det(2, 0, 12, 10, 1, 0)};
  std::vector<Detection> got = {det(1, 0, 11, 10, 0.8, 0), det(2, 0, 12, 10, 0.9, 0)};
  BoxMatch m = match_detections(got, want, 0.5);
  EXPECT_EQ(m.matched, 2);
  ASSERT_EQ(m.pairs.size(), 2u);
  EXPECT_EQ(m.pairs[0], (std::pair<int64_t, int64_t>{1, 1}));  // IoU 1
  EXPECT_EQ(m.pairs[1], (std::pair<int64_t, int64_t>{0, 0}));  // IoU 90 / 110
  EXPECT_NEAR(m.iou_sum, 1.0 + 9.0 / 11.0, 1e-12);
  // One reference box: the best-scored detection takes it even with the lower IoU.
  std::vector<Detection> one = {det(0, 0, 10, 10, 1, 0)};
  std::vector<Detection> two = {det(0, 0, 10, 10, 0.5, 0), det(1, 0, 11, 10, 0.9, 0)};
  BoxMatch g = match_detections(two, one, 0.5);
  EXPECT_EQ(g.matched, 1);
  EXPECT_EQ(g.pairs[0], (std::pair<int64_t, int64_t>{1, 0}));
  EXPECT_NEAR(g.iou_sum, 9.0 / 11.0, 1e-12);
}

// ---- brute-force references, written independently of src/post/boxes.cc ----

double ref_iou(const Box& a, const Box& b) {
  double ox = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  double oy = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (ox <= 0 || oy <= 0) return 0;
  double inter = ox * oy;
  double wa = a.x2 - a.x1, ha = a.y2 - a.y1, wb = b.x2 - b.x1, hb = b.y2 - b.y1;
  return inter / (wa * ha + wb * hb - inter);
}

/// Decode + NMS the textbook way: per row, every class's score, take the best; then,
/// while candidates remain, take the highest (lowest row on ties), drop the rest of its
/// class that overlap it by more than the threshold.
std::vector<Detection> ref_decode(const float* rows, int64_t boxes, int64_t len, const BoxDecodeOptions& o) {
  std::vector<Detection> left;
  for (int64_t b = 0; b < boxes; ++b) {
    const float* r = rows + b * len;
    int64_t cls = 0;
    for (int64_t c = 1; c < len - 5; ++c)
      if (double(r[4]) * r[5 + c] > double(r[4]) * r[5 + cls]) cls = c;
    double score = double(r[4]) * r[5 + cls];
    if (score < o.score_threshold) continue;
    Box bx = o.format == BoxFormat::kXyxy ? Box{r[0], r[1], r[2], r[3]}
                                          : Box{r[0] - r[2] / 2.0, r[1] - r[3] / 2.0, r[0] + r[2] / 2.0, r[1] + r[3] / 2.0};
    left.push_back({bx, score, cls, b});
  }
  std::vector<Detection> kept;
  while (!left.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < left.size(); ++i)
      if (left[i].score > left[best].score || (left[i].score == left[best].score && left[i].index < left[best].index))
        best = i;
    Detection d = left[best];
    kept.push_back(d);
    std::vector<Detection> rest;
    for (size_t i = 0; i < left.size(); ++i)
      if (i != best && !(left[i].cls == d.cls && ref_iou(left[i].box, d.box) > o.iou_threshold)) rest.push_back(left[i]);
    left = rest;
  }
  if (o.max_detections > 0 && kept.size() > static_cast<size_t>(o.max_detections)) kept.resize(o.max_detections);
  return kept;
}

/// Greedy matching from the full IoU matrix.
struct RefMatch {
  int64_t matched = 0;
  double iou_sum = 0;
  std::vector<std::pair<int64_t, int64_t>> pairs;
};
RefMatch ref_match(const std::vector<Detection>& got, const std::vector<Detection>& want, double thr) {
  std::vector<std::vector<double>> iou(got.size(), std::vector<double>(want.size(), -1));
  for (size_t g = 0; g < got.size(); ++g)
    for (size_t w = 0; w < want.size(); ++w)
      if (got[g].cls == want[w].cls) iou[g][w] = ref_iou(got[g].box, want[w].box);
  std::vector<bool> g_done(got.size()), w_done(want.size());
  RefMatch m;
  for (size_t step = 0; step < got.size(); ++step) {
    int64_t g = -1;  // the highest-scored detection not yet considered
    for (size_t i = 0; i < got.size(); ++i)
      if (!g_done[i] && (g < 0 || got[i].score > got[g].score)) g = static_cast<int64_t>(i);
    g_done[g] = true;
    int64_t w = -1;
    for (size_t j = 0; j < want.size(); ++j)
      if (!w_done[j] && iou[g][j] >= thr && (w < 0 || iou[g][j] > iou[g][w])) w = static_cast<int64_t>(j);
    if (w < 0) continue;
    w_done[w] = true;
    ++m.matched;
    m.iou_sum += iou[g][w];
    m.pairs.emplace_back(g, w);
  }
  return m;
}

TEST(BoxRandom, DecodeAndNmsAgainstBruteForce) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(0, 1);
  int64_t kept = 0, suppressed = 0;  // the cases must exercise NMS, not only the filter
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + trial % 3, boxes = 1 + static_cast<int64_t>(rng() % 60), classes = 1 + static_cast<int64_t>(rng() % 4);
    const int64_t len = 5 + classes;
    BoxDecodeOptions o;
    o.format = trial % 2 ? BoxFormat::kXyxy : BoxFormat::kCxCyWh;
    o.score_threshold = std::vector<double>{0.0, 0.1, 0.25, 0.5}[rng() % 4];
    o.iou_threshold = std::vector<double>{0.0, 0.3, 0.45, 0.7, 1.0}[rng() % 5];
    o.max_detections = std::vector<int64_t>{0, 3, 300}[rng() % 3];
    Tensor t(DType::kFloat, {n, boxes, len});
    float* p = t.data<float>();
    for (int64_t i = 0; i < n * boxes; ++i) {
      float* r = p + i * len;
      float a = 40 * u(rng), b = 40 * u(rng), c = 2 + 15 * u(rng), d = 2 + 15 * u(rng);
      if (o.format == BoxFormat::kXyxy) c += a, d += b;  // corners with x2 > x1
      r[0] = a, r[1] = b, r[2] = c, r[3] = d;
      for (int64_t k = 4; k < len; ++k) r[k] = u(rng);
    }
    auto got = decode_boxes(t, o);
    ASSERT_EQ(static_cast<int64_t>(got.size()), n);
    for (int64_t img = 0; img < n; ++img) {
      auto want = ref_decode(p + img * boxes * len, boxes, len, o);
      BoxDecodeOptions no_nms = o;
      no_nms.iou_threshold = 1, no_nms.max_detections = 0;
      kept += static_cast<int64_t>(want.size());
      suppressed += static_cast<int64_t>(ref_decode(p + img * boxes * len, boxes, len, no_nms).size() - want.size());
      ASSERT_EQ(got[img].size(), want.size()) << "trial " << trial << " image " << img;
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(got[img][k].index, want[k].index) << "trial " << trial;
        EXPECT_EQ(got[img][k].cls, want[k].cls);
        EXPECT_EQ(got[img][k].score, want[k].score);
        EXPECT_NEAR(got[img][k].box.x1, want[k].box.x1, 1e-9);
        EXPECT_NEAR(got[img][k].box.y2, want[k].box.y2, 1e-9);
      }
    }
  }
  EXPECT_GT(kept, 1000);
  EXPECT_GT(suppressed, 1000);
  std::printf("random decoding: %lld kept, %lld suppressed by NMS or the limit\n", static_cast<long long>(kept),
              static_cast<long long>(suppressed));
}

TEST(BoxRandom, MatchingAgainstBruteForce) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> u(0, 1);
  int64_t matched = 0, unmatched = 0;  // both outcomes must be common
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Detection> want, got;
    const int nw = static_cast<int>(rng() % 8), classes = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < nw; ++i) {
      double x = 50 * u(rng), y = 50 * u(rng), w = 3 + 20 * u(rng), h = 3 + 20 * u(rng);
      want.push_back(det(x, y, x + w, y + h, u(rng), static_cast<int64_t>(rng() % classes), i));
    }
    // The detections under test: reference boxes moved, resized, relabelled or dropped, plus extras.
    for (const auto& w : want) {
      if (u(rng) < 0.2) continue;
      Detection d = w;
      double s = (w.box.x2 - w.box.x1) * 0.4;
      d.box.x1 += s * (u(rng) - 0.5), d.box.x2 += s * (u(rng) - 0.5), d.box.y1 += s * (u(rng) - 0.5);
      if (u(rng) < 0.1) d.cls = (d.cls + 1) % classes;
      d.score = u(rng);
      d.index = static_cast<int64_t>(got.size());
      got.push_back(d);
    }
    for (int e = static_cast<int>(rng() % 3); e > 0; --e) {
      double x = 50 * u(rng), y = 50 * u(rng);
      got.push_back(det(x, y, x + 10, y + 10, u(rng), static_cast<int64_t>(rng() % classes), static_cast<int64_t>(got.size())));
    }
    std::shuffle(got.begin(), got.end(), rng);
    for (double thr : {0.5, 0.75}) {
      BoxMatch m = match_detections(got, want, thr);
      RefMatch r = ref_match(got, want, thr);
      EXPECT_EQ(m.got, static_cast<int64_t>(got.size()));
      EXPECT_EQ(m.want, static_cast<int64_t>(want.size()));
      ASSERT_EQ(m.matched, r.matched) << "trial " << trial;
      EXPECT_NEAR(m.iou_sum, r.iou_sum, 1e-9);
      EXPECT_EQ(m.pairs, r.pairs);
      matched += m.matched;
      unmatched += m.got - m.matched;
      for (size_t k = 0; k < m.pairs.size(); ++k) {
        EXPECT_EQ(got[m.pairs[k].first].cls, want[m.pairs[k].second].cls);
        EXPECT_GE(m.pair_iou[k], thr);
      }
    }
  }
  EXPECT_GT(matched, 300);
  EXPECT_GT(unmatched, 300);
  std::printf("random matching: %lld matched, %lld unmatched\n", static_cast<long long>(matched), static_cast<long long>(unmatched));
}

}  // namespace
}  // namespace onyx::post
