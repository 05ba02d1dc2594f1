// onyx card MODEL: a model card (markdown) with what the file is and how to feed it;
// onyx card --verify CARD.md MODEL: check that a card still describes the file.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/sha256.h"
#include "format/loader.h"
#include "ir/graph.h"
#include "onyx/ctc.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/parity_report.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kBlockStart = "<!-- onyx-card v1";
constexpr const char* kBlockEnd = "-->";

struct CardArgs {
  std::string model, meta, parity, output, verify;
};

json parse_json_file(const std::string& path, const char* what) {
  std::string text = read_text_file(path, what);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail_arg("{} '{}' is not valid JSON: {}", what, path, e.what());
  }
}

/// Model facts that the card states and --verify compares.
json model_facts(const std::string& path) {
  auto m = format::load_model(path);
  const ir::Graph& g = *m->graph;
  json j;
  j["ir_version"] = m->ir_version;
  j["producer"] = m->producer_name;
  j["producer_version"] = m->producer_version;
  json opsets = json::object();
  for (const auto& [d, v] : m->opset_imports) opsets[d.empty() ? "ai.onnx" : d] = v;
  j["opsets"] = opsets;
  std::set<std::string> inits;
  for (const auto& [n, t] : g.initializers) inits.insert(n);
  j["inputs"] = json::array();
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) j["inputs"].push_back(value_info_json(v));
  j["outputs"] = json::array();
  for (const auto& v : g.outputs) j["outputs"].push_back(value_info_json(v));
  std::map<std::string, int> ops;
  for (const auto& n : g.nodes) ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
  j["ops"] = ops;
  j["nodes"] = g.nodes.size();
  j["initializers"] = g.initializers.size();
  return j;
}

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string dim_text(const json& d) {
  if (d.is_number_integer()) return std::to_string(d.get<int64_t>());
  if (d.is_string()) return d.get<std::string>();
  return "?";
}

std::string shape_text(const json& io) {
  if (io["shape"].is_null()) return "unknown rank";
  std::string s = "[";
  for (size_t i = 0; i < io["shape"].size(); ++i) s += (i ? ", " : "") + dim_text(io["shape"][i]);
  return s + "]";
}

/// "axis 0 `N` dynamic; axes 1-3 fixed (1, 28, 28)" in words.
std::string axes_text(const json& io) {
  if (io["shape"].is_null()) return "rank not declared";
  const json& sh = io["shape"];
  if (sh.empty()) return "scalar";
  std::vector<std::string> dyn, fixed;
  for (size_t i = 0; i < sh.size(); ++i) {
    if (sh[i].is_number_integer()) fixed.push_back(std::to_string(i) + ": " + std::to_string(sh[i].get<int64_t>()));
    else if (sh[i].is_string()) dyn.push_back(std::to_string(i) + ": " + sh[i].get<std::string>());
    else dyn.push_back(std::to_string(i) + ": unnamed");
  }
  std::string s;
  if (!dyn.empty()) {
    s += "dynamic ";
    for (size_t i = 0; i < dyn.size(); ++i) s += (i ? ", " : "") + dyn[i];
  }
  if (!fixed.empty()) {
    s += (s.empty() ? "" : "; ") + std::string("fixed ");
    for (size_t i = 0; i < fixed.size(); ++i) s += (i ? ", " : "") + fixed[i];
  }
  return s;
}

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return o;
}
std::string code(const std::string& s) { return (s.find('`') == std::string::npos ? "`" + s + "`" : "`` " + s + " ``"); }

std::string json_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return short_num(v.get<double>());
  if (v.is_array()) {
    bool simple = true;
    for (const auto& x : v) simple = simple && (x.is_number() || x.is_string());
    if (simple) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + json_text(x);
      return s;
    }
  }
  if (v.is_object()) {  // "key: value; key: value" in the file's order of keys (sorted)
    std::string s;
    for (auto it = v.begin(); it != v.end(); ++it) s += (s.empty() ? "" : "; ") + it.key() + ": " + json_text(*it);
    return s;
  }
  return v.dump();
}

// ---- meta JSON: checked against the model so that a card cannot lie about it ----

void expect(bool ok, const std::string& meta_path, const std::string& key, const char* want) {
  if (!ok) fail_arg("--meta {}: '{}' must be {}", meta_path, key, want);
}

const json* find_io(const json& facts, const char* list, const std::string& name) {
  for (const auto& io : facts[list])
    if (io["name"] == name) return &io;
  return nullptr;
}

