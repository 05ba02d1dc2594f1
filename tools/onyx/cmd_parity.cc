// onyx parity MODEL --inputs DIR --reference DIR: run a dataset through onyx and compare
// every output with reference outputs (onnxruntime, PyTorch) within a tolerance.
#include <nlohmann/json.hpp>

#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/half.h"
#include "base/sha256.h"
#include "format/value_io.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "post/boxes.h"
#include "post/ctc.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/dataset.h"
#include "tools/onyx/parity_report.h"
#include "tools/onyx/session_flags.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct ParityArgs {
  SessionFlags session;
  std::string model, inputs, reference;
  double rtol = 1e-3, atol = 1e-4;
  std::string decode, alphabet, decode_output, ctc_layout = "ntc";
  int64_t blank = 0;
  double score_threshold = 0.25, iou_threshold = 0.45;
  int64_t max_detections = 300;
  std::string box_format = "cxcywh";
  bool box_options_given = false;  ///< any of the --decode boxes options on the command line
  std::string report;
  bool json = false;
  int threads = 1;
  int worst = 5;
  int64_t limit = 0;
};

/// Element values as doubles (booleans 0/1); empty optional when the dtype is not numeric.
bool to_doubles(const Tensor& t, std::vector<double>& out) {
  int64_t n = t.numel();
  out.resize(static_cast<size_t>(n));
  auto copy = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case DType::kFloat: copy(t.data<float>()); return true;
    case DType::kDouble: copy(t.data<double>()); return true;
    case DType::kFloat16: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(t.data<Float16>()[i]); return true;
    case DType::kBFloat16: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(t.data<BFloat16>()[i]); return true;
    case DType::kInt8: copy(t.data<int8_t>()); return true;
    case DType::kUint8: case DType::kBool: copy(t.data<uint8_t>()); return true;
    case DType::kInt16: copy(t.data<int16_t>()); return true;
    case DType::kUint16: copy(t.data<uint16_t>()); return true;
    case DType::kInt32: copy(t.data<int32_t>()); return true;
    case DType::kUint32: copy(t.data<uint32_t>()); return true;
    case DType::kInt64: copy(t.data<int64_t>()); return true;
    case DType::kUint64: copy(t.data<uint64_t>()); return true;
    default: return false;
  }
}

std::string index_str(int64_t flat, const Dims& dims) {
  if (dims.empty()) return "[]";
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    int64_t d = dims[k] > 0 ? dims[k] : 1;
    idx[k] = flat % d;
    flat /= d;
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s + "]";
}

