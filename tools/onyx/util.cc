#include "tools/onyx/util.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "base/error.h"
#include "base/half.h"
#include "base/mmap_file.h"
#include "format/loader.h"
#include "format/npy.h"

namespace onyx::cli {

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
      default: t.data<uint8_t>()[i] = static_cast<uint8_t>(small(rng)); break;
    }
  }
  return t;
}

Value load_input_file(const std::string& path, const IoInfo& io, const ir::ValueInfo& vi) {
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") return Value(format::read_npy_file(path));
  if (path.size() >= 3 && path.substr(path.size() - 3) == ".pb") return format::read_value_file(path, vi.type);
  fail_arg("input '{}': file '{}' must end in .npy (numpy) or .pb (TensorProto)", io.name, path);
}

}  // namespace

void add_feed_options(CLI::App* sub, FeedSpec& spec) {
  sub->add_option("--input,-i", spec.inputs, "NAME=FILE: an input from a .npy or .pb file (repeatable)");
  sub->add_flag("--random-inputs", spec.random, "make every input not given with --input at random");
  sub->add_option("--seed", spec.seed, "seed for --random-inputs (default 0)");
  sub->add_option("--dim", spec.dims, "SYMBOL=VALUE: value of a symbolic dim for --random-inputs (repeatable)");
}

Feeds make_feeds(const Session& session, const FeedSpec& spec) {
  std::map<std::string, int64_t> dim_values;
  for (const auto& d : spec.dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      fail_arg("--dim expects SYMBOL=VALUE, got '{}'", d);
    try {
      dim_values[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    } catch (...) {
      fail_arg("--dim {}: '{}' is not a number", d.substr(0, eq), d.substr(eq + 1));
    }
  }
  const ir::Graph& g = *session.model().graph;
  auto vinfo = [&](const std::string& name) -> const ir::ValueInfo& {
    for (const auto& v : g.inputs)
      if (v.name == name) return v;
    fail_arg("unknown input '{}'", name);
  };
  Feeds feeds;
  std::map<std::string, bool> given;
  for (const auto& s : spec.inputs) {
    auto eq = s.find('=');
    if (eq == std::string::npos) fail_arg("--input expects NAME=FILE, got '{}'", s);
    std::string name = s.substr(0, eq), path = s.substr(eq + 1);
    const IoInfo* io = nullptr;
    for (const auto& i : session.inputs())
      if (i.name == name) io = &i;
    if (!io) {
      std::string names;
      for (const auto& i : session.inputs()) names += (names.empty() ? "" : ", ") + i.name;
      fail_arg("--input {}: the model has no input of that name (its inputs: {})", name, names);
    }
    feeds.values.emplace_back(name, load_input_file(path, *io, vinfo(name)));
    given[name] = true;
  }
  std::mt19937_64 rng(spec.seed);
  for (const auto& io : session.inputs()) {
    if (given.count(io.name) || io.has_default) continue;
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
    try {
      feeds.values.emplace_back(io.name, Value(random_tensor(io.dtype, dims, rng)));
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
