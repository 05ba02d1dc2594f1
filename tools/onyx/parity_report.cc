#include "tools/onyx/parity_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "tools/onyx/dataset.h"

namespace onyx::cli {

namespace fs = std::filesystem;

void ErrorHistogram::add(double d) {
  int bin;
  if (d == 0) bin = 0;
  else if (!std::isfinite(d)) bin = kBins - 1;
  else if (d < std::pow(10.0, kMinExp)) bin = 1;
  else if (d >= std::pow(10.0, kMaxExp)) bin = kBins - 2;
  else bin = std::clamp(2 + static_cast<int>(std::floor(std::log10(d))) - kMinExp, 2, kBins - 3);
  ++counts[bin];
}

std::string ErrorHistogram::label(int bin) {
  if (bin == 0) return "0";
  if (bin == 1) return "<1e" + std::to_string(kMinExp);
  if (bin == kBins - 2) return ">=1e" + std::to_string(kMaxExp);
  if (bin == kBins - 1) return "non-finite";
  return "1e" + std::to_string(kMinExp + bin - 2);
}

std::string short_num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  if (v == 0) return "0";
  double m = std::fabs(v);
  if (m >= 1e-4 && m < 1e5) std::snprintf(buf, sizeof buf, "%.4g", v);
  else std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

int64_t ParityResult::passed() const {
  int64_t n = 0;
  for (const auto& s : samples) n += s.pass;
  return n;
}

std::vector<const SampleResult*> ParityResult::worst(size_t n) const {
  std::vector<const SampleResult*> v;
  for (const auto& s : samples) v.push_back(&s);
  std::stable_sort(v.begin(), v.end(), [](const SampleResult* a, const SampleResult* b) {
    if (a->error.empty() != b->error.empty()) return !a->error.empty();
    return a->ratio > b->ratio;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

namespace {

nlohmann::json num(double v) {
  if (std::isfinite(v)) return v;
  return short_num(v);  // JSON has no inf or NaN: "inf", "-inf", "nan"
}

std::string pct(int64_t a, int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0);
  return buf;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return short_num(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// A share in [0, 1] as "84.62%".
std::string pct_of(double share) { return fixed(100.0 * share, 2) + "%"; }

const char* format_name(post::BoxFormat f) { return f == post::BoxFormat::kXyxy ? "xyxy" : "cxcywh"; }

/// "score >= 0.25, NMS IoU 0.45, at most 300 per image, cxcywh"
std::string box_settings(const BoxSummary& b) {
  const auto& o = b.options;
  return std::string(format_name(o.format)) + " boxes, score >= " + short_num(o.score_threshold) + ", NMS IoU " +
         short_num(o.iou_threshold) + ", " +
         (o.max_detections > 0 ? "at most " + std::to_string(o.max_detections) + " per image" : "no detection limit");
}

/// "11 of 13 reference boxes found (recall 84.62%), 11 of 12 onyx boxes matched (precision 91.67%)"
std::string box_counts(const post::BoxMatch& m) {
  return std::to_string(m.matched) + " of " + std::to_string(m.want) + " reference boxes found (recall " +
         pct_of(m.recall()) + "), " + std::to_string(m.matched) + " of " + std::to_string(m.got) +
         " onyx boxes matched (precision " + pct_of(m.precision()) + ")";
}

std::string iou_text(double v) { return std::isnan(v) ? "n/a" : fixed(v, 4); }

const OutputCompare* worst_output(const ParityResult& r, const SampleResult& s, size_t* index = nullptr) {
  for (size_t i = 0; i < r.outputs.size() && i < s.outputs.size(); ++i)
    if (r.outputs[i].name == s.worst_output) {
      if (index) *index = i;
      return &s.outputs[i];
    }
  return nullptr;
}

std::string verdict_line(const ParityResult& r) {
  int64_t n = static_cast<int64_t>(r.samples.size()), p = r.passed();
  std::string tol = "rtol " + short_num(r.rtol) + ", atol " + short_num(r.atol);
  if (r.pass() && n == 1) return "PASS: the sample is within tolerance (" + tol + ")";
  if (r.pass()) return "PASS: all " + std::to_string(n) + " samples within tolerance (" + tol + ")";
  int64_t errors = 0;
  for (const auto& x : r.samples) errors += !x.error.empty();
  std::string s = "FAIL: " + std::to_string(n - p) + " of " + std::to_string(n) + " samples outside tolerance (" + tol + ")";
  if (errors) s += ", " + std::to_string(errors) + " of them" + " could not be read or run";
  auto w = r.worst(1);
  if (!w.empty()) s += "; worst: " + w[0]->name;
  return s;
}

/// What went wrong (or how close it came) for one sample, in one line.
std::string sample_detail(const ParityResult& r, const SampleResult& s) {
  if (!s.error.empty()) return "error: " + s.error;
  const OutputCompare* c = worst_output(r, s);
  if (!c) return "";
  if (!c->compared) return s.worst_output + ": " + c->problem;
  std::string d = s.worst_output + " " + c->worst_at + ": onyx " + short_num(c->worst_got) + ", reference " +
                  short_num(c->worst_want) + " (max abs error " + short_num(c->max_abs);
  if (c->outside) d += ", " + std::to_string(c->outside) + " of " + std::to_string(c->elements) + " elements outside";
  return d + ")";
}

// ---- a small document model rendered as markdown or HTML ----

struct Cell {
  Cell(std::string t = "", bool c = false, std::string k = "") : text(std::move(t)), code(c), cls(std::move(k)) {}
  Cell(const char* t) : text(t) {}  // NOLINT implicit: header cells are written as strings
  std::string text;
  bool code = false;
  std::string cls;  // HTML class: "pass", "fail"
};

struct Block {
  enum Kind { kHeading, kPara, kTable, kSvg, kList, kVerdict };
  explicit Block(Kind k) : kind(k) {}
  Kind kind;
  int level = 2;
  std::string text;
  std::vector<Cell> header;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> items;
  std::string svg, svg_name, alt;
  bool pass = true;
};

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string md_escape(const std::string& s, bool code) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else if (!code && (c == '*' || c == '_' || c == '`' || c == '<' || c == '[')) o += std::string("\\") + c;
    else o += c;
  }
  if (!code) return o;
  std::string fence = o.find('`') == std::string::npos ? "`" : "``";
  return fence + (fence.size() > 1 ? " " : "") + o + (fence.size() > 1 ? " " : "") + fence;
}

std::string render_md(const std::vector<Block>& doc, const std::string& stem, const std::string& dir,
                      std::vector<std::pair<std::string, std::string>>& svg_files) {
  std::ostringstream o;
  for (const auto& b : doc) {
    switch (b.kind) {
      case Block::kHeading: o << std::string(b.level, '#') << " " << b.text << "\n\n"; break;
      case Block::kPara: o << b.text << "\n\n"; break;
      case Block::kVerdict: o << "**" << b.text << "**\n\n"; break;
      case Block::kList:
        for (const auto& i : b.items) o << "- " << md_escape(i, false) << "\n";
        o << "\n";
        break;
      case Block::kTable: {
        o << "|";
        for (const auto& h : b.header) o << " " << md_escape(h.text, h.code) << " |";
        o << "\n|";
        for (size_t i = 0; i < b.header.size(); ++i) o << "---|";
        o << "\n";
        for (const auto& row : b.rows) {
          o << "|";
          for (const auto& c : row) o << " " << (c.text.empty() ? "" : md_escape(c.text, c.code)) << " |";
          o << "\n";
        }
        o << "\n";
        break;
      }
      case Block::kSvg: {
        std::string file = stem + "-" + b.svg_name + "-errors.svg";
        svg_files.emplace_back((fs::path(dir) / file).string(), b.svg);
        o << "![" << b.alt << "](" << file << ")\n\n";
        break;
      }
    }
  }
  return o.str();
}

std::string render_html(const std::vector<Block>& doc, const std::string& title) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << html_escape(title)
    << "</title>\n<style>\n"
       "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
       "table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;"
       "font-variant-numeric:tabular-nums}th{background:#f3f3f3}code{background:#f3f3f3;padding:1px 3px;border-radius:3px}\n"
       ".pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}\n"
       ".verdict{font-size:1.2em;padding:0.6em 1em;border-radius:6px}.verdict.pass{background:#dafbe1}"
       ".verdict.fail{background:#ffebe9}svg{max-width:100%;height:auto}\n"
       "</style></head><body>\n";
  for (const auto& b : doc) {
    switch (b.kind) {
      case Block::kHeading:
        o << "<h" << b.level << ">" << html_escape(b.text) << "</h" << b.level << ">\n";
        break;
      case Block::kPara: o << "<p>" << html_escape(b.text) << "</p>\n"; break;
      case Block::kVerdict:
        o << "<p class=\"verdict " << (b.pass ? "pass" : "fail") << "\">" << html_escape(b.text) << "</p>\n";
        break;
      case Block::kList:
        o << "<ul>\n";
        for (const auto& i : b.items) o << "<li>" << html_escape(i) << "</li>\n";
        o << "</ul>\n";
        break;
      case Block::kTable: {
        o << "<table>\n";
        bool has_header = std::any_of(b.header.begin(), b.header.end(), [](const Cell& h) { return !h.text.empty(); });
        if (has_header) {
          o << "<tr>";
          for (const auto& h : b.header) o << "<th>" << html_escape(h.text) << "</th>";
          o << "</tr>\n";
        }
        for (const auto& row : b.rows) {
          o << "<tr>";
          for (const auto& c : row) {
            o << "<td" << (c.cls.empty() ? "" : " class=\"" + c.cls + "\"") << ">";
            if (c.code && !c.text.empty()) o << "<code>" << html_escape(c.text) << "</code>";
            else o << html_escape(c.text);
            o << "</td>";
          }
          o << "</tr>\n";
        }
        o << "</table>\n";
        break;
      }
      case Block::kSvg: o << "<figure>" << b.svg << "<figcaption>" << html_escape(b.alt) << "</figcaption></figure>\n"; break;
    }
  }
  o << "<p style=\"color:#777;font-size:0.85em\">Written by onyx parity.</p>\n</body></html>\n";
  return o.str();
}

Block heading(const std::string& t, int level = 2) {
  Block b{Block::kHeading};
  b.text = t, b.level = level;
  return b;
}
Block para(const std::string& t) {
  Block b{Block::kPara};
  b.text = t;
  return b;
}

std::vector<Block> build_doc(const ParityResult& r, bool markdown) {
  std::vector<Block> doc;
  doc.push_back(heading("Parity report: " + fs::path(r.model).filename().string(), 1));
  Block v{Block::kVerdict};
  v.text = verdict_line(r);
  v.pass = r.pass();
  doc.push_back(v);

  Block facts{Block::kTable};
  facts.header = {{"", false}, {"", false}};
  auto fact = [&](const std::string& k, const std::string& val, bool code = false) { facts.rows.push_back({{k}, {val, code}}); };
  fact("Model", r.model, true);
  fact("SHA-256", r.model_sha256, true);
  fact("Inputs", r.inputs_dir, true);
  fact("Reference", r.reference_dir + (r.reference_source.empty() ? "" : " (" + r.reference_source + ")"), false);
  fact("Tolerance", "|onyx - ref| <= " + short_num(r.atol) + " + " + short_num(r.rtol) + " * |ref|");
  fact("Samples", std::to_string(r.samples.size()) + " (" + std::to_string(r.passed()) + " within tolerance)");
  fact("Time", fixed(r.seconds, 1) + " s");
  doc.push_back(facts);

  doc.push_back(heading("Outputs"));
  Block t{Block::kTable};
  t.header = {{"output"}, {"samples within tolerance"}, {"max abs error"}, {"mean abs error"}, {"max rel error"},
              {"min cosine"}, {"mean cosine"}, {"top-1 agreement"}, {"worst sample"}};
  for (const auto& o : r.outputs) {
    if (o.samples == 0) {
      t.rows.push_back({{o.name, true}, {"not compared"}, {}, {}, {}, {}, {}, {}, {}});
      continue;
    }
    int64_t compared = o.samples;
    t.rows.push_back({{o.name, true},
                      {std::to_string(o.within) + "/" + std::to_string(compared) + " (" + pct(o.within, compared) + ")", false,
                       o.within == compared ? "pass" : "fail"},
                      {short_num(o.max_abs)},
                      {short_num(o.elements ? o.sum_abs / static_cast<double>(o.elements) : 0)},
                      {short_num(o.max_rel)},
                      {fixed(o.cos_min, 6)},
                      {fixed(compared ? o.cos_sum / static_cast<double>(compared) : 1, 6)},
                      {o.top1_applicable ? pct(o.top1_agree, o.top1_rows) + " (" + std::to_string(o.top1_agree) + "/" +
                                               std::to_string(o.top1_rows) + ")"
                                         : "n/a"},
                      {o.worst_sample, true}});
  }
  doc.push_back(t);
  doc.push_back(para("Relative error is taken where |ref| >= atol. Cosine similarity is per sample over the whole "
                     "output. Top-1 agreement compares the arg-max over the last axis, per row, for outputs whose last "
                     "dim is above 1."));

  doc.push_back(heading("Error histograms"));
  for (const auto& o : r.outputs) {
    if (o.elements == 0) continue;
    Block s{Block::kSvg};
    s.svg = error_histogram_svg(o, r.atol);
    s.svg_name = array_key(o.name);
    s.alt = "Histogram of |onyx - reference| per element for output " + o.name +
            " (log scale in both axes; bars right of the atol line may exceed the tolerance)";
    doc.push_back(s);
  }

  if (r.ctc.enabled) {
    const CtcSummary& c = r.ctc;
    doc.push_back(heading("CTC decoding"));
    doc.push_back(para("Greedy decoding of output " + c.output + " (blank " + std::to_string(c.blank) + ", " +
                       (c.has_alphabet ? "with the alphabet" : "labels as numbers") + ") in onyx and in the reference: " +
                       std::to_string(c.exact) + " of " + std::to_string(c.sequences) + " sequences identical (" +
                       pct(c.exact, c.sequences) + "), character error rate " +
                       pct(static_cast<int64_t>(c.edits), static_cast<int64_t>(c.ref_chars)) + " (" + std::to_string(c.edits) +
                       " edits over " + std::to_string(c.ref_chars) + " reference characters)."));
    if (!c.mismatches.empty()) {
      Block m{Block::kTable};
      m.header = {{"sample"}, {"sequence"}, {"onyx"}, {"reference"}, {"edits"}};
      for (const auto& x : c.mismatches)
        m.rows.push_back({{x.sample, true}, {std::to_string(x.index)}, {x.got, true}, {x.want, true}, {std::to_string(x.distance)}});
      doc.push_back(m);
    }
  }

  if (r.boxes.enabled) {
    const BoxSummary& b = r.boxes;
    doc.push_back(heading("Box decoding"));
    doc.push_back(para("Output " + b.output + " decoded as YOLO-style detections in onyx and in the reference (" +
                       box_settings(b) + "; confidence = objectness * class score, best class per box, per-class NMS). "
                       "Onyx's boxes are matched with the reference's greedily by score, same class, IoU >= " +
                       short_num(b.match_iou) + "."));
    Block t{Block::kTable};
    t.header = {{"images"}, {"images agreeing"}, {"reference boxes"}, {"onyx boxes"}, {"matched"},
                {"recall"}, {"precision"}, {"mean IoU"}, {"lowest IoU"}};
    t.rows.push_back({{std::to_string(b.images)},
                      {std::to_string(b.images_agree) + " (" + pct(b.images_agree, b.images) + ")", false,
                       b.images_agree == b.images ? "pass" : "fail"},
                      {std::to_string(b.total.want)}, {std::to_string(b.total.got)}, {std::to_string(b.total.matched)},
                      {pct_of(b.total.recall())}, {pct_of(b.total.precision())}, {iou_text(b.total.mean_iou())},
                      {b.total.matched ? fixed(b.min_iou, 4) : "n/a"}});
    doc.push_back(t);
    doc.push_back(para("Recall: share of the reference's boxes that onyx found; precision: share of onyx's boxes "
                       "that the reference has; both are 100% when there is nothing to find or nothing found. "
                       "An image agrees when every box on both sides is matched."));
    if (!b.differences.empty()) {
      Block m{Block::kTable};
      m.header = {{"sample"}, {"image"}, {"reference boxes"}, {"onyx boxes"}, {"matched"}, {"mean IoU"}};
      for (const auto& x : b.differences)
        m.rows.push_back({{x.sample, true}, {std::to_string(x.image)}, {std::to_string(x.want)}, {std::to_string(x.got)},
                          {std::to_string(x.matched)}, {iou_text(x.mean_iou)}});
      doc.push_back(heading(b.differences.size() < 50 ? "Images whose boxes differ" : "Images whose boxes differ (the first 50)", 3));
      doc.push_back(m);
    }
  }

  doc.push_back(heading("Worst samples"));
  doc.push_back(para("Ranked by the largest |onyx - ref| / (atol + rtol * |ref|) over all elements of all outputs; "
                     "above 1 is outside tolerance."));
  Block w{Block::kTable};
  w.header = {{"sample"}, {"verdict"}, {"error / tolerance"}, {"where"}};
  for (const SampleResult* s : r.worst(static_cast<size_t>(std::max(1, r.worst_count))))
    w.rows.push_back({{s->name, true}, {s->pass ? "pass" : "FAIL", false, s->pass ? "pass" : "fail"},
                      {s->error.empty() ? short_num(s->ratio) : "-"}, {sample_detail(r, *s)}});
  doc.push_back(w);

  bool any_fail = false;
  for (const auto& s : r.samples) any_fail = any_fail || !s.pass;
  if (any_fail) {
    doc.push_back(heading("Samples outside tolerance"));
    Block f{Block::kTable};
    f.header = {{"sample"}, {"error / tolerance"}, {"what"}};
    for (const auto& s : r.samples)
      if (!s.pass) f.rows.push_back({{s.name, true}, {s.error.empty() ? short_num(s.ratio) : "-"}, {sample_detail(r, s)}});
    doc.push_back(f);
  }

  if (r.samples.size() <= 2000) {
    doc.push_back(heading("All samples"));
    Block all{Block::kTable};
    all.header = {{"sample"}, {"verdict"}, {"error / tolerance"}, {"onyx run (ms)"}};
    for (const auto& o : r.outputs) all.header.push_back({"max abs " + o.name});
    for (const auto& s : r.samples) {
      std::vector<Cell> row = {{s.name, true}, {s.pass ? "pass" : "FAIL", false, s.pass ? "pass" : "fail"},
                               {s.error.empty() ? short_num(s.ratio) : "error"}, {fixed(s.run_ms, 1)}};
      for (size_t i = 0; i < r.outputs.size(); ++i)
        row.push_back({i < s.outputs.size() && s.outputs[i].compared ? short_num(s.outputs[i].max_abs) : "-"});
      all.rows.push_back(row);
    }
    doc.push_back(all);
  }
  if (!r.notes.empty()) {
    doc.push_back(heading("Notes"));
    Block l{Block::kList};
    l.items = r.notes;
    doc.push_back(l);
  }
  (void)markdown;
  return doc;
}

}  // namespace

std::string error_histogram_svg(const OutputSummary& o, double atol) {
  constexpr int kW = 720, kH = 300, kL = 60, kR = 20, kT = 40, kB = 70;
  constexpr int n = ErrorHistogram::kBins;
  const double plot_w = kW - kL - kR, plot_h = kH - kT - kB, bw = plot_w / n;
  int64_t max_count = 1;
  for (int64_t c : o.hist.counts) max_count = std::max(max_count, c);
  double top = std::ceil(std::log10(static_cast<double>(max_count) + 1));
  if (top < 1) top = 1;
  auto y_of = [&](double count) { return kT + plot_h - plot_h * std::log10(count + 1) / top; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW << " " << kH
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<rect width=\"" << kW << "\" height=\"" << kH << "\" fill=\"#fff\"/>\n";
  s << "<text x=\"" << kW / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">|onyx - reference| per element: "
    << html_escape(o.name) << " (" << o.elements << " elements)</text>\n";
  for (int e = 0; e <= static_cast<int>(top); ++e) {  // y grid: 1, 10, 100, ...
    double y = y_of(std::pow(10.0, e));
    s << "<line x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << y << "\" y2=\"" << y << "\" stroke=\"#eee\"/>";
    s << "<text x=\"" << kL - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << (e < 4 ? std::to_string(static_cast<int>(std::pow(10.0, e))) : "1e" + std::to_string(e)) << "</text>\n";
  }
  double atol_x = -1;
  if (atol > 0) {
    double pos = std::log10(atol) - ErrorHistogram::kMinExp + 2;
    if (pos >= 2 && pos <= n - 2) atol_x = kL + bw * pos;
  }
  for (int b = 0; b < n; ++b) {
    double x = kL + bw * b;
    int64_t c = o.hist.counts[b];
    std::string color = b == n - 1 ? "#cf222e" : b == 0 ? "#8c959f" : (atol_x >= 0 && x + bw <= atol_x + 0.01) ? "#2da44e" : "#e3a008";
    if (atol <= 0 && b != 0 && b != n - 1) color = "#e3a008";
    if (c > 0) {
      double y = y_of(static_cast<double>(c));
      s << "<rect x=\"" << x + 1 << "\" y=\"" << y << "\" width=\"" << bw - 2 << "\" height=\"" << kT + plot_h - y
        << "\" fill=\"" << color << "\"><title>" << ErrorHistogram::label(b) << ": " << c << " elements</title></rect>";
      s << "<text x=\"" << x + bw / 2 << "\" y=\"" << y - 3 << "\" text-anchor=\"middle\" font-size=\"9\">" << c << "</text>\n";
    }
    double lx = x + bw / 2, ly = kT + plot_h + 8;
    s << "<text x=\"" << lx << "\" y=\"" << ly << "\" text-anchor=\"end\" transform=\"rotate(-45 " << lx << " " << ly << ")\">"
      << html_escape(ErrorHistogram::label(b)) << "</text>\n";
  }
  s << "<line x1=\"" << kL << "\" x2=\"" << kW - kR << "\" y1=\"" << kT + plot_h << "\" y2=\"" << kT + plot_h << "\" stroke=\"#333\"/>\n";
  if (atol_x >= 0)
    s << "<line x1=\"" << atol_x << "\" x2=\"" << atol_x << "\" y1=\"" << kT - 5 << "\" y2=\"" << kT + plot_h
      << "\" stroke=\"#cf222e\" stroke-dasharray=\"4 3\"/><text x=\"" << atol_x + 4 << "\" y=\"" << kT + 5
      << "\" fill=\"#cf222e\">atol " << short_num(atol) << "</text>\n";
  s << "<text x=\"" << kL + plot_w / 2 << "\" y=\"" << kH - 6
    << "\" text-anchor=\"middle\">absolute error (bin = [value, next value)); counts on a log scale</text>\n";
  s << "</svg>";
  return s.str();
}

nlohmann::json parity_json(const ParityResult& r) {
  using nlohmann::json;
  json j;
  j["tool"] = "onyx parity";
  j["model"] = r.model;
  j["model_file"] = fs::path(r.model).filename().string();
  j["model_sha256"] = r.model_sha256;
  j["inputs"] = r.inputs_dir;
  j["reference"] = r.reference_dir;
  j["reference_source"] = r.reference_source;
  j["rtol"] = r.rtol;
  j["atol"] = r.atol;
  j["samples"] = r.samples.size();
  j["passed"] = r.passed();
  j["failed"] = static_cast<int64_t>(r.samples.size()) - r.passed();
  j["pass"] = r.pass();
  j["date"] = r.date;
  j["seconds"] = r.seconds;
  j["outputs"] = json::array();
  for (const auto& o : r.outputs) {
    json x;
    x["name"] = o.name;
    x["samples"] = o.samples;
    x["within_tolerance"] = o.within;
    x["within_share"] = o.samples ? static_cast<double>(o.within) / static_cast<double>(o.samples) : 0.0;
    x["elements"] = o.elements;
    x["elements_outside"] = o.outside;
    x["max_abs_error"] = num(o.max_abs);
    x["mean_abs_error"] = num(o.elements ? o.sum_abs / static_cast<double>(o.elements) : 0);
    x["max_rel_error"] = num(o.max_rel);
    x["cosine_min"] = num(o.cos_min);
    x["cosine_mean"] = num(o.samples ? o.cos_sum / static_cast<double>(o.samples) : 1);
    x["top1_agreement"] = o.top1_applicable ? json(static_cast<double>(o.top1_agree) / static_cast<double>(o.top1_rows)) : json(nullptr);
    x["top1_rows"] = o.top1_rows;
    x["worst_sample"] = o.worst_sample;
    json bins = json::array(), counts = json::array();
    for (int b = 0; b < ErrorHistogram::kBins; ++b) bins.push_back(ErrorHistogram::label(b)), counts.push_back(o.hist.counts[b]);
    x["abs_error_histogram"] = {{"bins", bins}, {"counts", counts}};
    j["outputs"].push_back(x);
  }
  if (r.ctc.enabled) {
    const CtcSummary& c = r.ctc;
    json x;
    x["output"] = c.output;
    x["blank"] = c.blank;
    x["alphabet"] = c.has_alphabet;
    x["sequences"] = c.sequences;
    x["exact_matches"] = c.exact;
    x["exact_match_rate"] = c.sequences ? static_cast<double>(c.exact) / static_cast<double>(c.sequences) : 0.0;
    x["edits"] = c.edits;
    x["reference_chars"] = c.ref_chars;
    x["cer"] = c.ref_chars ? static_cast<double>(c.edits) / static_cast<double>(c.ref_chars) : (c.edits ? 1.0 : 0.0);
    x["mismatches"] = json::array();
    for (const auto& m : c.mismatches)
      x["mismatches"].push_back({{"sample", m.sample}, {"sequence", m.index}, {"onyx", m.got}, {"reference", m.want}, {"edits", m.distance}});
    j["ctc"] = x;
  } else {
    j["ctc"] = nullptr;
  }
  auto iou_json = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  auto match_json = [&](json& x, const post::BoxMatch& m) {
    x["reference_boxes"] = m.want;
    x["onyx_boxes"] = m.got;
    x["matched"] = m.matched;
    x["recall"] = m.recall();
    x["precision"] = m.precision();
    x["mean_iou"] = iou_json(m.mean_iou());
  };
  if (r.boxes.enabled) {
    const BoxSummary& b = r.boxes;
    json x;
    x["output"] = b.output;
    x["box_format"] = format_name(b.options.format);
    x["score_threshold"] = b.options.score_threshold;
    x["iou_threshold"] = b.options.iou_threshold;
    x["max_detections"] = b.options.max_detections;
    x["match_iou"] = b.match_iou;
    x["images"] = b.images;
    x["images_agree"] = b.images_agree;
    match_json(x, b.total);
    x["min_iou"] = b.total.matched ? json(b.min_iou) : json(nullptr);
    x["differences"] = json::array();
    for (const auto& d : b.differences)
      x["differences"].push_back({{"sample", d.sample}, {"image", d.image}, {"reference_boxes", d.want},
                                  {"onyx_boxes", d.got}, {"matched", d.matched}, {"mean_iou", iou_json(d.mean_iou)}});
    j["boxes"] = x;
  } else {
    j["boxes"] = nullptr;
  }
  auto sample_json = [&](const SampleResult& s) {
    json x;
    x["name"] = s.name;
    x["pass"] = s.pass;
    x["ratio"] = num(s.ratio);
    if (!s.error.empty()) x["error"] = s.error;
    x["worst_output"] = s.worst_output;
    x["run_ms"] = s.run_ms;
    json outs = json::object();
    for (size_t i = 0; i < s.outputs.size() && i < r.outputs.size(); ++i) {
      const OutputCompare& c = s.outputs[i];
      json o;
      o["compared"] = c.compared;
      if (!c.problem.empty()) o["problem"] = c.problem;
      if (c.compared) {
        o["max_abs_error"] = num(c.max_abs);
        o["mean_abs_error"] = num(c.mean_abs);
        o["max_rel_error"] = num(c.max_rel);
        o["cosine"] = num(c.cosine);
        o["ratio"] = num(c.ratio);
        o["elements_outside"] = c.outside;
        o["worst_at"] = c.worst_at;
        o["worst_onyx"] = num(c.worst_got);
        o["worst_reference"] = num(c.worst_want);
        if (c.top1_rows) o["top1_agreement"] = static_cast<double>(c.top1_agree) / static_cast<double>(c.top1_rows);
      }
      outs[r.outputs[i].name] = o;
    }
    x["outputs"] = outs;
    if (s.boxes.decoded) {
      json b;
      b["images"] = s.boxes.images;
      b["images_agree"] = s.boxes.images_agree;
      match_json(b, s.boxes.match);
      b["min_iou"] = s.boxes.match.matched ? json(s.boxes.min_iou) : json(nullptr);
      x["boxes"] = b;
    }
    return x;
  };
  j["worst_samples"] = json::array();
  for (const SampleResult* s : r.worst(static_cast<size_t>(std::max(1, r.worst_count)))) j["worst_samples"].push_back(s->name);
  j["sample_results"] = json::array();
  for (const auto& s : r.samples) j["sample_results"].push_back(sample_json(s));
  j["notes"] = r.notes;
  return j;
}

std::string parity_text(const ParityResult& r) {
  std::ostringstream o;
  o << "model      " << r.model << "\n";
  o << "reference  " << r.reference_dir << (r.reference_source.empty() ? "" : " (" + r.reference_source + ")") << "\n";
  o << "samples    " << r.samples.size() << ", rtol " << short_num(r.rtol) << ", atol " << short_num(r.atol) << ", "
    << fixed(r.seconds, 1) << " s\n\n";
  size_t w = 6;
  for (const auto& x : r.outputs) w = std::max(w, x.name.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-9s  %-9s  %-9s  %-9s  %-9s  %s\n", static_cast<int>(w), "output", "within",
                "max abs", "mean abs", "max rel", "cos min", "top-1");
  o << line;
  for (const auto& x : r.outputs) {
    if (x.samples == 0) {
      o << x.name << std::string(w - x.name.size(), ' ') << "  not compared\n";
      continue;
    }
    std::string within = std::to_string(x.within) + "/" + std::to_string(x.samples);
    std::string top1 = x.top1_applicable ? pct(x.top1_agree, x.top1_rows) : "n/a";
    std::snprintf(line, sizeof line, "%-*s  %-9s  %-9s  %-9s  %-9s  %-9s  %s\n", static_cast<int>(w), x.name.c_str(),
                  within.c_str(), short_num(x.max_abs).c_str(),
                  short_num(x.elements ? x.sum_abs / static_cast<double>(x.elements) : 0).c_str(),
                  short_num(x.max_rel).c_str(), fixed(x.cos_min, 6).c_str(), top1.c_str());
    o << line;
  }
  if (r.ctc.enabled) {
    const CtcSummary& c = r.ctc;
    o << "\nCTC (" << c.output << ", blank " << c.blank << "): " << c.exact << "/" << c.sequences << " sequences identical ("
      << pct(c.exact, c.sequences) << "), CER " << pct(static_cast<int64_t>(c.edits), static_cast<int64_t>(c.ref_chars)) << "\n";
    for (size_t i = 0; i < c.mismatches.size() && i < 5; ++i)
      o << "  " << c.mismatches[i].sample << "[" << c.mismatches[i].index << "]: onyx \"" << c.mismatches[i].got
        << "\", reference \"" << c.mismatches[i].want << "\"\n";
  }
  if (r.boxes.enabled) {
    const BoxSummary& b = r.boxes;
    o << "\nboxes (" << b.output << ", " << box_settings(b) << "), matched at IoU >= " << short_num(b.match_iou) << ":\n"
      << "  " << b.images << " images, " << b.images_agree << " agree; " << box_counts(b.total) << "; mean IoU "
      << iou_text(b.total.mean_iou()) << (b.total.matched ? ", lowest " + fixed(b.min_iou, 4) : "") << "\n";
    for (size_t i = 0; i < b.differences.size() && i < 5; ++i) {
      const auto& d = b.differences[i];
      o << "  " << d.sample << "[" << d.image << "]: reference " << d.want << " boxes, onyx " << d.got << ", matched "
        << d.matched << ", mean IoU " << iou_text(d.mean_iou) << "\n";
    }
  }
  o << "\nworst samples (|error| / tolerance; above 1 fails):\n";
  for (const SampleResult* s : r.worst(static_cast<size_t>(std::max(1, r.worst_count))))
    o << "  " << (s->pass ? "pass " : "FAIL ") << s->name << "  " << (s->error.empty() ? short_num(s->ratio) + "  " : "")
      << sample_detail(r, *s) << "\n";
  for (const auto& n : r.notes) o << "note: " << n << "\n";
  o << verdict_line(r) << "\n";
  return o.str();
}

void write_parity_report(const ParityResult& r, const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  bool md = ext == ".md";
  if (!md && ext != ".html" && ext != ".htm")
    fail_arg("report '{}': the report is markdown (.md) or HTML (.html)", path);
  auto doc = build_doc(r, md);
  std::vector<std::pair<std::string, std::string>> files;
  std::string text;
  if (md) {
    fs::path p(path);
    text = render_md(doc, p.stem().string(), p.parent_path().string(), files);
  } else {
    text = render_html(doc, "Parity report: " + fs::path(r.model).filename().string());
  }
  files.emplace_back(path, text);
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  for (const auto& [file, content] : files) {
    std::ofstream f(file, std::ios::binary);
    if (!f) fail(ErrorCode::kIo, "cannot write the report '{}'", file);
    f << content;
    if (!f) fail(ErrorCode::kIo, "error writing the report '{}'", file);
  }
}

}  // namespace onyx::cli