/// Compares one output with its reference; fills the histogram of `sum`.
OutputCompare compare(const Tensor& got, const Tensor& want, double rtol, double atol, OutputSummary& sum) {
  OutputCompare c;
  if (got.dims() != want.dims()) {
    c.problem = "shape " + dims_str(got.dims()) + " differs from the reference's " + dims_str(want.dims());
    return c;
  }
  std::vector<double> a, b;
  if (got.dtype() == DType::kString || want.dtype() == DType::kString) {
    if (got.dtype() != want.dtype()) {
      c.problem = "dtype " + std::string(dtype_name(got.dtype())) + " vs the reference's " + std::string(dtype_name(want.dtype()));
      return c;
    }
    c.compared = true;
    c.elements = got.numel();
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.data<std::string>()[i] != want.data<std::string>()[i]) {
        if (c.outside++ == 0) {
          c.worst_at = index_str(i, got.dims());
          c.ratio = INFINITY;
        }
      }
    return c;
  }
  if (!to_doubles(got, a) || !to_doubles(want, b)) {
    c.problem = "dtype " + std::string(dtype_name(got.dtype())) + " / " + std::string(dtype_name(want.dtype())) + " cannot be compared numerically";
    return c;
  }
  c.compared = true;
  c.elements = got.numel();
  double dot = 0, na = 0, nb = 0, sum_abs = 0;
  int64_t worst = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = b[i], d;
    if (x == y || (std::isnan(x) && std::isnan(y))) d = 0;  // equal infinities, matching NaNs
    else d = std::fabs(x - y);
    if (std::isnan(d)) d = INFINITY;  // NaN against a number, or inf against -inf
    double tol = atol + rtol * (std::isfinite(y) ? std::fabs(y) : 0);
    double ratio = d == 0 ? 0 : tol > 0 ? d / tol : INFINITY;
    if (d > tol) ++c.outside;
    if (worst < 0 || ratio > c.ratio) c.ratio = ratio, worst = static_cast<int64_t>(i);
    c.max_abs = std::max(c.max_abs, d);
    sum_abs += d;
    double ref_mag = std::fabs(y);
    if (std::isfinite(ref_mag) && ref_mag >= (atol > 0 ? atol : 1e-300)) c.max_rel = std::max(c.max_rel, d / ref_mag);
    else if (!std::isfinite(d)) c.max_rel = INFINITY;
    if (std::isfinite(x) && std::isfinite(y)) dot += x * y, na += x * x, nb += y * y;
    sum.hist.add(d);
  }
  c.mean_abs = a.empty() ? 0 : sum_abs / static_cast<double>(a.size());
  c.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / (std::sqrt(na) * std::sqrt(nb));
  if (worst >= 0) {
    c.worst_at = index_str(worst, got.dims());
    c.worst_got = a[worst], c.worst_want = b[worst];
  }
  if (dtype_is_float(want.dtype()) && got.rank() >= 1 && got.dims().back() > 1) {
    int64_t cls = got.dims().back();
    for (int64_t r = 0; r < got.numel() / cls; ++r) {
      const double* pa = a.data() + r * cls;
      const double* pb = b.data() + r * cls;
      int64_t ia = 0, ib = 0;
      for (int64_t k = 1; k < cls; ++k) {
        if (pa[k] > pa[ia]) ia = k;
        if (pb[k] > pb[ib]) ib = k;
      }
      ++c.top1_rows;
      c.top1_agree += ia == ib;
    }
  }
  return c;
}

const Value* find_value(const std::vector<SampleValue>& values, const std::string& name, bool only_one) {
  for (const auto& a : values)
    if (a.name == name) return &a.value;
  std::string key = array_key(name);
  for (const auto& a : values)
    if (a.name == key) return &a.value;
  if (only_one && values.size() == 1) return &values[0].value;
  return nullptr;
}

std::string names_of(const std::vector<SampleValue>& values) {
  std::string s;
  for (const auto& a : values) s += (s.empty() ? "" : ", ") + a.name;
  return s.empty() ? "(none)" : s;
}

/// The declared type of the graph value (of `vals`) that a sample key names; with one
/// value, a sample of one entry is for it whatever the key.
TypeOf type_lookup(const std::vector<ir::ValueInfo>& vals) {
  return [&vals](const std::string& key) -> const ir::TypeInfo* {
    for (const auto& v : vals)
      if (v.name == key || array_key(v.name) == key) return &v.type;
    return nullptr;
  };
}

/// Index of the output `--decode-output` names (the first output when it is empty).
size_t decode_output_index(const std::vector<IoInfo>& outs, const std::string& name) {
  if (name.empty()) return 0;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].name == name) return i;
  std::string names;
  for (const auto& o : outs) names += (names.empty() ? "" : ", ") + o.name;
  fail_arg("--decode-output {}: the model has no output of that name (its outputs: {})", name, names);
}

