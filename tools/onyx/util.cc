#include "tools/onyx/util.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "base/error.h"
#include "runtime/run_context.h"
#include "base/half.h"
#include "base/mmap_file.h"
#include "format/loader.h"
#include "format/npy.h"
#include "format/npz.h"
#include "format/value_io.h"
#include "tools/onyx/dataset.h"
#include "tools/onyx/zlib_inflate.h"
#include "runtime/session_internal.h"

namespace onyx::cli {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path, const char* what) {
  return read_regular_file(path, what);
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string safe_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "output";
  return s;
}

nlohmann::json value_info_json(const ir::ValueInfo& v) {
  nlohmann::json j;
  j["name"] = v.name;
  j["type"] = v.type.str();
  const ir::TypeInfo* t = &v.type;
  while (t->inner) t = t->inner.get();
  j["dtype"] = std::string(dtype_name(t->elem));
  if (v.type.is_tensor() && v.type.has_shape) {
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& d : v.type.shape) {
      if (d.known()) dims.push_back(d.value);
      else if (!d.param.empty()) dims.push_back(d.param);
      else dims.push_back(nullptr);
    }
    j["shape"] = dims;
  } else {
    j["shape"] = nullptr;
  }
  return j;
}

const nlohmann::json* member(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

namespace {

Tensor random_tensor(DType dt, const Dims& dims, std::mt19937_64& rng) {
  Tensor t(dt, dims);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (dt) {
      case DType::kFloat: t.data<float>()[i] = static_cast<float>(u(rng)); break;
      case DType::kDouble: t.data<double>()[i] = u(rng); break;
      case DType::kFloat16: t.data<Float16>()[i] = Float16(static_cast<float>(u(rng))); break;
      case DType::kBFloat16: t.data<BFloat16>()[i] = BFloat16(static_cast<float>(u(rng))); break;
      case DType::kInt64: t.data<int64_t>()[i] = small(rng); break;
      case DType::kInt32: t.data<int32_t>()[i] = small(rng); break;
      case DType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(small(rng)); break;
      case DType::kUint16: t.data<uint16_t>()[i] = static_cast<uint16_t>(small(rng)); break;
      case DType::kUint32: t.data<uint32_t>()[i] = static_cast<uint32_t>(small(rng)); break;
      case DType::kUint64: t.data<uint64_t>()[i] = static_cast<uint64_t>(small(rng)); break;
      case DType::kBool: t.data<uint8_t>()[i] = small(rng) & 1; break;
      case DType::kString: t.data<std::string>()[i] = std::to_string(small(rng)); break;
      default: {  // 8-bit types, float8 bits, and 4-/2-bit values within their range
        int v = small(rng), bits = dtype_bits(dt);
        if (bits < 8) v = v % (1 << bits) - (dt == DType::kInt4 || dt == DType::kInt2 ? 1 << (bits - 1) : 0);
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      }
    }
  }
  return t;
}

/// Plain decimal text: an optional '-' then digits. Sets the magnitude (saturating
/// past 2^64) and the sign; false for anything else.
bool decimal(const std::string& text, bool& negative, uint64_t& magnitude, bool& overflow) {
  size_t i = 0;
  negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  if (i >= text.size()) return false;
  magnitude = 0;
  overflow = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    auto d = static_cast<uint64_t>(c - '0');
    if (magnitude > (UINT64_MAX - d) / 10) overflow = true;
    else magnitude = magnitude * 10 + d;
  }
  return true;
}

/// "in [1, 256]", or ">= 1" where the upper bound is the type's.
std::string range_text(const std::string& lo, const std::string& hi, bool open_above) {
  return open_above ? ">= " + lo : "in [" + lo + ", " + hi + "]";
}

/// Why `text` is not an integer in [lo, hi] ("" when it is); `canon` gets it without
/// leading zeros. Bounds are given as sign and magnitude so one check serves both types.
std::string integer_problem(const std::string& text, bool lo_neg, uint64_t lo_mag, uint64_t hi, std::string& canon,
                            const std::string& range) {
  bool neg, overflow;
  uint64_t mag;
  if (!decimal(text, neg, mag, overflow))
    return "'" + text + "' is not an integer (decimal digits only, e.g. 64)";
  bool below = neg ? (!lo_neg || mag > lo_mag) && mag != 0 : (lo_neg ? false : mag < lo_mag);
  bool above = !neg && (overflow || mag > hi);
  if (neg && overflow) below = true;
  if (below || above) return "'" + text + "' is out of range: it must be " + range;
  canon = (neg && mag != 0 ? "-" : "") + std::to_string(mag);
  return "";
}

}  // namespace

