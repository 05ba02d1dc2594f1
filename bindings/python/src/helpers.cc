// The pre- and post-processing that stays outside the graph, from the same C++ as the CLI
// and the browser: onyx.ctc_decode, onyx.decode_boxes / onyx.nms, onyx.preprocess_text_line.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "image/preprocess.h"
#include "module.h"
#include "post/boxes.h"
#include "post/ctc.h"

namespace py = pybind11;

namespace onyx::python {

namespace {

/// A float tensor copy of a numpy array (float32/float64/float16 kept as they are).
Tensor tensor_of(const py::handle& obj) {
  std::vector<py::object> keep;
  Value v = to_value(obj, DType::kUndefined, false, keep);
  if (!v.is_tensor()) throw Error(ErrorCode::kInvalidArgument, "expected a numpy array");
  return v.tensor().clone();
}

std::vector<std::string> alphabet_of(const py::object& alphabet) {
  if (py::isinstance<py::str>(alphabet)) return post::utf8_chars(alphabet.cast<std::string>());
  return alphabet.cast<std::vector<std::string>>();
}

py::list detections_to_python(const std::vector<post::Detection>& dets) {
  py::list out;
  for (const post::Detection& d : dets) {
    py::dict e;
    e["box"] = py::make_tuple(d.box.x1, d.box.y1, d.box.x2, d.box.y2);
    e["score"] = d.score;
    e["class"] = d.cls;
    e["index"] = d.index;
    out.append(e);
  }
  return out;
}

post::BoxDecodeOptions box_options(const std::string& format, double score_threshold, double iou_threshold,
                                   int64_t max_detections) {
  post::BoxDecodeOptions o;
  if (format == "cxcywh") {
    o.format = post::BoxFormat::kCxCyWh;
  } else if (format == "xyxy") {
    o.format = post::BoxFormat::kXyxy;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "box format '" + format + "': expected 'cxcywh' or 'xyxy'");
  }
  o.score_threshold = score_threshold;
  o.iou_threshold = iou_threshold;
  o.max_detections = max_detections;
  post::check_box_options(o);
  return o;
}

}  // namespace

