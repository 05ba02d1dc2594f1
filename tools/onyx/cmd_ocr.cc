// onyx ocr MODEL IMAGE...: read text lines from PNG crops with a CTC model (CRNN style):
// decode, preprocess (image/preprocess.h), run one crop at a time, CTC-decode (post/ctc.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "base/half.h"
#include "format/npy.h"
#include "image/png.h"
#include "onyx/preprocess.h"
#include "onyx/session.h"
#include "onyx/ctc.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/session_flags.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct OcrArgs {
  SessionFlags session;
  std::string model;
  std::vector<std::string> images;
  std::string meta;
  std::string alphabet_file, alphabet_string;
  int64_t blank = 0;
  int64_t height = 32, min_width = 16;
  double mean = 0.5, std = 0.5;
  std::string scores = "logits";
  std::string decoder = "greedy";
  int64_t beam_width = 10;
  int threads = 1;
  bool json = false;
  std::string save_inputs, save_logits;
  // Which of the options above were given on the command line (they override the meta file).
  CLI::Option *o_meta = nullptr, *o_blank = nullptr, *o_height = nullptr, *o_min_width = nullptr,
              *o_mean = nullptr, *o_std = nullptr, *o_scores = nullptr;
};

/// Everything the run needs, from the meta file and the flags.
struct OcrConfig {
  std::string meta_path;  // "" when none was used
  std::string input, output;
  image::TextLineParams params;
  std::vector<std::string> alphabet;
  std::string alphabet_source;
  int64_t blank = 0;
  post::CtcScores scores = post::CtcScores::kLogits;
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

[[noreturn]] void bad_meta(const std::string& path, const std::string& key, const std::string& want) {
  fail_arg("meta file '{}': '{}' must be {}", path, key, want);
}

/// A single number from a number or a one-element array (mean/std of a gray model).
double one_number(const json& v, const std::string& path, const char* key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_array() && v.size() == 1 && v[0].is_number()) return v[0].get<double>();
  if (v.is_array() && v.size() > 1)
    fail_arg("meta file '{}': preprocessing.{} has {} values; onyx ocr feeds one gray channel, so it needs one", path,
             key, v.size());
  bad_meta(path, std::string("preprocessing.") + key, "a number or an array of one number");
}

/// "1/255", "0.5" or a number.
double parse_scale(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) bad_meta(path, "preprocessing.scale", "a number or a string such as \"1/255\"");
  std::string s = v.get<std::string>();
  try {
    size_t slash = s.find('/');
    size_t used = 0;
    if (slash == std::string::npos) {
      double x = std::stod(s, &used);
      if (used == s.size()) return x;
    } else {
      double num = std::stod(s.substr(0, slash), &used);
      size_t used2 = 0;
      double den = std::stod(s.substr(slash + 1), &used2);
      if (used == slash && used2 == s.size() - slash - 1 && den != 0) return num / den;
    }
  } catch (const std::exception&) {
  }
  bad_meta(path, "preprocessing.scale", "a number or a fraction such as \"1/255\", not \"" + s + "\"");
}