std::string names(const json& facts, const char* list) {
  std::string s;
  for (const auto& io : facts[list]) s += (s.empty() ? "" : ", ") + io["name"].get<std::string>();
  return s;
}

/// Validates the meta file; resolves alphabet_file / labels_file (relative to the meta file)
/// into the meta object. Returns the checked meta.
json check_meta(json meta, const std::string& path, const json& facts) {
  expect(meta.is_object(), path, "the file", "a JSON object");
  for (const char* k : {"name", "description", "version", "license", "authors", "intended_use", "limitations"})
    if (const json* v = member(meta, k)) expect(v->is_string(), path, k, "a string");
  fs::path base = fs::path(path).parent_path();
  if (const json* pre = member(meta, "preprocessing")) {
    expect(pre->is_object(), path, "preprocessing", "an object");
    const json* in = nullptr;
    if (const json* n = member(*pre, "input")) {
      expect(n->is_string(), path, "preprocessing.input", "a string naming a model input");
      in = find_io(facts, "inputs", n->get<std::string>());
      if (!in) fail_arg("--meta {}: preprocessing.input '{}' is not an input of the model (its inputs: {})", path,
                        n->get<std::string>(), names(facts, "inputs"));
    } else if (facts["inputs"].size() == 1) {
      in = &facts["inputs"][0];
    }
    for (const char* k : {"mean", "std"}) {
      const json* v = member(*pre, k);
      if (!v) continue;
      bool ok = v->is_number() || (v->is_array() && !v->empty() &&
                                   std::all_of(v->begin(), v->end(), [](const json& x) { return x.is_number(); }));
      expect(ok, path, std::string("preprocessing.") + k, "a number or an array of numbers");
      if (std::string(k) == "std" && ok)
        for (const auto& x : v->is_array() ? *v : json::array({*v}))
          if (x.get<double>() == 0) fail_arg("--meta {}: preprocessing.std holds a 0 (division by zero)", path);
      const json* layout = member(*pre, "layout");
      if (v->is_array() && in && layout && layout->is_string() && !in->at("shape").is_null() && in->at("shape").size() == 4) {
        std::string l = layout->get<std::string>();
        size_t axis = l == "NCHW" ? 1 : l == "NHWC" ? 3 : 99;
        if (axis < 4 && in->at("shape")[axis].is_number_integer()) {
          int64_t ch = in->at("shape")[axis].get<int64_t>();
          if (static_cast<int64_t>(v->size()) != ch)
            fail_arg("--meta {}: preprocessing.{} has {} values but input '{}' {} has {} channel(s) on axis {} ({})", path, k,
                     v->size(), in->at("name").get<std::string>(), shape_text(*in), ch, axis, l);
        }
      }
    }
    if (const json* l = member(*pre, "layout")) {
      expect(l->is_string(), path, "preprocessing.layout", "a string such as \"NCHW\" or \"NHWC\"");
      std::string s = l->get<std::string>();
      if (in && !in->at("shape").is_null() && s.size() == in->at("shape").size() + 0 && s.size() == 4) {
        // A layout whose channel axis holds the image's height is almost surely swapped.
        const json& sh = in->at("shape");
        size_t c = s.find('C');
        if (c != std::string::npos && sh[c].is_number_integer() && sh[c].get<int64_t>() > 4) {
          size_t other = s == "NCHW" ? 3 : 1;
          if (sh[other].is_number_integer() && sh[other].get<int64_t>() <= 4)
            fail_arg("--meta {}: preprocessing.layout {} puts {} channels on axis {} of input '{}' {}; the model looks {}",
                     path, s, sh[c].get<int64_t>(), c, in->at("name").get<std::string>(), shape_text(*in),
                     s == "NCHW" ? "NHWC" : "NCHW");
        }
      }
    }
    if (const json* v = member(*pre, "scale")) expect(v->is_number() || v->is_string(), path, "preprocessing.scale", "a number or a string");
    for (const char* k : {"channel_order", "dtype", "notes"})
      if (const json* v = member(*pre, k)) expect(v->is_string(), path, std::string("preprocessing.") + k, "a string");
    if (const json* v = member(*pre, "resize")) expect(v->is_string() || v->is_object(), path, "preprocessing.resize", "a string or an object");
  }
  if (json* post = meta.contains("postprocessing") && !meta["postprocessing"].is_null() ? &meta["postprocessing"] : nullptr) {
    expect(post->is_object(), path, "postprocessing", "an object");
    const json* type = member(*post, "type");
    expect(type && type->is_string(), path, "postprocessing.type", "one of \"ctc\", \"boxes\", \"classification\", \"none\"");
    std::string t = type->get<std::string>();
    if (t != "ctc" && t != "boxes" && t != "classification" && t != "none")
      fail_arg("--meta {}: postprocessing.type '{}' is not one of ctc, boxes, classification, none", path, t);
    const json* out = nullptr;
    if (const json* n = member(*post, "output")) {
      expect(n->is_string(), path, "postprocessing.output", "a string naming a model output");
      out = find_io(facts, "outputs", n->get<std::string>());
      if (!out) fail_arg("--meta {}: postprocessing.output '{}' is not an output of the model (its outputs: {})", path,
                         n->get<std::string>(), names(facts, "outputs"));
    } else if (!facts["outputs"].empty()) {
      out = &facts["outputs"][0];
    }
    int64_t classes = -1;
    if (out && !out->at("shape").is_null() && !out->at("shape").empty() && out->at("shape").back().is_number_integer())
      classes = out->at("shape").back().get<int64_t>();
    auto load_list = [&](const char* key, const char* file_key) {
      if (const json* f = member(*post, file_key)) {
        expect(f->is_string(), path, std::string("postprocessing.") + file_key, "a file path");
        fs::path p = base / f->get<std::string>();
        (*post)[key] = post::parse_alphabet(read_text_file(p.string(), file_key));
        post->erase(file_key);
      }
    };
    if (t == "ctc") {
      load_list("alphabet", "alphabet_file");
      const json* a = member(*post, "alphabet");
      expect(a && (a->is_string() || (a->is_array() && std::all_of(a->begin(), a->end(), [](const json& x) { return x.is_string(); }))),
             path, "postprocessing.alphabet", "a string (one symbol per character) or an array of strings (or give alphabet_file)");
      std::vector<std::string> symbols = a->is_string() ? post::utf8_chars(a->get<std::string>()) : a->get<std::vector<std::string>>();
      (*post)["alphabet"] = symbols;
      const json* b = member(*post, "blank");
      expect(b && b->is_number_integer(), path, "postprocessing.blank", "the integer index of the blank class");
      int64_t blank = b->get<int64_t>();
      if (classes > 0) {
        if (blank < 0 || blank >= classes)
          fail_arg("--meta {}: postprocessing.blank {} is outside the {} classes of output '{}' {}", path, blank, classes,
                   out->at("name").get<std::string>(), shape_text(*out));
        if (static_cast<int64_t>(symbols.size()) != classes - 1 && static_cast<int64_t>(symbols.size()) != classes)
          fail_arg("--meta {}: the alphabet has {} symbols but output '{}' {} has {} classes (the alphabet lists the {} "
                   "non-blank classes, or all {} with a placeholder at the blank)",
                   path, symbols.size(), out->at("name").get<std::string>(), shape_text(*out), classes, classes - 1, classes);
      }
    } else if (t == "boxes") {
      for (const char* k : {"score_threshold", "iou_threshold"})
        if (const json* v = member(*post, k))
          expect(v->is_number() && v->get<double>() >= 0 && v->get<double>() <= 1, path, std::string("postprocessing.") + k, "a number in [0, 1]");
      if (const json* v = member(*post, "max_detections")) expect(v->is_number_integer() && v->get<int64_t>() > 0, path, "postprocessing.max_detections", "a positive integer");
      if (const json* v = member(*post, "box_format")) expect(v->is_string(), path, "postprocessing.box_format", "a string such as \"xyxy\", \"xywh\" or \"cxcywh\"");
      load_list("labels", "labels_file");
    } else if (t == "classification") {
      load_list("labels", "labels_file");
      if (const json* l = member(*post, "labels")) {
        expect(l->is_array() && std::all_of(l->begin(), l->end(), [](const json& x) { return x.is_string(); }), path,
               "postprocessing.labels", "an array of strings");
        if (classes > 0 && static_cast<int64_t>(l->size()) != classes)
          fail_arg("--meta {}: postprocessing.labels has {} entries but output '{}' {} has {} classes", path, l->size(),
                   out->at("name").get<std::string>(), shape_text(*out), classes);
      }
    }
  }
  if (const json* o = member(meta, "outside_graph"))
    expect(o->is_array() && std::all_of(o->begin(), o->end(), [](const json& x) { return x.is_string(); }), path, "outside_graph",
           "an array of strings");
  if (const json* e = member(meta, "export")) {
    expect(e->is_object(), path, "export", "an object");
    if (const json* op = member(*e, "opset")) {
      expect(op->is_number_integer(), path, "export.opset", "an integer");
      if (facts["opsets"].contains("ai.onnx") && facts["opsets"]["ai.onnx"] != *op)
        fail_arg("--meta {}: export.opset is {} but the model imports ai.onnx opset {}", path, op->get<int64_t>(),
                 facts["opsets"]["ai.onnx"].get<int64_t>());
    }
  }
  return meta;
}

