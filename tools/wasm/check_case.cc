// A small program for the WebAssembly build: runs model folders laid out like the
// ONNX node tests (model.onnx + test_data_set_0/{input,output}_N.pb, or .npy) and compares
// the outputs, so CI can prove the core library runs under Node as it does natively.
// Built with -sNODERAWFS=1: paths are the host's.
//
// `onyx_wasm_check --profile RUNS MODEL.onnx INPUT.npy...` instead times RUNS runs of a
// model (after 20 untimed ones) and prints each op type's median share, slowest first: a
// developer's view of where WebAssembly time goes (under Node's V8, not Chromium's).
#include <cmath>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/loader.h"
#include "format/npy.h"
#include "ir/graph.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"

namespace fs = std::filesystem;
using namespace onyx;

namespace {

bool close_enough(const Tensor& e, const Tensor& g, std::string& why) {
  if (e.dtype() != g.dtype() || e.dims() != g.dims()) {
    why = "dtype/shape differ: got " + std::string(dtype_name(g.dtype())) + dims_str(g.dims()) +
          ", expected " + std::string(dtype_name(e.dtype())) + dims_str(e.dims());
    return false;
  }
  if (e.dtype() == DType::kFloat) {
    for (int64_t i = 0; i < e.numel(); ++i) {
      float a = e.data<float>()[i], b = g.data<float>()[i];
      if (std::isnan(a) && std::isnan(b)) continue;
      if (std::fabs(a - b) > 1e-5 + 1e-3 * std::fabs(a)) {
        why = "element " + std::to_string(i) + ": got " + std::to_string(b) + ", expected " + std::to_string(a);
        return false;
      }
    }
    return true;
  }
  if (e.dtype() == DType::kString) {
    for (int64_t i = 0; i < e.numel(); ++i)
      if (e.data<std::string>()[i] != g.data<std::string>()[i]) {
        why = "string element " + std::to_string(i) + ": got '" + g.data<std::string>()[i] +
              "', expected '" + e.data<std::string>()[i] + "'";
        return false;
      }
    return true;
  }
  for (size_t i = 0; i < e.nbytes(); ++i)
    if (static_cast<const unsigned char*>(e.raw())[i] != static_cast<const unsigned char*>(g.raw())[i]) {
      why = "byte " + std::to_string(i) + " differs";
      return false;
    }
  return true;
}

/// The graph's inputs that are not initializers, in order, each read by read(k, input).
template <typename F>
std::vector<std::pair<std::string, Value>> graph_feeds(const ir::Graph& g, F&& read) {
  std::set<std::string> inits;
  for (const auto& [n, t] : g.initializers) inits.insert(n);
  std::vector<std::pair<std::string, Value>> feeds;
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) feeds.emplace_back(v.name, read(feeds.size(), v));
  return feeds;
}

/// test_data_set_0/<stem>.pb, or <stem>.npy where there is no .pb (the model cases that
/// scripts/test_wasm.sh writes with the native CLI).
Value read_case_value(const fs::path& dir, const std::string& stem, const ir::TypeInfo& type) {
  const fs::path pb = dir / "test_data_set_0" / (stem + ".pb");
  if (fs::exists(pb)) return format::read_value_file(pb.string(), type);
  return Value(format::read_npy_file((dir / "test_data_set_0" / (stem + ".npy")).string()));
}

bool check(const fs::path& dir) {
  try {
    auto s = Session::open((dir / "model.onnx").string());
    const ir::Graph& g = *session_model(*s).graph;
    auto feeds = graph_feeds(g, [&](size_t k, const auto& v) {
      return read_case_value(dir, "input_" + std::to_string(k), v.type);
    });
    auto outs = s->run(feeds);
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      Value e = read_case_value(dir, "output_" + std::to_string(i), g.outputs[i].type);
      std::string why;
      if (!e.is_tensor() || !outs[i].is_tensor() || !close_enough(e.tensor(), outs[i].tensor(), why)) {
        std::printf("FAIL %s: output %zu %s\n", dir.filename().c_str(), i, why.c_str());
        return false;
      }
    }
    std::printf("PASS %s\n", dir.filename().c_str());
    return true;
  } catch (const std::exception& e) {
    std::printf("ERROR %s: %s\n", dir.filename().c_str(), e.what());
    return false;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int profile(int runs, const std::string& model, const std::vector<std::string>& inputs) {
  try {
    auto t_open = std::chrono::steady_clock::now();
    auto s = Session::open(model);
    std::printf("session: %.3f ms\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_open).count());
    const ir::Graph& g = *session_model(*s).graph;
    bool short_of_inputs = false;
    auto feeds = graph_feeds(g, [&](size_t k, const auto&) {
      if (k < inputs.size()) return Value(format::read_npy_file(inputs[k]));
      short_of_inputs = true;
      return Value();
    });
    if (short_of_inputs) {
      std::printf("ERROR: the model has more inputs than the %zu .npy files given\n", inputs.size());
      return 2;
    }
    // The first runs, one by one: V8 runs baseline code until a function has been
    // called enough (tools/../src/simd/tier.h), so these show what tiering costs.
    for (int i = 0; i < 20; ++i) {
      std::vector<NodeTime> prof;
      RunOptions ro;
      ro.profile = i < 3 ? &prof : nullptr;
      auto t0 = std::chrono::steady_clock::now();
      s->run(feeds, ro);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i < 3) {
        std::map<std::string, double> sum;
        for (const auto& n : prof) sum[n.op_type] += n.ms;
        std::printf("run %d: %.3f ms:", i + 1, ms);
        for (const auto& [op, t] : sum) std::printf(" %s %.2f", op.c_str(), t);
        std::printf("\n   ");
        for (const auto& n : prof)
          if (n.ms >= 0.05) std::printf(" %s %.2f", n.node.c_str(), n.ms);
        std::printf("\n");
      }
    }
    std::map<std::string, std::vector<double>> by_op;  // per op type: its total of each run
    std::map<std::string, std::vector<double>> by_node;
    std::vector<double> totals;
    for (int r = 0; r < runs; ++r) {
      std::vector<NodeTime> prof;
      RunOptions ro;
      ro.profile = &prof;
      auto t0 = std::chrono::steady_clock::now();
      s->run(feeds, ro);
      totals.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      std::map<std::string, double> sum;
      for (const auto& n : prof) sum[n.op_type] += n.ms;
      for (auto& [op, ms] : sum) by_op[op].push_back(ms);
      for (const auto& n : prof) by_node[n.node].push_back(n.ms);
    }
    std::vector<std::pair<double, std::string>> rows;
    for (auto& [op, v] : by_op) rows.emplace_back(median(v), op);
    std::sort(rows.rbegin(), rows.rend());
    double total = median(totals);
    std::printf("%d runs: median %.3f ms\n", runs, total);
    for (const auto& [ms, op] : rows) std::printf("  %-28s %8.3f ms  %5.1f%%\n", op.c_str(), ms, 100 * ms / total);
    std::printf("   ");
    for (auto& [node, v] : by_node)
      if (median(v) >= 0.02) std::printf(" %s %.3f", node.c_str(), median(v));
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::printf("ERROR: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: onyx_wasm_check CASE_DIR...\n"
                "       onyx_wasm_check --profile RUNS MODEL.onnx INPUT.npy...\n");
    return 2;
  }
  if (std::string(argv[1]) == "--profile" && argc >= 4)
    return profile(std::atoi(argv[2]), argv[3], std::vector<std::string>(argv + 4, argv + argc));
  int passed = 0, failed = 0;
  for (int i = 1; i < argc; ++i) (check(argv[i]) ? passed : failed)++;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