void apply_meta(const std::string& path, OcrConfig& c) {
  json meta;
  try {
    meta = json::parse(read_text_file(path, "meta file"));
  } catch (const json::parse_error& e) {
    fail_arg("meta file '{}' is not valid JSON: {}", path, e.what());
  }
  if (!meta.is_object()) bad_meta(path, "the file", "a JSON object");
  // The kind of model first: a meta file of a classifier fails on that, not on its resize.
  if (const json* post = member(meta, "postprocessing")) {
    if (!post->is_object()) bad_meta(path, "postprocessing", "an object");
    const json* type = member(*post, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "ctc")
      fail_arg("meta file '{}': postprocessing.type is {}; onyx ocr reads CTC models (\"ctc\")", path,
               type ? type->dump() : std::string("missing"));
    if (const json* v = member(*post, "output")) {
      if (!v->is_string()) bad_meta(path, "postprocessing.output", "a string naming a model output");
      c.output = v->get<std::string>();
    }
    if (const json* v = member(*post, "alphabet_file")) {
      if (!v->is_string()) bad_meta(path, "postprocessing.alphabet_file", "a file path (relative to the meta file)");
      fs::path p = fs::path(path).parent_path() / v->get<std::string>();
      c.alphabet = post::parse_alphabet(read_text_file(p.string(), "alphabet file"));
      c.alphabet_source = p.string();
    } else if (const json* a = member(*post, "alphabet")) {
      if (a->is_string()) {
        c.alphabet = post::utf8_chars(a->get<std::string>());
      } else if (a->is_array() && std::all_of(a->begin(), a->end(), [](const json& x) { return x.is_string(); })) {
        c.alphabet = a->get<std::vector<std::string>>();
      } else {
        bad_meta(path, "postprocessing.alphabet", "a string (one symbol per character) or an array of strings");
      }
      c.alphabet_source = path;
    }
    if (const json* v = member(*post, "blank")) {
      if (!v->is_number_integer()) bad_meta(path, "postprocessing.blank", "the integer index of the blank class");
      c.blank = v->get<int64_t>();
    }
    if (const json* v = member(*post, "scores")) {
      std::string s = v->is_string() ? v->get<std::string>() : "";
      if (s == "logits" || s == "log_probs") c.scores = post::CtcScores::kLogits;
      else if (s == "probabilities") c.scores = post::CtcScores::kProbabilities;
      else bad_meta(path, "postprocessing.scores", "\"logits\", \"log_probs\" or \"probabilities\"");
    }
  }
  if (const json* pre = member(meta, "preprocessing")) {
    if (!pre->is_object()) bad_meta(path, "preprocessing", "an object");
    if (const json* v = member(*pre, "input")) {
      if (!v->is_string()) bad_meta(path, "preprocessing.input", "a string naming a model input");
      c.input = v->get<std::string>();
    }
    if (const json* r = member(*pre, "resize")) {
      if (!r->is_object())
        fail_arg("meta file '{}': preprocessing.resize is a description ({}); onyx ocr needs an object such as "
                 "{{\"policy\": \"height\", \"height\": 32, \"min_width\": 16}}", path, r->dump());
      const json* policy = member(*r, "policy");
      if (!policy || !policy->is_string() || policy->get<std::string>() != "height")
        fail_arg("meta file '{}': preprocessing.resize.policy is {}; onyx ocr implements \"height\" (fixed height, "
                 "width keeping the aspect ratio)", path, policy ? policy->dump() : std::string("missing"));
      if (const json* h = member(*r, "height")) {
        if (!h->is_number_integer()) bad_meta(path, "preprocessing.resize.height", "an integer");
        c.params.height = h->get<int64_t>();
      }
      if (const json* w = member(*r, "min_width")) {
        if (!w->is_number_integer()) bad_meta(path, "preprocessing.resize.min_width", "an integer");
        c.params.min_width = w->get<int64_t>();
      }
    }
    if (const json* v = member(*pre, "scale")) c.params.scale = parse_scale(*v, path);
    if (const json* v = member(*pre, "mean")) c.params.mean = one_number(*v, path, "mean");
    if (const json* v = member(*pre, "std")) c.params.std = one_number(*v, path, "std");
    if (const json* v = member(*pre, "layout"))
      if (!v->is_string() || v->get<std::string>() != "NCHW")
        fail_arg("meta file '{}': preprocessing.layout is {}; onyx ocr feeds NCHW [1, 1, H, W]", path, v->dump());
    if (const json* v = member(*pre, "dtype"))
      if (!v->is_string() || v->get<std::string>() != "float32")
        fail_arg("meta file '{}': preprocessing.dtype is {}; onyx ocr feeds float32", path, v->dump());
  }
}

