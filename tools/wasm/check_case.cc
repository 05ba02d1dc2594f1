// A small program for the WebAssembly build: runs model folders laid out like the
// ONNX node tests (model.onnx + test_data_set_0/{input,output}_N.pb) and compares the
// outputs, so CI can prove the core library runs under Node as it does natively.
// Built with -sNODERAWFS=1: paths are the host's.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "format/loader.h"
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

bool check(const fs::path& dir) {
  try {
    auto s = Session::open((dir / "model.onnx").string());
    const ir::Graph& g = *session_model(*s).graph;
    std::set<std::string> inits;
    for (const auto& [n, t] : g.initializers) inits.insert(n);
    std::vector<std::pair<std::string, Value>> feeds;
    size_t k = 0;
    for (const auto& v : g.inputs) {
      if (inits.count(v.name)) continue;
      fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(k++) + ".pb");
      feeds.emplace_back(v.name, format::read_value_file(p.string(), v.type));
    }
    auto outs = s->run(feeds);
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      fs::path p = dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb");
      Value e = format::read_value_file(p.string(), g.outputs[i].type);
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: onyx_wasm_check CASE_DIR...\n");
    return 2;
  }
  int passed = 0, failed = 0;
  for (int i = 1; i < argc; ++i) (check(argv[i]) ? passed : failed)++;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