/// Decodes the boxes of one output in onyx and in the reference and matches them.
void compare_boxes(const std::string& sample, const Tensor& got, const Tensor& want, const BoxSummary& box,
                   SampleResult& sr) {
  auto dg = post::decode_boxes(got, box.options);
  auto dw = post::decode_boxes(want, box.options);
  SampleBoxes& sb = sr.boxes;
  sb.decoded = true;
  for (size_t k = 0; k < dg.size() && k < dw.size(); ++k) {
    post::BoxMatch m = post::match_detections(dg[k], dw[k], box.match_iou);
    ++sb.images;
    sb.match.add(m);
    for (double iou : m.pair_iou) sb.min_iou = std::min(sb.min_iou, iou);
    if (m.matched == m.got && m.matched == m.want) ++sb.images_agree;
    else sb.differences.push_back({sample, static_cast<int64_t>(k), m.got, m.want, m.matched, m.mean_iou()});
  }
  if (dg.size() != dw.size())
    fail_arg("output '{}' holds {} image(s) in onyx and {} in the reference ({} vs {}); boxes were not compared",
             box.output, dg.size(), dw.size(), dims_str(got.dims()), dims_str(want.dims()));
}

int run_parity(const ParityArgs& a) {
  if (!(a.rtol >= 0) || !(a.atol >= 0)) fail_arg("--rtol and --atol must be >= 0");
  bool ctc = a.decode == "ctc", boxes = a.decode == "boxes";
  if (!a.decode.empty() && !ctc && !boxes)
    fail_arg("--decode {}: unknown decoder; 'ctc' (greedy CTC) and 'boxes' (YOLO-style detections) are supported", a.decode);
  if (!ctc && !a.alphabet.empty()) fail_arg("--alphabet needs --decode ctc");
  if (!ctc && !boxes && !a.decode_output.empty()) fail_arg("--decode-output needs --decode ctc or --decode boxes");
  if (!boxes && a.box_options_given)
    fail_arg("--score-threshold, --iou-threshold, --max-detections and --box-format need --decode boxes");
  post::BoxDecodeOptions box_opt;
  if (boxes) {
    if (a.box_format != "cxcywh" && a.box_format != "xyxy")
      fail_arg("--box-format must be cxcywh or xyxy, got '{}'", a.box_format);
    box_opt.format = a.box_format == "xyxy" ? post::BoxFormat::kXyxy : post::BoxFormat::kCxCyWh;
    box_opt.score_threshold = a.score_threshold;
    box_opt.iou_threshold = a.iou_threshold;
    box_opt.max_detections = a.max_detections;
    if (!std::isfinite(a.score_threshold)) fail_arg("--score-threshold must be a finite number, got {}", a.score_threshold);
    if (!(a.iou_threshold >= 0 && a.iou_threshold <= 1))
      fail_arg("--iou-threshold must be in [0, 1], got {}", a.iou_threshold);
    if (a.max_detections < 0) fail_arg("--max-detections must be 0 (no limit) or more, got {}", a.max_detections);
  }
  if (a.ctc_layout != "ntc" && a.ctc_layout != "tnc") fail_arg("--ctc-layout must be ntc or tnc, got '{}'", a.ctc_layout);
  if (!a.report.empty()) {
    std::string ext = fs::path(a.report).extension().string();
    if (ext != ".html" && ext != ".htm" && ext != ".md")
      fail_arg("--report {}: the report is markdown (.md) or HTML (.html); name the file so", a.report);
  }

  ParityResult r;
  r.model = a.model;
  r.inputs_dir = a.inputs;
  r.reference_dir = a.reference;
  r.rtol = a.rtol, r.atol = a.atol;
  r.worst_count = a.worst;
  auto t_start = Clock::now();
  {
    std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    r.date = buf;
  }

  auto inputs = list_dataset(a.inputs, "--inputs");
  auto refs = list_dataset(a.reference, "--reference");
  std::map<std::string, const SampleFile*> ref_by_name;
  for (const auto& s : refs) ref_by_name[s.name] = &s;
  std::vector<std::string> missing;
  for (const auto& s : inputs)
    if (!ref_by_name.count(s.name)) missing.push_back(s.name);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 5) list += ", ...";
    fail_arg("{} of {} samples of --inputs have no reference in '{}' ({}); samples match by file or folder name",
             missing.size(), inputs.size(), a.reference, list);
  }
  if (refs.size() > inputs.size())
    r.notes.push_back(std::to_string(refs.size() - inputs.size()) + " reference sample(s) have no input sample and are not used");
  if (a.limit > 0 && static_cast<int64_t>(inputs.size()) > a.limit) {
    r.notes.push_back("only the first " + std::to_string(a.limit) + " of " + std::to_string(inputs.size()) + " samples are compared (--limit)");
    inputs.resize(static_cast<size_t>(a.limit));
  }
  fs::path ref_meta = fs::path(a.reference) / "reference.json";
  std::string ref_model_sha;
  std::error_code ec;
  if (fs::exists(ref_meta, ec)) {
    try {
      auto j = nlohmann::json::parse(read_text_file(ref_meta.string(), "reference.json"));
      if (j.contains("source") && j["source"].is_string()) r.reference_source = j["source"].get<std::string>();
      if (j.contains("model_sha256") && j["model_sha256"].is_string()) ref_model_sha = j["model_sha256"].get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      r.notes.push_back("reference.json is not valid JSON (" + std::string(e.what()) + "); ignored");
    }
  }

  std::vector<std::string> alphabet;
  if (ctc && !a.alphabet.empty()) {
    alphabet = post::parse_alphabet(read_text_file(a.alphabet, "--alphabet file"));
    if (alphabet.empty()) fail_arg("--alphabet {}: the file holds no symbol", a.alphabet);
  }

  r.model_sha256 = sha256_file_hex(a.model);
  if (!ref_model_sha.empty() && ref_model_sha != r.model_sha256)
    r.notes.push_back("reference.json says the reference outputs come from a model with sha256 " + ref_model_sha +
                      ", not this file (" + r.model_sha256 + ")");
  SessionOptions so;
  so.threads = a.threads;
  apply_session_flags(a.session, so);
  auto session = Session::open(a.model, so);
  const auto& outs_info = session->outputs();
  std::vector<const IoInfo*> required;
  for (const auto& io : session->inputs())
    if (!io.has_default) required.push_back(&io);
  for (const auto& o : outs_info) {
    OutputSummary s;
    s.name = o.name;
    r.outputs.push_back(s);
  }
  size_t ctc_out = 0, box_out = 0;
  if (boxes) {
    box_out = decode_output_index(outs_info, a.decode_output);
    r.boxes.enabled = true;
    r.boxes.output = outs_info[box_out].name;
    r.boxes.options = box_opt;
    const IoInfo& bo = outs_info[box_out];
    if (bo.has_shape && bo.dims.size() != 2 && bo.dims.size() != 3)
      fail_arg("--decode boxes: output '{}' is {}; box decoding needs [N, boxes, 5 + classes] or [boxes, 5 + classes] "
               "(name the output with --decode-output)", bo.name, bo.type);
    if (bo.has_shape && !bo.dims.empty() && bo.dims.back() >= 0 && bo.dims.back() < 6)
      fail_arg("--decode boxes: output '{}' is {}; its last dim must hold 4 box numbers, the objectness and at least "
               "one class score (6 or more)", bo.name, bo.type);
  }
  if (ctc) {
    r.ctc.enabled = true;
    r.ctc.blank = a.blank;
    r.ctc.has_alphabet = !alphabet.empty();
    ctc_out = decode_output_index(outs_info, a.decode_output);
    r.ctc.output = outs_info[ctc_out].name;
    if (a.blank < 0) fail_arg("--blank {}: the blank is a class index, 0 or more", a.blank);
    const IoInfo& co = outs_info[ctc_out];
    if (co.has_shape && !co.dims.empty() && co.dims.back() > 0) {
      int64_t classes = co.dims.back();
      if (a.blank >= classes)
        fail_arg("--blank {} is outside the {} classes of output '{}' ({})", a.blank, classes, co.name, co.type);
      if (!alphabet.empty() && static_cast<int64_t>(alphabet.size()) != classes - 1 &&
          static_cast<int64_t>(alphabet.size()) != classes)
        fail_arg("--alphabet {} has {} symbols but output '{}' ({}) has {} classes: list the {} non-blank symbols, "
                 "or all {} with a placeholder at the blank index {}",
                 a.alphabet, alphabet.size(), co.name, co.type, classes, classes - 1, classes, a.blank);
    }
  }
  auto layout = a.ctc_layout == "tnc" ? post::CtcLayout::kTimeBatchClass : post::CtcLayout::kBatchTimeClass;
  std::set<std::string> noted;
  auto note_once = [&](const std::string& n) {
    if (noted.insert(n).second) r.notes.push_back(n);
  };

  Progress progress(inputs.size(), !a.json);
  for (size_t si = 0; si < inputs.size(); ++si) {
    const SampleFile& in = inputs[si];
    progress.update(si, in.name);
    SampleResult sr;
    sr.name = in.name;
    sr.outputs.resize(outs_info.size());
    try {
      const ir::Graph& graph = *session_model(*session).graph;
      auto in_arrays = load_sample(in, type_lookup(graph.inputs));
      auto ref_arrays = load_sample(*ref_by_name[in.name], type_lookup(graph.outputs));
      std::vector<std::pair<std::string, Value>> feeds;
      std::set<std::string> used;
      for (const IoInfo* io : required) {
        const Value* t = find_value(in_arrays, io->name, required.size() == 1);
        bool optional = false;
        for (const auto& gi : graph.inputs)
          optional |= gi.name == io->name && gi.type.kind == ir::TypeInfo::Kind::kOptional;
        if (!t && optional) continue;  // an optional input the sample does not give is left empty
        if (!t)
          fail_arg("sample '{}' has no array for input '{}' (it has: {}); name the arrays by input name",
                   in.name, io->name, names_of(in_arrays));
        Value v = *t;
        if (required.size() == 1 && in_arrays.size() == 1)  // a lone array of another name: its raw bits too
          for (const auto& gi : graph.inputs)
            if (gi.name == io->name) v = format::value_as_declared(v, gi.type, "input '" + io->name + "'");
        feeds.emplace_back(io->name, v);
        for (const auto& x : in_arrays)
          if (&x.value == t) used.insert(x.name);
      }
      for (const auto& x : in_arrays)
        if (!used.count(x.name)) {
          bool optional_input = false;
          for (const auto& io : session->inputs())
            if (io.has_default && (io.name == x.name || array_key(io.name) == x.name)) {
              feeds.emplace_back(io.name, x.value);
              optional_input = true;
            }
          if (!optional_input) note_once("input array '" + x.name + "' matches no model input and is not used");
        }
      auto t0 = Clock::now();
      std::vector<Value> got = session->run(feeds);
      sr.run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      bool any = false;
      for (size_t oi = 0; oi < outs_info.size(); ++oi) {
        const Value* want_value = find_value(ref_arrays, outs_info[oi].name, outs_info.size() == 1);
        Value want_declared;
        if (want_value && outs_info.size() == 1 && ref_arrays.size() == 1)  // a lone array of another name
          want_declared = format::value_as_declared(*want_value, session_model(*session).graph->outputs[oi].type,
                                                    "reference for output '" + outs_info[oi].name + "'");
        else if (want_value)
          want_declared = *want_value;
        const Tensor* want = want_value && want_declared.is_tensor() ? &want_declared.tensor() : nullptr;
        OutputCompare& c = sr.outputs[oi];
        if (want_value && !want) {
          c.skipped = true;
          c.problem = "reference is not a tensor";
          note_once("the reference for output '" + outs_info[oi].name + "' is a sequence or an empty optional; it is not compared");
          continue;
        }
        if (!want) {
          c.skipped = true;
          c.problem = "no reference array";
          note_once("the reference has no array for output '" + outs_info[oi].name + "' in sample '" + in.name +
                    "'; that output is not compared (reference arrays: " + names_of(ref_arrays) + ")");
          continue;
        }
        if (!got[oi].is_tensor()) {
          c.skipped = true;
          c.problem = "output is not a tensor";
          note_once("output '" + outs_info[oi].name + "' is a sequence or optional; it is not compared");
          continue;
        }
        OutputSummary& sum = r.outputs[oi];
        c = compare(got[oi].tensor(), *want, a.rtol, a.atol, sum);
        if (c.compared && got[oi].tensor().dtype() != want->dtype())
          note_once("output '" + outs_info[oi].name + "' is " + std::string(dtype_name(got[oi].tensor().dtype())) +
                    " in onyx and " + std::string(dtype_name(want->dtype())) + " in the reference; values are compared");
        any = true;
        if (boxes && oi == box_out) compare_boxes(in.name, got[oi].tensor(), *want, r.boxes, sr);
        if (ctc && oi == ctc_out && c.compared) {
          auto seq_got = post::ctc_greedy_decode(got[oi].tensor(), a.blank, layout);
          auto seq_want = post::ctc_greedy_decode(*want, a.blank, layout);
          int64_t classes = want->dims().back();
          for (size_t k = 0; k < seq_got.size() && k < seq_want.size(); ++k) {
            std::vector<std::string> sg, sw;
            std::string tg, tw;
            if (!alphabet.empty()) {
              tg = post::ctc_labels_to_text(seq_got[k], alphabet, a.blank, classes);
              tw = post::ctc_labels_to_text(seq_want[k], alphabet, a.blank, classes);
              sg = post::utf8_chars(tg), sw = post::utf8_chars(tw);
            } else {
              for (int64_t l : seq_got[k]) sg.push_back(std::to_string(l)), tg += (tg.empty() ? "" : " ") + sg.back();
              for (int64_t l : seq_want[k]) sw.push_back(std::to_string(l)), tw += (tw.empty() ? "" : " ") + sw.back();
            }
            size_t dist = post::edit_distance(sg, sw);
            ++r.ctc.sequences;
            r.ctc.ref_chars += sw.size();
            r.ctc.edits += dist;
            if (sg == sw) ++r.ctc.exact;
            else if (r.ctc.mismatches.size() < 50)
              r.ctc.mismatches.push_back({in.name, static_cast<int64_t>(k), tg, tw, dist});
          }
        }
      }
      if (!any)
        fail_arg("sample '{}': no output could be compared (reference arrays: {})", in.name, names_of(ref_arrays));
    } catch (const Error& e) {
      sr.error = e.what();
    } catch (const std::exception& e) {
      sr.error = e.what();
    }
    sr.pass = sr.error.empty();
    for (size_t oi = 0; oi < sr.outputs.size(); ++oi) {
      const OutputCompare& c = sr.outputs[oi];
      if (!sr.error.empty()) break;
      if (!c.compared && !c.skipped) {
        sr.pass = false;
        sr.ratio = INFINITY;
        sr.worst_output = outs_info[oi].name;
      }
      if (!c.compared) continue;
      if (c.outside > 0) sr.pass = false;
      if (c.ratio > sr.ratio || sr.worst_output.empty()) sr.ratio = std::max(sr.ratio, c.ratio), sr.worst_output = outs_info[oi].name;
    }
    if (!sr.error.empty()) sr.ratio = INFINITY;
    for (size_t oi = 0; oi < sr.outputs.size() && sr.error.empty(); ++oi) {
      const OutputCompare& c = sr.outputs[oi];
      OutputSummary& s = r.outputs[oi];
      if (c.skipped) continue;
      ++s.samples;
      if (c.within()) ++s.within;
      if (!c.compared) {
        if (s.worst_ratio < INFINITY) s.worst_ratio = INFINITY, s.worst_sample = sr.name;
        continue;
      }
      s.elements += c.elements;
      s.outside += c.outside;
      s.sum_abs += c.mean_abs * static_cast<double>(c.elements);
      s.max_abs = std::max(s.max_abs, c.max_abs);
      s.max_rel = std::max(s.max_rel, c.max_rel);
      s.cos_min = std::min(s.cos_min, c.cosine);
      s.cos_sum += c.cosine;
      s.top1_rows += c.top1_rows;
      s.top1_agree += c.top1_agree;
      if (c.top1_rows) s.top1_applicable = true;
      if (c.ratio > s.worst_ratio) s.worst_ratio = c.ratio, s.worst_sample = sr.name;
    }
    if (sr.boxes.decoded && sr.error.empty()) {
      BoxSummary& b = r.boxes;
      b.images += sr.boxes.images;
      b.images_agree += sr.boxes.images_agree;
      b.total.add(sr.boxes.match);
      b.min_iou = std::min(b.min_iou, sr.boxes.min_iou);
      for (const auto& d : sr.boxes.differences)
        if (b.differences.size() < 50) b.differences.push_back(d);
    }
    r.samples.push_back(std::move(sr));
  }
  progress.update(inputs.size(), "");
  progress.finish();
  r.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();

  if (!a.report.empty()) write_parity_report(r, a.report);
  if (a.json) {
    std::cout << parity_json(r).dump(2) << "\n";
  } else {
    std::cout << parity_text(r);
    if (!a.report.empty()) std::cout << "report: " << a.report << "\n";
  }
  return r.pass() ? 0 : 1;
}

}  // namespace