// ---- rendering ----

void kv_rows(std::ostringstream& o, const json& obj, const std::vector<std::pair<const char*, const char*>>& known) {
  for (const auto& [k, label] : known)
    if (const json* v = member(obj, k)) o << "| " << label << " | " << md_cell(json_text(*v)) << " |\n";
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool is_known = false;
    for (const auto& [k, label] : known) is_known = is_known || it.key() == k;
    if (it.key() == "type" || it.key() == "alphabet" || it.key() == "blank") is_known = true;  // shown above the table
    if (!is_known && !it->is_null()) o << "| " << md_cell(it.key()) << " | " << md_cell(json_text(*it)) << " |\n";
  }
}

std::string parity_section(const json& p) {
  std::ostringstream o;
  auto s = [&](const char* k) { return p.contains(k) && p[k].is_string() ? p[k].get<std::string>() : std::string(); };
  auto n = [&](const json& v) { return v.is_number() ? short_num(v.get<double>()) : v.is_string() ? v.get<std::string>() : "-"; };
  int64_t samples = p.value("samples", 0), passed = p.value("passed", 0);
  o << "**" << (p.value("pass", false) ? "PASS" : "FAIL") << "**: " << passed << " of " << samples
    << " samples within |onyx - ref| <= " << n(p["atol"]) << " + " << n(p["rtol"]) << " * |ref|";
  std::string src = s("reference_source");
  o << ", against " << (src.empty() ? "the reference outputs" : src) << " in " << code(s("reference"));
  if (!s("date").empty()) o << " (" << s("date") << ")";
  o << ".\n\n";
  o << "| output | within tolerance | max abs error | mean abs error | max rel error | min cosine | top-1 agreement |\n";
  o << "|---|---|---|---|---|---|---|\n";
  for (const auto& x : p.value("outputs", json::array())) {
    std::string top1 = x.contains("top1_agreement") && x["top1_agreement"].is_number()
                           ? short_num(100.0 * x["top1_agreement"].get<double>()) + "%"
                           : "n/a";
    o << "| " << code(x.value("name", "?")) << " | " << x.value("within_tolerance", 0) << "/" << x.value("samples", 0) << " | "
      << n(x["max_abs_error"]) << " | " << n(x["mean_abs_error"]) << " | " << n(x["max_rel_error"]) << " | "
      << (x["cosine_min"].is_number() ? std::to_string(x["cosine_min"].get<double>()) : n(x["cosine_min"])) << " | " << top1 << " |\n";
  }
  if (p.contains("ctc") && p["ctc"].is_object()) {
    const json& c = p["ctc"];
    o << "\nGreedy CTC decoding of " << code(c.value("output", "?")) << ": " << c.value("exact_matches", 0) << " of "
      << c.value("sequences", 0) << " sequences identical, character error rate "
      << short_num(100.0 * c.value("cer", 0.0)) << "%.\n";
  }
  if (p.contains("boxes") && p["boxes"].is_object()) {
    const json& b = p["boxes"];
    auto share = [&](const char* k) { return b.contains(k) && b[k].is_number() ? short_num(100.0 * b[k].get<double>()) + "%" : "-"; };
    auto num = [&](const char* k) { return b.contains(k) ? n(b[k]) : std::string("-"); };
    o << "\nBox decoding of " << code(b.value("output", "?")) << " (" << b.value("box_format", "?") << ", score >= "
      << num("score_threshold") << ", NMS IoU " << num("iou_threshold") << "): recall " << share("recall") << ", precision "
      << share("precision") << " at IoU >= " << num("match_iou") << ", mean IoU of matched boxes "
      << (b.contains("mean_iou") && b["mean_iou"].is_number() ? short_num(b["mean_iou"].get<double>()) : std::string("n/a"))
      << " (" << b.value("images", 0) << " images, " << b.value("reference_boxes", 0) << " reference boxes).\n";
  }
  return o.str();
}