int64_t parse_int(const std::string& text, const std::string& what, int64_t lo, int64_t hi) {
  std::string canon, range = range_text(std::to_string(lo), std::to_string(hi), false);
  std::string p = integer_problem(text, lo < 0, lo < 0 ? 0 - static_cast<uint64_t>(lo) : static_cast<uint64_t>(lo),
                                  hi < 0 ? 0 : static_cast<uint64_t>(hi), canon, range);
  if (!p.empty()) fail_arg("{}: {}", what, p);
  return std::stoll(canon);
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  std::string range = range_text(std::to_string(lo), std::to_string(hi), hi == INT64_MAX);
  return CLI::Validator(
      [lo, hi, range](std::string& s) {
        std::string canon;
        std::string p = integer_problem(s, lo < 0, lo < 0 ? 0 - static_cast<uint64_t>(lo) : static_cast<uint64_t>(lo),
                                        hi < 0 ? 0 : static_cast<uint64_t>(hi), canon, range);
        if (p.empty()) s = canon;
        return p;
      },
      lo == INT64_MIN && hi == INT64_MAX ? std::string() : "INT " + range, "integer_in");
}

CLI::Validator unsigned_in(uint64_t lo, uint64_t hi) {
  std::string range = range_text(std::to_string(lo), std::to_string(hi), hi == UINT64_MAX);
  return CLI::Validator(
      [lo, hi, range](std::string& s) {
        std::string canon;
        std::string p = integer_problem(s, false, lo, hi, canon, range);
        if (p.empty()) s = canon;
        return p;
      },
      lo == 0 && hi == UINT64_MAX ? std::string() : "UINT " + range, "unsigned_in");
}

CLI::Validator number_in(double lo, double hi) {
  std::string range = range_text(fmt::format("{}", lo), fmt::format("{}", hi), hi == DBL_MAX);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        // Decimal only: digits, one '.', an exponent; strtod alone would take "inf", "nan", "0x1p3" and " 1".
        static const std::regex kNumber(R"(-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)");
        if (!std::regex_match(s, kNumber)) return "'" + s + "' is not a number (e.g. 0.5 or 1e-3)";
        double v = std::strtod(s.c_str(), nullptr);
        if (!std::isfinite(v)) return "'" + s + "' is too large";
        if (v < lo || v > hi) return "'" + s + "' is out of range: it must be " + range;
        return std::string();
      },
      lo == -DBL_MAX && hi == DBL_MAX ? std::string() : "NUMBER " + range, "number_in");
}

Value read_input_value(const std::string& path, const ir::ValueInfo& vi, std::vector<std::string>& notes) {
  const std::string what = "input '" + vi.name + "'";
  Value v;
  if (fs::path(path).extension() == ".npz") {
    auto arrays = format::read_npz_file(path, zlib_inflate);
    std::string key = array_key(vi.name);
    auto type_of = [&](const std::string& k) -> const ir::TypeInfo* {
      return k == vi.name || k == key ? &vi.type : nullptr;
    };
    auto values = npz_values(std::move(arrays), type_of, what + " from '" + path + "'");
    const SampleValue* hit = nullptr;
    for (const auto& x : values)
      if (x.name == vi.name || x.name == key) hit = &x;
    if (!hit && values.size() == 1) {
      hit = &values[0];
      v = format::value_as_declared(hit->value, vi.type, what);
    } else if (!hit) {
      std::string names;
      for (const auto& x : values) names += (names.empty() ? "" : ", ") + x.name;
      fail_arg("{}: '{}' has no array named '{}' (it has: {})", what, path, key, names.empty() ? "none" : names);
    } else {
      v = hit->value;
    }
  } else {
    v = format::read_value_path(path, vi.type, what);
  }
  const ir::TypeInfo* t = &vi.type;
  while ((t->kind == ir::TypeInfo::Kind::kOptional || t->kind == ir::TypeInfo::Kind::kSequence) && t->inner)
    t = t->inner.get();
  std::string bits = format::npy_bits_note(t->elem);
  bool raw = v.is_tensor() ? v.tensor().dtype() == t->elem : v.is_sequence() && v.seq_dtype() == t->elem;
  if (!bits.empty() && raw && fs::path(path).extension() != ".pb")
    notes.push_back(what + ": '" + path + "' read as " + std::string(dtype_name(t->elem)) + " (numpy has no " +
                    std::string(dtype_name(t->elem)) + "; a .npy holds " + bits + ")");
  return v;
}

void add_feed_options(CLI::App* sub, FeedSpec& spec) {
  sub->add_option("--input,-i", spec.inputs,
                  "NAME=PATH: an input from a .npy, .npz or .pb file, a folder (a sequence) or a NAME.none "
                  "marker (an empty optional); repeatable");
  sub->add_flag("--random-inputs", spec.random, "make every input not given with --input at random");
  sub->add_option("--seed", spec.seed, "seed for --random-inputs (default 0)")->transform(unsigned_in(0, UINT64_MAX));
  sub->add_option("--dim", spec.dims, "SYMBOL=VALUE: value of a symbolic dim for --random-inputs (repeatable)");
}