OcrConfig resolve_config(const OcrArgs& a) {
  OcrConfig c;
  if (a.o_meta->count() > 0) {
    c.meta_path = a.meta;
  } else {
    fs::path p = fs::path(a.model).parent_path() / "meta.json";
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) c.meta_path = p.string();
  }
  if (!c.meta_path.empty()) apply_meta(c.meta_path, c);
  if (a.o_height->count() > 0) c.params.height = a.height;
  if (a.o_min_width->count() > 0) c.params.min_width = a.min_width;
  if (a.o_mean->count() > 0) c.params.mean = a.mean;
  if (a.o_std->count() > 0) c.params.std = a.std;
  if (a.o_blank->count() > 0) c.blank = a.blank;
  if (a.o_scores->count() > 0)
    c.scores = a.scores == "probabilities" ? post::CtcScores::kProbabilities : post::CtcScores::kLogits;
  if (!a.alphabet_file.empty()) {
    c.alphabet = post::parse_alphabet(read_text_file(a.alphabet_file, "alphabet file"));
    c.alphabet_source = a.alphabet_file;
  } else if (!a.alphabet_string.empty()) {
    c.alphabet = post::utf8_chars(a.alphabet_string);
    c.alphabet_source = "--alphabet-string";
  }
  if (c.alphabet.empty())
    fail_arg("no alphabet for '{}': give --alphabet FILE or --alphabet-string STR, or a meta file (--meta, or "
             "meta.json next to the model) with postprocessing.alphabet{}", a.model,
             c.meta_path.empty() ? "" : " ('" + c.meta_path + "' has none)");
  if (c.params.height < 1 || c.params.height > image::kMaxOutputHeight)
    fail_arg("height {} must be in [1, {}]", c.params.height, image::kMaxOutputHeight);
  if (c.params.min_width < 1 || c.params.min_width > image::kMaxOutputWidth)
    fail_arg("min width {} must be in [1, {}]", c.params.min_width, image::kMaxOutputWidth);
  if (c.params.std == 0 || !std::isfinite(c.params.std) || !std::isfinite(c.params.mean) ||
      !std::isfinite(c.params.scale))
    fail_arg("mean {}, std {} and scale {} must be finite, std non-zero", c.params.mean, c.params.std, c.params.scale);
  return c;
}

std::string io_names(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& io : ios) s += (s.empty() ? "" : ", ") + io.name;
  return s;
}

/// The model's image input: checked to be float32 rank 4 [N, 1, H, W] with N and H
/// fitting one crop of the configured height. Returns its fixed width, or -1.
int64_t check_input(const Session& s, OcrConfig& c, const std::string& model) {
  const IoInfo* in = nullptr;
  if (c.input.empty()) {
    if (s.inputs().size() != 1)
      fail_arg("'{}' has {} inputs ({}); name the image input with preprocessing.input in a meta file", model,
               s.inputs().size(), io_names(s.inputs()));
    in = &s.inputs()[0];
    c.input = in->name;
  } else {
    for (const auto& io : s.inputs())
      if (io.name == c.input) in = &io;
    if (!in) fail_arg("'{}' has no input '{}' (its inputs: {})", model, c.input, io_names(s.inputs()));
  }
  for (const auto& io : s.inputs())
    if (io.name != c.input && !io.has_default)
      fail_arg("'{}' needs input '{}' besides the image '{}'; onyx ocr feeds the image only", model, io.name, c.input);
  if (!in->is_tensor || in->dtype != DType::kFloat)
    fail_arg("input '{}' of '{}' is {}; onyx ocr feeds float32 images [N, 1, H, W]", in->name, model, in->type);
  if (in->has_shape && in->dims.size() != 4)
    fail_arg("input '{}' of '{}' is {}: rank {}; onyx ocr feeds gray images [N, 1, H, W] (rank 4, one channel)",
             in->name, model, in->type, in->dims.size());
  if (!in->has_shape) return -1;
  if (in->dims[1] >= 0 && in->dims[1] != 1)
    fail_arg("input '{}' of '{}' is {}: {} channels; onyx ocr feeds gray images [N, 1, H, W] (one channel{})", in->name,
             model, in->type, in->dims[1], in->dims[3] == 1 || in->dims[3] == 3 ? "; is the model NHWC?" : "");
  if (in->dims[0] >= 0 && in->dims[0] != 1)
    fail_arg("input '{}' of '{}' is {}: a fixed batch of {}; onyx ocr runs one crop at a time (N = 1)", in->name,
             model, in->type, in->dims[0]);
  if (in->dims[2] >= 0 && in->dims[2] != c.params.height)
    fail_arg("input '{}' of '{}' is {}: height {}, but the preprocessing makes crops {} pixels high (set --height "
             "or preprocessing.resize.height)", in->name, model, in->type, in->dims[2], c.params.height);
  return in->dims[3];
}