std::string embed_json(const json& j) {
  std::string s = j.dump(1);
  // "--" cannot occur in an HTML comment; outside strings JSON never holds it.
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '-' && i + 1 < s.size() && s[i + 1] == '-') {
      out += "-\\u002d";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string render_card(const json& block, const json& facts) {
  std::ostringstream o;
  const json meta = block.value("meta", json::object());
  std::string file = block["file"];
  std::string title = meta.contains("name") && meta["name"].is_string() ? meta["name"].get<std::string>() : fs::path(file).stem().string();
  o << "# " << title << "\n\n";
  if (meta.contains("description") && meta["description"].is_string()) o << meta["description"].get<std::string>() << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| File | " << code(file) << " |\n";
  o << "| SHA-256 | " << code(block["sha256"].get<std::string>()) << " |\n";
  o << "| Size | " << with_commas(block["size"].get<uint64_t>()) << " bytes (" << human_bytes(block["size"].get<uint64_t>()) << ") |\n";
  o << "| IR version | " << block["ir_version"].get<int64_t>() << " |\n";
  std::string ops;
  for (auto it = block["opsets"].begin(); it != block["opsets"].end(); ++it)
    ops += (ops.empty() ? "" : ", ") + it.key() + " " + std::to_string(it->get<int64_t>());
  o << "| Opset imports | " << md_cell(ops) << " |\n";
  std::string prod = block["producer"].get<std::string>() + " " + block["producer_version"].get<std::string>();
  o << "| Producer | " << md_cell(prod == " " ? "(not stated)" : prod) << " |\n";
  o << "| Nodes | " << facts["nodes"].get<size_t>() << " (" << facts["initializers"].get<size_t>() << " initializers) |\n";
  for (const char* k : {"version", "license", "authors"})
    if (meta.contains(k) && meta[k].is_string()) {
      std::string label = k;
      label[0] = static_cast<char>(std::toupper(label[0]));
      o << "| " << label << " | " << md_cell(meta[k].get<std::string>()) << " |\n";
    }
  for (const char* list : {"inputs", "outputs"}) {
    o << "\n## " << (std::string(list) == "inputs" ? "Inputs" : "Outputs") << "\n\n";
    o << "| name | dtype | shape | axes |\n|---|---|---|---|\n";
    for (const auto& io : block[list])
      o << "| " << code(io["name"].get<std::string>()) << " | " << io["dtype"].get<std::string>() << " | " << code(shape_text(io))
        << " | " << md_cell(axes_text(io)) << " |\n";
  }
  if (meta.contains("intended_use") && meta["intended_use"].is_string())
    o << "\n## Intended use\n\n" << meta["intended_use"].get<std::string>() << "\n";
  if (meta.contains("limitations") && meta["limitations"].is_string())
    o << "\n## Limitations\n\n" << meta["limitations"].get<std::string>() << "\n";

  o << "\n## Preprocessing\n\n";
  if (const json* pre = member(meta, "preprocessing")) {
    o << "| | |\n|---|---|\n";
    kv_rows(o, *pre, {{"input", "Input"}, {"resize", "Resize"}, {"scale", "Scale"}, {"mean", "Mean"}, {"std", "Std"},
                      {"channel_order", "Channel order"}, {"layout", "Layout"}, {"dtype", "Dtype"}, {"notes", "Notes"}});
    if (member(*pre, "mean") || member(*pre, "std"))
      o << "\nThe input is `(x * scale - mean) / std` per channel, with x the decoded pixel values.\n";
  } else {
    o << "Not stated (no preprocessing in the `--meta` file).\n";
  }
  o << "\n## Post-processing\n\n";
  if (const json* post = member(meta, "postprocessing")) {
    std::string t = post->value("type", "none");
    if (t == "ctc") {
      const json& a = (*post)["alphabet"];
      std::string joined;
      bool single = std::all_of(a.begin(), a.end(), [](const json& x) { return post::utf8_chars(x.get<std::string>()).size() == 1; });
      for (const auto& x : a) joined += (single || joined.empty() ? "" : " ") + x.get<std::string>();
      o << "Greedy CTC decoding: arg-max class per frame, collapse repeats, drop the blank (`onyx parity --decode ctc`).\n\n";
      o << "| | |\n|---|---|\n";
      o << "| Blank index | " << (*post)["blank"].get<int64_t>() << " |\n";
      o << "| Alphabet | " << a.size() << " symbols: " << code(joined) << " |\n";
      kv_rows(o, *post, {{"output", "Output"}, {"layout", "Layout"}, {"decoder", "Decoder"}, {"notes", "Notes"}});
    } else if (t == "boxes") {
      o << "Box decoding and non-maximum suppression outside the graph.\n\n| | |\n|---|---|\n";
      kv_rows(o, *post, {{"output", "Output"}, {"box_format", "Box format"}, {"coordinates", "Coordinates"},
                         {"score_threshold", "Score threshold"}, {"iou_threshold", "NMS IoU threshold"},
                         {"max_detections", "Max detections"}, {"class_agnostic_nms", "Class-agnostic NMS"}, {"labels", "Labels"},
                         {"notes", "Notes"}});
    } else if (t == "classification") {
      o << "Class scores.\n\n| | |\n|---|---|\n";
      kv_rows(o, *post, {{"output", "Output"}, {"activation", "Activation"}, {"labels", "Labels"}, {"notes", "Notes"}});
    } else {
      o << "None: the outputs are used as they are.\n";
      if (post->contains("notes")) o << "\n" << json_text((*post)["notes"]) << "\n";
    }
  } else {
    o << "Not stated (no postprocessing in the `--meta` file).\n";
  }
  o << "\n## Outside the graph\n\n";
  if (const json* og = member(meta, "outside_graph")) {
    if (og->empty()) o << "Nothing: the graph takes the raw input and gives the final output.\n";
    for (const auto& x : *og) o << "- " << x.get<std::string>() << "\n";
  } else {
    o << "Not stated.\n";
  }
  o << "\n## Export\n\n";
  if (const json* e = member(meta, "export")) {
    o << "| | |\n|---|---|\n";
    kv_rows(o, *e, {{"exporter", "Exporter"}, {"torch", "torch"}, {"torchvision", "torchvision"}, {"onnx", "onnx"},
                    {"opset", "Opset"}, {"date", "Export date"}, {"script", "Script"}, {"command", "Command"}});
  } else {
    o << "Not stated (no export section in the `--meta` file).\n";
  }
  if (const json* ev = member(meta, "evaluation")) {
    o << "\n## Evaluation\n\n";
    if (ev->is_object()) {
      o << "| | |\n|---|---|\n";
      kv_rows(o, *ev, {{"dataset", "Dataset"}, {"samples", "Samples"}, {"exact_string_accuracy", "Exact-string accuracy"},
                       {"character_error_rate", "Character error rate"}, {"accuracy", "Accuracy"}, {"runtime", "Run with"},
                       {"script", "Script"}, {"command", "Command"}, {"date", "Date"}});
    } else {
      o << md_cell(json_text(*ev)) << "\n";
    }
  }
  o << "\n## Parity\n\n";
  if (block.contains("parity") && block["parity"].is_object()) o << parity_section(block["parity"]);
  else o << "Not measured (make the card with `--parity FILE.json`, the output of `onyx parity --json`).\n";
  o << "\n## Operators\n\n";
  std::string oplist;
  for (auto it = facts["ops"].begin(); it != facts["ops"].end(); ++it)
    oplist += (oplist.empty() ? "" : ", ") + it.key() + " " + std::to_string(it->get<int>());
  o << md_cell(oplist.empty() ? "(none)" : oplist) << "\n";
  bool other = false;
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    static const char* known[] = {"name", "description", "version", "license", "authors", "intended_use", "limitations",
                                  "preprocessing", "postprocessing", "outside_graph", "export", "evaluation"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; }) != std::end(known)) continue;
    if (!other) o << "\n## Other\n\n| | |\n|---|---|\n", other = true;
    o << "| " << md_cell(it.key()) << " | " << md_cell(json_text(*it)) << " |\n";
  }
  o << "\n---\nMade with `onyx card`; check that it still describes the file with `onyx card --verify CARD.md " << file
    << "` (it compares the block below).\n\n";
  o << kBlockStart << "\n" << embed_json(block) << "\n" << kBlockEnd << "\n";
  return o.str();
}