Action add_parity(CLI::App& app) {
  auto args = std::make_shared<ParityArgs>();
  auto* sub = app.add_subcommand(
      "parity",
      "Run every sample of a dataset through onyx and compare the outputs with reference\n"
      "outputs (onnxruntime, PyTorch) of the same inputs.\n\n"
      "A dataset is a folder of samples: NAME.npz files (np.savez or np.savez_compressed) or\n"
      "NAME/ folders of values in the forms `onyx run` writes: K.npy, K.pb (TensorProto,\n"
      "SequenceProto or OptionalProto), K/ (a sequence of 0.npy, 1.npy, ...) and K.none (an\n"
      "empty optional); in a .npz, arrays K/0, K/1, ... make sequence K. Strings are numpy\n"
      "unicode arrays; bfloat16, float8, 4-bit and 2-bit values may be given as their raw bits\n"
      "(uint16, uint8, int8 values; see onyx run --help). Input values are named after the\n"
      "model's inputs, reference values after its outputs (a sample with one value fits a model\n"
      "with one input or output whatever its name); outputs that are sequences or empty\n"
      "optionals are not compared. Samples match by NAME between --inputs and\n"
      "--reference. A reference.json file in the reference folder may name its source\n"
      "({\"source\": \"onnxruntime-node 1.30.0\"}); tests/models/ort_reference.js and\n"
      "tools/python/onyx_parity_ref.py write such folders.\n\n"
      "An element is within tolerance when |onyx - ref| <= atol + rtol * |ref| (numpy's\n"
      "allclose; NaN matches NaN). Per output it reports max and mean absolute error, max\n"
      "relative error (where |ref| >= atol), the share of samples within tolerance, the\n"
      "lowest cosine similarity and, for scores (last dim > 1), top-1 agreement.\n"
      "--decode ctc also decodes an output greedily (arg-max, collapse repeats, drop the\n"
      "blank) in onyx and in the reference and reports the exact-match rate and the\n"
      "character error rate.\n"
      "--decode boxes decodes a YOLO-style output [N, boxes, 5 + classes] (box, objectness,\n"
      "class scores) in onyx and in the reference: confidence = objectness * class score,\n"
      "the best class per box, boxes below --score-threshold dropped, per-class NMS at\n"
      "--iou-threshold, at most --max-detections per image. Onyx's boxes are matched with\n"
      "the reference's (the ground truth) greedily by score, same class, IoU >= 0.5; it\n"
      "reports recall, precision and the mean IoU of the matched pairs, per sample and\n"
      "overall, and the images whose boxes differ.\n\n"
      "Exit status: 0 when every sample is within tolerance, 1 when any is not (or on an\n"
      "error). Progress with an ETA goes to stderr when it is a terminal.");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_option("--inputs", args->inputs, "dataset folder of input samples")->required();
  sub->add_option("--reference", args->reference, "dataset folder of reference outputs, same sample names")->required();
  sub->add_option("--rtol", args->rtol, "relative tolerance (default 1e-3)")->transform(number_in(0.0, DBL_MAX));
  sub->add_option("--atol", args->atol, "absolute tolerance (default 1e-4)")->transform(number_in(0.0, DBL_MAX));
  sub->add_option("--decode", args->decode,
                  "decode an output and compare the results: 'ctc' (greedy CTC, text) or 'boxes' (YOLO-style "
                  "detections after NMS, matched by IoU)");
  sub->add_option("--alphabet", args->alphabet,
                  "--decode ctc: FILE with the symbols, one per line, or one line with one symbol per "
                  "character. It lists the non-blank classes in order, or every class with a placeholder "
                  "at the blank. Without it labels are compared as numbers");
  sub->add_option("--blank", args->blank, "--decode ctc: index of the blank class (default 0)")
      ->transform(integer_in(INT64_MIN, INT64_MAX));
  sub->add_option("--decode-output", args->decode_output,
                  "--decode ctc|boxes: the output holding the scores or the box candidates (default the first)");
  sub->add_option("--ctc-layout", args->ctc_layout,
                  "--decode ctc: axes of rank-3 scores, ntc ([batch, time, class], default) or tnc "
                  "([time, batch, class]); rank 2 is [time, class]");
  auto* box_opts = sub->add_option_group("box decoding");
  box_opts->add_option("--score-threshold", args->score_threshold,
                       "--decode boxes: keep boxes whose objectness * class score is at least this (default 0.25)")
      ->transform(number_in(-DBL_MAX, DBL_MAX));
  box_opts->add_option("--iou-threshold", args->iou_threshold,
                       "--decode boxes: NMS drops a box whose IoU with a higher-scored box of its class is above "
                       "this (default 0.45)")
      ->transform(number_in(-DBL_MAX, DBL_MAX));
  box_opts->add_option("--max-detections", args->max_detections,
                       "--decode boxes: boxes kept per image after NMS, highest scores first; 0: no limit (default 300)")
      ->transform(integer_in(INT64_MIN, INT64_MAX));
  box_opts->add_option("--box-format", args->box_format,
                       "--decode boxes: the 4 box numbers of a row: cxcywh (centre, width, height; default) or xyxy "
                       "(corners)");
  sub->add_option("--report", args->report,
                  "write a report to FILE.html (self-contained) or FILE.md (histograms as .svg next to it): "
                  "tables, the worst samples and a histogram of the errors");
  sub->add_flag("--json", args->json, "print the results as JSON (what `onyx card --parity` reads); no progress");
  sub->add_option("--threads", args->threads, "worker threads (default 1)")->transform(integer_in(1, 256));
  add_session_flags(sub, args->session);
  sub->add_option("--worst", args->worst, "how many worst samples to name (default 5)")->transform(integer_in(1, 1000));
  sub->add_option("--limit", args->limit, "compare only the first N samples (natural order of names)")->transform(integer_in(1, INT64_MAX));
  return [args, box_opts] {
    args->box_options_given = !box_opts->get_options([](const CLI::Option* o) { return o->count() > 0; }).empty();
    return run_parity(*args);
  };
}

}  // namespace onyx::cli