/// Index of the CTC output; checks its declared class count against the alphabet.
size_t check_output(const Session& s, OcrConfig& c, const std::string& model) {
  size_t idx = s.outputs().size();
  for (size_t i = 0; i < s.outputs().size(); ++i)
    if (s.outputs()[i].name == (c.output.empty() ? std::string("logits") : c.output)) idx = i;
  if (idx == s.outputs().size()) {
    if (!c.output.empty())
      fail_arg("'{}' has no output '{}' (its outputs: {})", model, c.output, io_names(s.outputs()));
    idx = 0;
  }
  const IoInfo& out = s.outputs()[idx];
  c.output = out.name;
  if (out.has_shape && out.dims.size() != 2 && out.dims.size() != 3)
    fail_arg("output '{}' of '{}' is {}; CTC scores are [N, T, C] (or [T, N, C], [T, C])", out.name, model, out.type);
  if (out.has_shape && !out.dims.empty() && out.dims.back() >= 0) {
    int64_t classes = out.dims.back();
    if (c.blank < 0 || c.blank >= classes)
      fail_arg("blank {} is outside the {} classes of output '{}' {}", c.blank, classes, out.name, out.type);
    auto n = static_cast<int64_t>(c.alphabet.size());
    if (n != classes - 1 && n != classes)
      fail_arg("the alphabet ({}) has {} symbols but output '{}' {} has {} classes: it must list the {} non-blank "
               "classes (or all {} with a placeholder at the blank {})", c.alphabet_source, n, out.name, out.type,
               classes, classes - 1, classes, c.blank);
  }
  return idx;
}

/// Scores of one crop as [T, C] floats. Accepts [1, T, C], [T, 1, C] and [T, C].
std::vector<float> crop_scores(const Tensor& t, const std::string& name, int64_t& frames, int64_t& classes) {
  const Dims& d = t.dims();
  bool ok = (t.rank() == 3 && (d[0] == 1 || d[1] == 1)) || t.rank() == 2;
  if (!ok)
    fail_arg("output '{}' is {}; onyx ocr runs one crop at a time and reads [1, T, C] (or [T, 1, C], [T, C])", name,
             dims_str(d));
  classes = d.back();
  frames = t.rank() == 2 ? d[0] : d[0] == 1 ? d[1] : d[0];
  std::vector<float> f(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kFloat: std::copy_n(t.data<float>(), f.size(), f.begin()); break;
    case DType::kDouble:
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(t.data<double>()[i]);
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(t.data<Float16>()[i]);
      break;
    default: fail_arg("output '{}' is {}{}; CTC scores must be float", name, dtype_name(t.dtype()), dims_str(d));
  }
  return f;  // [1, T, C] and [T, 1, C] are both [T, C] in memory
}

/// Per emitted label of greedy decoding: the highest probability over the frames of its run.
std::vector<double> greedy_confidence(const float* scores, const std::vector<double>& lp, int64_t frames,
                                      int64_t classes, int64_t blank) {
  std::vector<double> conf;
  int64_t prev = -1;
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = scores + t * classes;
    int64_t best = -1;  // the same rule as post::ctc_greedy_decode
    for (int64_t c = 0; c < classes; ++c) {
      if (std::isnan(row[c])) continue;
      if (best < 0 || row[c] > row[best]) best = c;
    }
    if (best < 0) best = blank;
    double p = std::exp(lp[static_cast<size_t>(t * classes + best)]);
    if (best != blank && best != prev) conf.push_back(p);
    else if (best != blank && !conf.empty()) conf.back() = std::max(conf.back(), p);
    prev = best;
  }
  return conf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt_ms(double ms) { return fmt::format("{:.3f} ms", ms); }