json parity_summary(const std::string& path, const std::string& sha) {
  json p = parse_json_file(path, "--parity file");
  if (!p.is_object() || p.value("tool", "") != "onyx parity")
    fail_arg("--parity {}: not the output of `onyx parity --json`", path);
  std::string their = p.value("model_sha256", "");
  if (their != sha)
    fail_arg("--parity {}: these results are for a model with sha256 {}, not this file ({}); rerun onyx parity on it", path,
             their.empty() ? "(none)" : their, sha);
  json s;
  for (const char* k : {"reference", "reference_source", "rtol", "atol", "samples", "passed", "failed", "pass", "date", "ctc", "boxes"})
    if (p.contains(k)) s[k] = p[k];
  if (s.contains("ctc") && s["ctc"].is_object()) s["ctc"].erase("mismatches");
  if (s.contains("boxes") && s["boxes"].is_object()) s["boxes"].erase("differences");
  s["outputs"] = json::array();
  for (const auto& o : p.value("outputs", json::array())) {
    json x;
    for (const char* k : {"name", "samples", "within_tolerance", "max_abs_error", "mean_abs_error", "max_rel_error", "cosine_min", "top1_agreement"})
      if (o.contains(k)) x[k] = o[k];
    s["outputs"].push_back(x);
  }
  return s;
}