Feeds make_feeds(const Session& session, const FeedSpec& spec, uint64_t max_tensor_bytes) {
  const ir::Graph& g = *session_model(session).graph;
  std::set<std::string> symbols;
  for (const auto& io : session.inputs())
    for (const auto& s : io.dim_names)
      if (!s.empty()) symbols.insert(s);
  auto list = [](const auto& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("none") : out;
  };
  std::map<std::string, int64_t> dim_values;
  for (const auto& d : spec.dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) fail_arg("--dim expects SYMBOL=VALUE, got '{}'", d);
    std::string sym = d.substr(0, eq);
    if (!symbols.count(sym))
      fail_arg("--dim {}: no input of the model has a dim named '{}' (its symbolic dims: {})", sym, sym, list(symbols));
    if (dim_values.count(sym)) fail_arg("--dim {} is given twice", sym);
    dim_values[sym] = parse_int(d.substr(eq + 1), "--dim " + sym, 0, INT32_MAX);
  }
  std::vector<std::string> input_names;
  for (const auto& i : session.inputs()) input_names.push_back(i.name);
  Feeds feeds;
  std::set<std::string> given;
  for (const auto& s : spec.inputs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      fail_arg("--input expects NAME=PATH, got '{}'", s);
    std::string name = s.substr(0, eq), path = s.substr(eq + 1);
    const ir::ValueInfo* vi = nullptr;
    for (const auto& v : g.inputs)
      if (v.name == name) vi = &v;
    if (!vi) fail_arg("--input {}: the model has no input of that name (its inputs: {})", name, list(input_names));
    if (!given.insert(name).second) fail_arg("--input {} is given twice", name);
    feeds.values.emplace_back(name, read_input_value(path, *vi, feeds.notes));
  }
  std::mt19937_64 rng(spec.seed);
  for (const IoInfo& io : session.inputs()) {
    if (given.count(io.name) || io.has_default) continue;
    bool optional = false;
    for (const auto& v : g.inputs) optional |= v.name == io.name && v.type.kind == ir::TypeInfo::Kind::kOptional;
    if (optional && !(spec.random && io.is_tensor)) {
      feeds.notes.push_back("optional input '" + io.name + "' is not given: it is left empty");
      continue;
    }
    if (!spec.random)
      fail_arg("input '{}' ({}) is not given: pass --input {}=FILE.npy, or --random-inputs", io.name, io.type, io.name);
    if (!io.is_tensor) fail_arg("input '{}' is a {}: --random-inputs makes tensors only", io.name, io.type);
    Dims dims;
    if (!io.has_shape) fail_arg("input '{}' has no declared shape; give it with --input", io.name);
    for (size_t k = 0; k < io.dims.size(); ++k) {
      if (io.dims[k] >= 0) {
        dims.push_back(io.dims[k]);
        continue;
      }
      const std::string& sym = io.dim_names[k];
      auto it = dim_values.find(sym);
      if (it == dim_values.end()) {
        feeds.notes.push_back("input '" + io.name + "' dim " + std::to_string(k) + " ('" + (sym.empty() ? "?" : sym) +
                              "') set to 1; fix it with --dim " + (sym.empty() ? "NAME" : sym) + "=N");
        dims.push_back(1);
      } else {
        dims.push_back(it->second);
      }
    }
    uint64_t count = 1, bytes = 0;
    bool fits = true;
    for (int64_t d : dims) fits = fits && !__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
    fits = fits && !__builtin_mul_overflow(count, static_cast<uint64_t>(dtype_size(io.dtype)), &bytes);
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) bytes = 0, fits = true;
    if (max_tensor_bytes && (!fits || bytes > max_tensor_bytes))
      fail(ErrorCode::kLimit,
           "input '{}' ({}): --random-inputs would make a {}{} tensor of {}, more than the largest "
           "tensor allowed (--max-tensor-bytes, {}); choose smaller --dim values",
           io.name, io.type, dtype_name(io.dtype), dims_str(dims), fits ? runtime::format_bytes(bytes) : "over 16 EiB",
           runtime::format_bytes(max_tensor_bytes));
    try {
      feeds.values.emplace_back(io.name, Value(random_tensor(io.dtype, dims, rng)));
    } catch (const std::bad_alloc&) {
      fail_arg("input '{}': a random {} tensor of shape {} does not fit in memory; choose smaller --dim values",
               io.name, dtype_name(io.dtype), dims_str(dims));
    } catch (const Error& e) {
      throw Error(e.code(),
                  fmt::format("input '{}' ({}): --random-inputs: {}", io.name, io.type, e.what()));
    }
  }
  return feeds;
}

Progress::Progress(size_t total, bool enabled)
    : total_(total), enabled_(enabled && isatty(STDERR_FILENO)), start_(Clock::now()) {}

namespace {
std::string fmt_secs(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}
}  // namespace

void Progress::update(size_t done, const std::string& current) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (done != 0 && done != total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  if (done > total_) total_ = done;
  double el = std::chrono::duration<double>(now - start_).count();
  std::string eta = done ? fmt_secs(el / static_cast<double>(done) * static_cast<double>(total_ - done)) : "?";
  std::string name = current.size() > 30 ? current.substr(0, 27) + "..." : current;
  std::fprintf(stderr, "\r\033[K[%zu/%zu] %3.0f%%  elapsed %s  ETA %s  %s", done, total_,
               total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0, fmt_secs(el).c_str(),
               eta.c_str(), name.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_) std::fprintf(stderr, "\r\033[K"), std::fflush(stderr);
}

}  // namespace onyx::cli