int run_ocr(const OcrArgs& a) {
  OcrConfig c = resolve_config(a);
  if (a.decoder != "greedy" && a.decoder != "beam")
    fail_arg("--decoder {}: use greedy or beam", a.decoder);
  // Output files are named after the image's stem: two images must not share one.
  if (!a.save_inputs.empty() || !a.save_logits.empty()) {
    std::map<std::string, std::string> stems;
    for (const auto& img : a.images) {
      std::string stem = fs::path(img).stem().string();
      auto [it, fresh] = stems.emplace(stem, img);
      if (!fresh && it->second != img)
        fail_arg("images '{}' and '{}' would both be saved as {}.npy; rename one", it->second, img, stem);
    }
    for (const std::string* dir : {&a.save_inputs, &a.save_logits}) {
      if (dir->empty()) continue;
      std::error_code ec;
      fs::create_directories(*dir, ec);
      if (ec) fail(ErrorCode::kIo, "cannot create folder '{}': {}", *dir, ec.message());
    }
  }

  SessionOptions so;
  so.threads = a.threads;
  apply_session_flags(a.session, so);
  auto t0 = Clock::now();
  auto session = Session::open(a.model, so);
  const double load_ms = ms_since(t0);
  const int64_t fixed_width = check_input(*session, c, a.model);
  const size_t out_idx = check_output(*session, c, a.model);

  json images = json::array();
  std::vector<double> run_ms;
  int failed = 0;
  bool alphabet_checked = false;
  for (const auto& path : a.images) {
    json r;
    r["file"] = path;
    try {
      auto t1 = Clock::now();
      image::RgbaImage rgba = image::read_png_file(path);
      const double png_ms = ms_since(t1);
      auto t2 = Clock::now();
      Tensor x = image::preprocess_rgba(rgba, c.params);
      const int64_t width = x.dim(3);
      if (fixed_width >= 0 && width != fixed_width) {
        if (width > fixed_width)
          fail_arg("image '{}' becomes {} pixels wide at height {}, but the model takes exactly {}", path, width,
                   c.params.height, fixed_width);
        // A model of fixed width: pad on the right with white, the background of a text line.
        Tensor wide(DType::kFloat, {1, 1, c.params.height, fixed_width});
        std::fill(wide.data<float>(), wide.data<float>() + wide.numel(), image::white_value(c.params));
        for (int64_t y = 0; y < c.params.height; ++y)
          std::copy_n(x.data<float>() + y * width, width, wide.data<float>() + y * fixed_width);
        x = wide;
      }
      const double pre_ms = ms_since(t2);
      if (!a.save_inputs.empty())
        format::write_npy_file((fs::path(a.save_inputs) / (fs::path(path).stem().string() + ".npy")).string(), x);
      auto t3 = Clock::now();
      std::vector<Value> outs = session->run({{c.input, Value(x)}});
      const double model_ms = ms_since(t3);
      run_ms.push_back(model_ms);
      if (!outs[out_idx].is_tensor()) fail_arg("output '{}' is not a tensor", c.output);
      const Tensor& y = outs[out_idx].tensor();
      if (!a.save_logits.empty())
        format::write_npy_file((fs::path(a.save_logits) / (fs::path(path).stem().string() + ".npy")).string(), y);
      auto t4 = Clock::now();
      int64_t frames = 0, classes = 0;
      std::vector<float> s = crop_scores(y, c.output, frames, classes);
      if (!alphabet_checked) {
        auto n = static_cast<int64_t>(c.alphabet.size());
        if (c.blank < 0 || c.blank >= classes || (n != classes - 1 && n != classes)) {
          // Not a property of this image: stop here.
          print_error(fmt::format("output '{}' has {} classes but the alphabet ({}) has {} symbols and the blank is "
                                  "{}: the alphabet must list the {} non-blank classes", c.output, classes,
                                  c.alphabet_source, n, c.blank, classes - 1));
          return 1;
        }
        alphabet_checked = true;
      }
      std::vector<double> lp = post::ctc_log_probs(s.data(), frames, classes, c.blank, c.scores);
      std::vector<int64_t> labels;
      if (a.decoder == "greedy") {
        labels = post::ctc_greedy_decode(s.data(), frames, classes, c.blank);
        r["confidence"] = greedy_confidence(s.data(), lp, frames, classes, c.blank);
      } else {
        post::CtcBeamResult b = post::ctc_beam_search(lp.data(), frames, classes, c.blank, a.beam_width);
        labels = b.labels;
        r["log_prob"] = b.log_prob;
      }
      std::string text = post::ctc_labels_to_text(labels, c.alphabet, c.blank, classes);
      const double dec_ms = ms_since(t4);
      r["text"] = text;
      r["image_size"] = {rgba.width, rgba.height};
      r["width"] = width;
      r["frames"] = frames;
      r["ms"] = {{"png", png_ms}, {"preprocess", pre_ms}, {"run", model_ms}, {"decode", dec_ms}};
      if (!a.json) std::cout << path << "\t" << text << "\n" << std::flush;
    } catch (const Error& e) {
      ++failed;
      r["error"] = e.what();
      if (!a.json) print_error(e.what());
    }
    images.push_back(r);
  }

  json summary;
  summary["images"] = a.images.size();
  summary["failed"] = failed;
  summary["cold_load_ms"] = load_ms;
  summary["first_run_ms"] = run_ms.empty() ? json(nullptr) : json(run_ms[0]);
  std::vector<double> warm(run_ms.size() > 1 ? run_ms.begin() + 1 : run_ms.end(), run_ms.end());
  double warm_mean = 0;
  for (double v : warm) warm_mean += v / static_cast<double>(warm.size());
  summary["warm_ms"] = warm.empty() ? json(nullptr)
                                    : json{{"mean", warm_mean}, {"median", median(warm)}, {"crops", warm.size()}};
  summary["threads"] = a.threads;
  summary["provider"] = "cpu";
  if (a.json) {
    json j;
    j["model"] = a.model;
    j["meta"] = c.meta_path.empty() ? json(nullptr) : json(c.meta_path);
    j["input"] = c.input;
    j["output"] = c.output;
    j["decoder"] = a.decoder;
    if (a.decoder == "beam") j["beam_width"] = a.beam_width;
    j["preprocessing"] = {{"height", c.params.height}, {"min_width", c.params.min_width}, {"scale", c.params.scale},
                          {"mean", c.params.mean}, {"std", c.params.std}};
    j["images"] = images;
    j["summary"] = summary;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cerr << "onyx ocr: " << a.images.size() << " image" << (a.images.size() == 1 ? "" : "s");
    if (failed) std::cerr << " (" << failed << " failed)";
    std::cerr << ", cold load " << fmt_ms(load_ms);
    if (!run_ms.empty()) std::cerr << ", first crop " << fmt_ms(run_ms[0]);
    if (!warm.empty())
      std::cerr << ", warm " << fmt_ms(warm_mean) << " per crop (median " << fmt_ms(median(warm)) << ", "
                << warm.size() << " crop" << (warm.size() == 1 ? "" : "s") << ")";
    std::cerr << ", " << a.threads << " thread" << (a.threads == 1 ? "" : "s") << ", provider cpu, " << a.decoder
              << " decoding\n";
  }
  return failed ? 1 : 0;
}

}  // namespace