int run_card(const CardArgs& a) {
  std::string sha = sha256_file_hex(a.model);
  uint64_t size = fs::file_size(a.model);
  json facts = model_facts(a.model);
  json block;
  block["format"] = "onyx-card";
  block["version"] = 1;
  block["file"] = fs::path(a.model).filename().string();
  block["sha256"] = sha;
  block["size"] = size;
  for (const char* k : {"ir_version", "producer", "producer_version", "opsets", "inputs", "outputs"}) block[k] = facts[k];
  for (auto& io : block["inputs"]) io.erase("type");
  for (auto& io : block["outputs"]) io.erase("type");
  if (!a.meta.empty()) block["meta"] = check_meta(parse_json_file(a.meta, "--meta file"), a.meta, facts);
  if (!a.parity.empty()) block["parity"] = parity_summary(a.parity, sha);
  std::string card = render_card(block, facts);
  if (a.output.empty() || a.output == "-") {
    std::cout << card;
    return 0;
  }
  std::ofstream f(a.output, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "cannot write the card '{}'", a.output);
  f << card;
  if (!f) fail(ErrorCode::kIo, "error writing the card '{}'", a.output);
  std::cerr << "wrote " << a.output << "\n";
  return 0;
}

json read_card_block(const std::string& path) {
  std::string text = read_text_file(path, "card");
  size_t start = text.rfind(kBlockStart);
  if (start == std::string::npos)
    fail_arg("card '{}' has no onyx-card block ({} ... {}); make it with `onyx card`", path, kBlockStart, kBlockEnd);
  start += std::string(kBlockStart).size();
  size_t end = text.find(kBlockEnd, start);
  if (end == std::string::npos) fail_arg("card '{}': the onyx-card block is not closed with {}", path, kBlockEnd);
  json j;
  try {
    j = json::parse(text.substr(start, end - start));
  } catch (const json::parse_error& e) {
    fail_arg("card '{}': the onyx-card block is not valid JSON (edited by hand?): {}", path, e.what());
  }
  if (!j.is_object() || j.value("format", "") != "onyx-card") fail_arg("card '{}': the onyx-card block lacks \"format\": \"onyx-card\"", path);
  for (const char* k : {"sha256", "size", "opsets", "inputs", "outputs"})
    if (!j.contains(k)) fail_arg("card '{}': the onyx-card block lacks '{}'", path, k);
  return j;
}

