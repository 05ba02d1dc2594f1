// onyx run MODEL: run a model on inputs from files or random inputs, write outputs as .npy.
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "base/error.h"
#include "base/half.h"
#include "format/loader.h"
#include "format/npy.h"
#include "ir/graph.h"
#include "onyx/session.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  bool random = false;
  uint64_t seed = 0;
  std::string output_dir = ".";
  int threads = 1;
  bool json = false;
};

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

int run_run(const RunArgs& a) {
  SessionOptions so;
  so.threads = a.threads;
  auto t0 = std::chrono::steady_clock::now();
  auto session = Session::open(a.model, so);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::map<std::string, int64_t> dim_values;
  for (const auto& d : a.dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      fail_arg("--dim expects SYMBOL=VALUE, got '{}'", d);
    try {
      dim_values[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    } catch (...) {
      fail_arg("--dim {}: '{}' is not a number", d.substr(0, eq), d.substr(eq + 1));
    }
  }
  const ir::Graph& g = *session->model().graph;
  auto vinfo = [&](const std::string& name) -> const ir::ValueInfo& {
    for (const auto& v : g.inputs)
      if (v.name == name) return v;
    fail_arg("unknown input '{}'", name);
  };
  std::vector<std::pair<std::string, Value>> feeds;
  std::map<std::string, bool> given;
  for (const auto& spec : a.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) fail_arg("--input expects NAME=FILE, got '{}'", spec);
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    const IoInfo* io = nullptr;
    for (const auto& i : session->inputs())
      if (i.name == name) io = &i;
    if (!io) {
      std::string names;
      for (const auto& i : session->inputs()) names += (names.empty() ? "" : ", ") + i.name;
      fail_arg("--input {}: the model has no input of that name (its inputs: {})", name, names);
    }
    feeds.emplace_back(name, load_input_file(path, *io, vinfo(name)));
    given[name] = true;
  }
  std::mt19937_64 rng(a.seed);
  std::vector<std::string> notes;
  for (const auto& io : session->inputs()) {
    if (given.count(io.name) || io.has_default) continue;
    if (!a.random)
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
        notes.push_back("input '" + io.name + "' dim " + std::to_string(k) + " ('" + (sym.empty() ? "?" : sym) +
                        "') set to 1; fix it with --dim " + (sym.empty() ? "NAME" : sym) + "=N");
        dims.push_back(1);
      } else {
        dims.push_back(it->second);
      }
    }
    feeds.emplace_back(io.name, Value(random_tensor(io.dtype, dims, rng)));
  }
  if (!a.json)
    for (const auto& n : notes) std::cerr << "onyx: note: " << n << "\n";

  auto t1 = std::chrono::steady_clock::now();
  std::vector<Value> outs = session->run(feeds);
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();

  std::error_code ec;
  fs::create_directories(a.output_dir, ec);
  if (ec) fail(ErrorCode::kIo, "cannot create output folder '{}': {}", a.output_dir, ec.message());
  nlohmann::json j;
  j["model"] = a.model;
  j["load_ms"] = load_ms;
  j["run_ms"] = run_ms;
  j["threads"] = a.threads;
  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) {
    const IoInfo& io = session->outputs()[i];
    nlohmann::json o;
    o["name"] = io.name;
    if (outs[i].is_tensor()) {
      const Tensor& t = outs[i].tensor();
      std::string file = (fs::path(a.output_dir) / (safe_file_name(io.name) + ".npy")).string();
      format::write_npy_file(file, t);
      o["dtype"] = std::string(dtype_name(t.dtype()));
      o["shape"] = t.dims();
      o["file"] = file;
      if (!a.json)
        std::cout << io.name << ": " << dtype_name(t.dtype()) << dims_str(t.dims()) << " -> " << file << "\n";
    } else {
      o["kind"] = outs[i].is_sequence() ? "sequence" : "none";
      if (!a.json)
        std::cout << io.name << ": " << (outs[i].is_sequence() ? "sequence of " + std::to_string(outs[i].seq().size()) + " tensors (not written)" : "empty optional") << "\n";
    }
    j["outputs"].push_back(o);
  }
  if (a.json) std::cout << j.dump(2) << "\n";
  else std::cerr << "loaded in " << static_cast<int>(load_ms) << " ms, ran in " << run_ms << " ms (" << a.threads << " thread" << (a.threads == 1 ? "" : "s") << ")\n";
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* sub = app.add_subcommand(
      "run",
      "Run a model once and write every output as OUTPUT_DIR/<output name>.npy.\n"
      "Inputs come from files (--input NAME=FILE, .npy or .pb TensorProto) or are made\n"
      "at random from the model's declared types (--random-inputs; symbolic dims are\n"
      "fixed with --dim SYMBOL=VALUE, else 1).");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_option("--input,-i", args->inputs, "NAME=FILE: an input from a .npy or .pb file (repeatable)");
  sub->add_flag("--random-inputs", args->random, "make every input not given with --input at random");
  sub->add_option("--seed", args->seed, "seed for --random-inputs (default 0)");
  sub->add_option("--dim", args->dims, "SYMBOL=VALUE: value of a symbolic dim for --random-inputs (repeatable)");
  sub->add_option("--output-dir,-o", args->output_dir, "folder for the .npy outputs (default .)");
  sub->add_option("--threads", args->threads, "worker threads (default 1)")->check(CLI::Range(1, 256));
  sub->add_flag("--json", args->json, "print a JSON summary instead of text");
  return [args] { return run_run(*args); };
}

}  // namespace onyx::cli