Action add_ocr(CLI::App& app) {
  auto a = std::make_shared<OcrArgs>();
  auto* sub = app.add_subcommand(
      "ocr",
      "Read text lines from PNG crops with a CTC model (CRNN style, input [N, 1, H, W] float32,\n"
      "output [N, T, C] scores) and print 'FILE<TAB>TEXT' per image. Crops run one at a time\n"
      "(N = 1, W follows the image).\n\n"
      "Preprocessing (models/crnn-digits/preprocess.py is the normative definition):\n"
      "  1. decode the PNG to 8-bit RGBA (16-bit samples keep their high byte; palette, gray\n"
      "     and gray+alpha expanded; tRNS applied; no gamma correction)\n"
      "  2. gray = (299 R + 587 G + 114 B + 500) div 1000, composited over white:\n"
      "     (gray A + 255 (255 - A) + 127) div 255\n"
      "  3. resize to height H keeping the aspect ratio: W = max(min width, round(w H / h),\n"
      "     halves up); separable triangle filter, half-pixel centres, widened when shrinking\n"
      "     (antialiasing), taps outside the image dropped and renormalised; vertical pass\n"
      "     then horizontal, in float64\n"
      "  4. x * scale, then (x - mean) / std, float32 [1, 1, H, W]\n"
      "H, min width, scale, mean and std come from the model's meta file (--meta, default\n"
      "meta.json next to the model): preprocessing {resize: {policy: \"height\", height,\n"
      "min_width}, scale: \"1/255\", mean: [m], std: [s]}; flags override it. Defaults: 32, 16,\n"
      "1/255, 0.5, 0.5.\n\n"
      "Decoding: postprocessing {type: \"ctc\", output, alphabet | alphabet_file, blank} of the\n"
      "meta file, or --alphabet/--alphabet-string and --blank. greedy: arg-max per frame,\n"
      "repeats collapsed, blanks dropped. beam: CTC prefix beam search over the per-frame\n"
      "softmax (the labelling with the highest summed path probability among those kept).\n\n"
      "A model of fixed width gets narrower crops padded on the right with white; wider ones\n"
      "are refused. An image that cannot be read is reported and skipped; the exit status is\n"
      "then 1.\n\n"
      "The bundled digit reader (models/crnn-digits; v2 is the default, v1 stays beside it):\n"
      "  onyx ocr models/crnn-digits/v2/crnn-digits-v2-opset17.onnx crop.png");
  sub->add_option("model", a->model, "the .onnx file")->required();
  sub->add_option("images", a->images, "PNG files")->required();
  a->o_meta = sub->add_option("--meta", a->meta, "model meta JSON (default: meta.json next to the model, if any)");
  auto* af = sub->add_option("--alphabet", a->alphabet_file,
                             "alphabet file: one line of characters, or one symbol per line (non-blank classes)");
  auto* as = sub->add_option("--alphabet-string", a->alphabet_string, "the alphabet as one string, e.g. 0123456789");
  af->excludes(as);
  a->o_blank = sub->add_option("--blank", a->blank, "index of the blank class (default 0)")
                    ->transform(integer_in(INT64_MIN, INT64_MAX));
  a->o_height = sub->add_option("--height", a->height, "crop height fed to the model (default 32)")
                     ->transform(integer_in(INT64_MIN, INT64_MAX));
  a->o_min_width = sub->add_option("--min-width", a->min_width, "narrowest crop fed to the model (default 16)")
                        ->transform(integer_in(INT64_MIN, INT64_MAX));
  a->o_mean = sub->add_option("--mean", a->mean, "normalisation mean (default 0.5)")
                   ->transform(number_in(-DBL_MAX, DBL_MAX));
  a->o_std = sub->add_option("--std", a->std, "normalisation std (default 0.5)")
                  ->transform(number_in(-DBL_MAX, DBL_MAX));
  a->o_scores = sub->add_option("--scores", a->scores, "what the output holds: logits (default; also log-probabilities) or probabilities")
                    ->check(CLI::IsMember({"logits", "probabilities"}));
  sub->add_option("--decoder", a->decoder, "greedy (default) or beam")->check(CLI::IsMember({"greedy", "beam"}));
  sub->add_option("--beam-width", a->beam_width, "prefixes kept by --decoder beam (default 10)")
      ->transform(integer_in(1, 100000));
  sub->add_option("--threads", a->threads, "worker threads (default 1)")->transform(integer_in(1, 256));
  add_session_flags(sub, a->session);
  sub->add_flag("--json", a->json,
                "print JSON: per image file, text, width, frames, confidence (greedy) or log_prob (beam), "
                "timings; a summary with cold load and warm per-crop times");
  sub->add_option("--save-inputs", a->save_inputs, "write each preprocessed tensor as DIR/<image stem>.npy");
  sub->add_option("--save-logits", a->save_logits, "write each model output as DIR/<image stem>.npy");
  return [a] { return run_ocr(*a); };
}

}  // namespace onyx::cli