std::string io_text(const json& io) { return io.value("dtype", "?") + shape_text(io); }

void compare_io(const json& card, const json& file, const char* list, std::vector<std::string>& diffs) {
  const json& c = card[list];
  const json& f = file[list];
  std::string what = std::string(list) == "inputs" ? "input" : "output";
  for (const auto& x : c) {
    const json* y = nullptr;
    for (const auto& z : f)
      if (z["name"] == x["name"]) y = &z;
    if (!y) {
      diffs.push_back(what + " '" + x.value("name", "?") + "': in the card, not in the file");
      continue;
    }
    if (x.value("dtype", "") != y->value("dtype", "") || x["shape"] != (*y)["shape"])
      diffs.push_back(what + " '" + x.value("name", "?") + "': card " + io_text(x) + ", file " + io_text(*y));
  }
  for (const auto& y : f) {
    bool found = false;
    for (const auto& x : c) found = found || x["name"] == y["name"];
    if (!found) diffs.push_back(what + " '" + y["name"].get<std::string>() + "': in the file, not in the card");
  }
  if (diffs.empty() && c.size() == f.size()) {
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i]["name"] != f[i]["name"]) {
        diffs.push_back(std::string(list) + " are in another order: card " + c[i]["name"].dump() + " at position " + std::to_string(i) +
                        ", file " + f[i]["name"].dump());
        break;
      }
  }
}