void bind_helpers(py::module_& m) {
  m.def(
      "ctc_decode",
      [](const py::object& logits, const py::object& alphabet, int64_t beam_width, int64_t blank,
         const std::string& layout, const std::string& scores) {
        Tensor t = tensor_of(logits);
        post::CtcLayout lay;
        if (layout == "NTC") {
          lay = post::CtcLayout::kBatchTimeClass;
        } else if (layout == "TNC") {
          lay = post::CtcLayout::kTimeBatchClass;
        } else {
          throw Error(ErrorCode::kInvalidArgument, "layout '" + layout + "': expected 'NTC' or 'TNC'");
        }
        post::CtcScores kind;
        if (scores == "logits") {
          kind = post::CtcScores::kLogits;
        } else if (scores == "probabilities") {
          kind = post::CtcScores::kProbabilities;
        } else {
          throw Error(ErrorCode::kInvalidArgument, "scores '" + scores + "': expected 'logits' or 'probabilities'");
        }
        const std::vector<std::string> symbols = alphabet_of(alphabet);
        const int64_t classes = t.rank() ? t.dim(t.rank() - 1) : 0;
        std::vector<std::vector<int64_t>> labels;
        if (beam_width <= 1) {
          labels = post::ctc_greedy_decode(t, blank, lay);
        } else {
          for (auto& r : post::ctc_beam_decode(t, blank, beam_width, lay, kind)) labels.push_back(std::move(r.labels));
        }
        std::vector<std::string> texts;
        for (const auto& l : labels) texts.push_back(post::ctc_labels_to_text(l, symbols, blank, classes));
        return texts;
      },
      py::arg("logits"), py::arg("alphabet"), py::arg("beam_width") = 1, py::arg("blank") = 0,
      py::arg("layout") = "NTC", py::arg("scores") = "logits",
      R"(CTC-decodes frame scores into strings, as `onyx ocr` and the browser do.

logits: float array [T, C] (one sequence) or [N, T, C] ('NTC') / [T, N, C] ('TNC').
alphabet: a str (one symbol per character) or a list of symbols; it lists the non-blank
    classes in order, or every class with the blank included.
beam_width: 1 for greedy (best path) decoding, more for prefix beam search.
scores: 'logits' (or log-probabilities) or 'probabilities' (for beam search).
Returns one string per sequence.)");

  m.def(
      "decode_boxes",
      [](const py::object& output, double score_threshold, double iou_threshold, int64_t max_detections,
         const std::string& format) {
        Tensor t = tensor_of(output);
        auto per_image = post::decode_boxes(t, box_options(format, score_threshold, iou_threshold, max_detections));
        py::list out;
        for (const auto& d : per_image) out.append(detections_to_python(d));
        return out;
      },
      py::arg("output"), py::arg("score_threshold") = 0.25, py::arg("iou_threshold") = 0.45,
      py::arg("max_detections") = 300, py::arg("format") = "cxcywh",
      R"(Decodes a YOLO-style output [N, B, 5+K] (or [B, 5+K]): score filter, per-class NMS.

Returns per image a list of {'box': (x1, y1, x2, y2), 'score', 'class', 'index'}, by
descending score, as `onyx parity --decode boxes` does.)");

  m.def(
      "nms",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& boxes,
         const py::array_t<double, py::array::c_style | py::array::forcecast>& scores,
         const py::object& classes, double iou_threshold, int64_t max_detections) {
        if (boxes.ndim() != 2 || boxes.shape(1) != 4)
          throw Error(ErrorCode::kInvalidArgument, "boxes must be [B, 4] (x1, y1, x2, y2)");
        const py::ssize_t n = boxes.shape(0);
        if (scores.ndim() != 1 || scores.shape(0) != n)
          throw Error(ErrorCode::kInvalidArgument, "scores must be [B], one per box");
        std::vector<int64_t> cls(static_cast<size_t>(n), 0);
        if (!classes.is_none()) {
          auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(classes);
          if (!c || c.ndim() != 1 || c.shape(0) != n)
            throw Error(ErrorCode::kInvalidArgument, "classes must be [B], one per box");
          for (py::ssize_t i = 0; i < n; ++i) cls[static_cast<size_t>(i)] = c.at(i);
        }
        if (!(iou_threshold >= 0 && iou_threshold <= 1))
          throw Error(ErrorCode::kInvalidArgument, "iou_threshold must be in [0, 1]");
        std::vector<post::Detection> dets;
        for (py::ssize_t i = 0; i < n; ++i) {
          post::Detection d;
          d.box = {boxes.at(i, 0), boxes.at(i, 1), boxes.at(i, 2), boxes.at(i, 3)};
          d.score = scores.at(i);
          d.cls = cls[static_cast<size_t>(i)];
          d.index = i;
          dets.push_back(d);
        }
        std::vector<int64_t> kept;
        for (const auto& d : post::nms_per_class(std::move(dets), iou_threshold, max_detections))
          kept.push_back(d.index);
        return kept;
      },
      py::arg("boxes"), py::arg("scores"), py::arg("classes") = py::none(), py::arg("iou_threshold") = 0.45,
      py::arg("max_detections") = 0,
      "Greedy per-class non-maximum suppression of boxes [B, 4] (x1, y1, x2, y2) with scores [B] (and classes "
      "[B]); returns the indices kept, by descending score. max_detections 0: no limit.");

  m.def(
      "preprocess_text_line",
      [](const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& image, int64_t height,
         int64_t min_width, double scale, double mean, double std) {
        image::TextLineParams p;
        p.height = height;
        p.min_width = min_width;
        p.scale = scale;
        p.mean = mean;
        p.std = std;
        Tensor t;
        if (image.ndim() == 2) {
          image::GrayImage g;
          g.height = image.shape(0);
          g.width = image.shape(1);
          g.pixels.assign(image.data(), image.data() + image.size());
          t = image::preprocess_gray(g, p);
        } else if (image.ndim() == 3 && image.shape(2) == 4) {
          image::RgbaImage rgba;
          rgba.height = image.shape(0);
          rgba.width = image.shape(1);
          rgba.pixels.assign(image.data(), image.data() + image.size());
          t = image::preprocess_rgba(rgba, p);
        } else {
          throw Error(ErrorCode::kInvalidArgument, "image must be uint8 [H, W] (gray) or [H, W, 4] (RGBA)");
        }
        return to_python(Value(std::move(t)));
      },
      py::arg("image"), py::arg("height") = 32, py::arg("min_width") = 16, py::arg("scale") = 1.0 / 255.0,
      py::arg("mean") = 0.5, py::arg("std") = 0.5,
      R"(The text-line preprocessing of `onyx ocr` and the browser: gray uint8 [H, W] or RGBA
[H, W, 4] (composited over white) to a float32 [1, 1, height, width] tensor, width keeping the
aspect ratio (at least min_width), scaled and normalised ((x * scale - mean) / std).)");
}

}  // namespace onyx::python