int run_verify(const CardArgs& a) {
  json card = read_card_block(a.verify);
  std::vector<std::string> diffs;
  std::string sha = sha256_file_hex(a.model);
  uint64_t size = fs::file_size(a.model);
  if (card["sha256"] != sha) diffs.push_back("sha256: card " + card["sha256"].get<std::string>() + ", file " + sha);
  if (card["size"] != size)
    diffs.push_back("size: card " + card["size"].dump() + " bytes, file " + std::to_string(size) + " bytes");
  json facts;
  try {
    facts = model_facts(a.model);
  } catch (const Error& e) {
    diffs.push_back(std::string("the file no longer loads as an ONNX model: ") + e.what());
  }
  if (!facts.is_null()) {
    if (card.contains("ir_version") && card["ir_version"] != facts["ir_version"])
      diffs.push_back("IR version: card " + card["ir_version"].dump() + ", file " + facts["ir_version"].dump());
    if (card["opsets"] != facts["opsets"])
      diffs.push_back("opset imports: card " + card["opsets"].dump() + ", file " + facts["opsets"].dump());
    compare_io(card, facts, "inputs", diffs);
    compare_io(card, facts, "outputs", diffs);
  }
  if (!diffs.empty()) {
    std::string msg = "card '" + a.verify + "' does not match '" + a.model + "':";
    for (const auto& d : diffs) msg += "\n  " + d;
    if (diffs.size() == 1 && card["sha256"] != sha)
      msg += "\n  (same inputs, outputs and opsets: the weights or graph changed; remake the card and rerun parity)";
    fail_arg("{}", msg);
  }
  std::string file = card.value("file", "");
  std::cout << "card '" << a.verify << "' matches '" << a.model << "': sha256 " << sha.substr(0, 16) << "..., "
            << facts["inputs"].size() << " input(s), " << facts["outputs"].size() << " output(s), opsets " << facts["opsets"].dump() << "\n";
  if (!file.empty() && file != fs::path(a.model).filename().string())
    std::cout << "note: the card names the file '" << file << "'\n";
  return 0;
}

}  // namespace

Action add_card(CLI::App& app) {
  auto args = std::make_shared<CardArgs>();
  auto* sub = app.add_subcommand(
      "card",
      "Write a model card (markdown): file name, SHA-256, size, IR version, opset imports,\n"
      "producer, inputs and outputs (dtypes; dynamic axes by name, fixed ones stated), and\n"
      "from --meta FILE.json how to feed the model and read its outputs. The card ends with a\n"
      "machine-readable block (an HTML comment holding JSON) that --verify compares.\n\n"
      "  onyx card MODEL [--meta FILE.json] [--parity PARITY.json] [-o MODEL.md]\n"
      "  onyx card --verify MODEL.md MODEL    exit 1 naming each difference (hash, size,\n"
      "                                       IR version, opsets, inputs, outputs)\n\n"
      "The meta file is a JSON object; every key is optional and checked against the model:\n"
      "  name, description, version, license, authors, intended_use, limitations: strings\n"
      "  preprocessing: {input, resize, scale, mean: [..], std: [..], channel_order: \"RGB\",\n"
      "                  layout: \"NCHW\"|\"NHWC\", dtype, notes}\n"
      "  postprocessing: {type: \"ctc\", output, alphabet: \"abc\" | [..] | alphabet_file, blank}\n"
      "                | {type: \"boxes\", output, box_format: \"xyxy\", coordinates, score_threshold,\n"
      "                   iou_threshold, max_detections, labels | labels_file}\n"
      "                | {type: \"classification\", output, activation, labels | labels_file}\n"
      "                | {type: \"none\"}\n"
      "  outside_graph: [\"what the caller must do\", ..]\n"
      "  export: {exporter, torch, torchvision, onnx, opset, date, script, command}\n"
      "Other keys are listed as they are. Files named in the meta are relative to it.");
  sub->add_option("model", args->model, "the .onnx file")->required();
  auto* meta = sub->add_option("--meta", args->meta, "JSON file: preprocessing, post-processing, export versions (see above)");
  auto* parity = sub->add_option("--parity", args->parity, "JSON file written by `onyx parity --json` for this model: adds a parity summary");
  auto* out = sub->add_option("--output,-o", args->output, "write the card here (default: standard output)");
  auto* verify = sub->add_option("--verify", args->verify, "CARD.md: check that the card still describes MODEL instead of writing one");
  verify->excludes(meta)->excludes(parity)->excludes(out);
  return [args] { return args->verify.empty() ? run_card(*args) : run_verify(*args); };
}

}  // namespace onyx::cli
