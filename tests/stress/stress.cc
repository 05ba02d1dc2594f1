// Concurrency stress test: many threads call Session::run on one session at once.
//
//   onyx_stress --model NAME=PATH [--model ...] [--callers 8] [--runs 200] [--threads 1,2,4]
//
// For each model it makes a set of inputs (fixed seed; a model with symbolic dims past
// the batch dim gets several shapes, so concurrent runs see different shapes at once),
// computes every output with a threads=1 session called from one thread (the reference), then for each
// thread count T opens one session with threads=T and lets `callers` threads call run()
// `runs` times each, every call on an input chosen by (caller, run). Every output must be
// bit-identical to the single-caller output of a threads=T session and within a tight
// tolerance of the threads=1 reference (the SIMD kernels split work across threads but
// never the sum of one output element). Exits 0 when all match, 1 otherwise, 77 when a
// model file is missing (ctest's skip: the models come from tests/models/export_models.py).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "onyx/session.h"

namespace {

using onyx::Dims;
using onyx::DType;
using onyx::Session;
using onyx::Tensor;
using onyx::Value;
using Feeds = std::vector<std::pair<std::string, Value>>;

struct Args {
  std::vector<std::pair<std::string, std::string>> models;
  int callers = 8;
  int runs = 200;
  std::vector<int> threads = {1, 2, 4};
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "onyx_stress: %s\nusage: onyx_stress --model NAME=PATH [--model ...] "
               "[--callers N] [--runs N] [--threads 1,2,4]\n", msg);
  std::exit(2);
}

int parse_int(const std::string& s, const char* flag) {
  size_t pos = 0;
  int v = 0;
  try {
    v = std::stoi(s, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != s.size() || v < 1) usage((std::string(flag) + " needs a positive integer, got '" + s + "'").c_str());
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + f).c_str());
    std::string v = argv[++i];
    if (f == "--model") {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage("--model takes NAME=PATH");
      a.models.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (f == "--callers") {
      a.callers = parse_int(v, "--callers");
    } else if (f == "--runs") {
      a.runs = parse_int(v, "--runs");
    } else if (f == "--threads") {
      a.threads.clear();
      size_t b = 0;
      while (b <= v.size()) {
        size_t e = v.find(',', b);
        if (e == std::string::npos) e = v.size();
        a.threads.push_back(parse_int(v.substr(b, e - b), "--threads"));
        b = e + 1;
      }
    } else {
      usage(("unknown flag " + f).c_str());
    }
  }
  if (a.models.empty()) usage("give at least one --model");
  return a;
}

/// Input sets for `s`: a symbolic first (batch) dim is 1; the other symbolic dims take
/// values in 16..112 that differ between sets, so the sets have different shapes.
std::vector<Feeds> make_inputs(const Session& s, int sets) {
  std::mt19937_64 rng(1234);
  std::vector<Feeds> out;
  for (int k = 0; k < sets; ++k) {
    Feeds f;
    for (const auto& io : s.inputs()) {
      if (io.has_default) continue;
      if (!io.is_tensor || io.dtype != DType::kFloat)
        usage(("input '" + io.name + "' is not a float tensor; the stress test feeds float inputs only").c_str());
      Dims d;
      for (size_t i = 0; i < io.dims.size(); ++i) {
        if (io.dims[i] >= 0) {
          d.push_back(io.dims[i]);
        } else if (i == 0) {
          d.push_back(1);  // batch: kept at 1, the cost of the CNNs grows with it
        } else {
          d.push_back(16 + 37 * k % 97);  // sequence length / width: 16 .. 112
        }
      }
      Tensor t(DType::kFloat, d);
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
      f.emplace_back(io.name, Value(t));
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// "" when equal (bitwise, or within rtol/atol when tol is set), else what differs.
std::string compare(const std::vector<Value>& got, const std::vector<Value>& want, bool tol) {
  if (got.size() != want.size()) return "output count differs";
  for (size_t i = 0; i < got.size(); ++i) {
    if (!got[i].is_tensor() || !want[i].is_tensor()) return "output " + std::to_string(i) + " is not a tensor";
    const Tensor& g = got[i].tensor();
    const Tensor& w = want[i].tensor();
    if (g.dtype() != w.dtype() || g.dims() != w.dims())
      return "output " + std::to_string(i) + " has shape " + onyx::dims_str(g.dims()) + ", expected " +
             onyx::dims_str(w.dims());
    if (!tol || g.dtype() != DType::kFloat) {
      if (g.nbytes() && std::memcmp(g.raw(), w.raw(), g.nbytes()) != 0)
        return "output " + std::to_string(i) + " differs bitwise";
      continue;
    }
    for (int64_t k = 0; k < g.numel(); ++k) {
      float a = g.data<float>()[k], b = w.data<float>()[k];
      if (!(std::fabs(a - b) <= 1e-5f + 1e-4f * std::fabs(b)))
        return "output " + std::to_string(i) + " element " + std::to_string(k) + ": " +
               std::to_string(a) + " vs " + std::to_string(b);
    }
  }
  return "";
}

bool stress_model(const std::string& name, const std::string& path, const Args& a) {
  onyx::SessionOptions one;
  auto ref_session = Session::open(path, one);
  bool dynamic = false;  // a symbolic dim past the batch one: several shapes
  for (const auto& io : ref_session->inputs())
    for (size_t i = 1; i < io.dims.size(); ++i) dynamic |= io.dims[i] < 0;
  std::vector<Feeds> inputs = make_inputs(*ref_session, dynamic ? 6 : 2);
  std::vector<std::vector<Value>> ref;
  for (const auto& f : inputs) ref.push_back(ref_session->run(f));

  bool ok = true;
  for (int t : a.threads) {
    onyx::SessionOptions so;
    so.threads = t;
    auto session = Session::open(path, so);
    std::vector<std::vector<Value>> same_t;
    for (size_t k = 0; k < inputs.size(); ++k) {
      same_t.push_back(session->run(inputs[k]));
      std::string d = compare(same_t.back(), ref[k], true);
      if (!d.empty()) {
        std::printf("FAIL %s threads=%d input %zu: single caller vs threads=1: %s\n", name.c_str(), t, k, d.c_str());
        ok = false;
      }
    }
    std::atomic<int> failures{0};
    std::mutex print_mu;
    std::vector<std::thread> callers;
    for (int c = 0; c < a.callers; ++c)
      callers.emplace_back([&, c] {
        for (int r = 0; r < a.runs; ++r) {
          size_t k = static_cast<size_t>(c * 7 + r) % inputs.size();
          std::string d;
          try {
            d = compare(session->run(inputs[k]), same_t[k], false);
          } catch (const std::exception& e) {
            d = std::string("threw: ") + e.what();
          }
          if (!d.empty() && failures.fetch_add(1) < 5) {
            std::lock_guard<std::mutex> g(print_mu);
            std::printf("FAIL %s threads=%d caller %d run %d input %zu: %s\n", name.c_str(), t, c, r, k, d.c_str());
          }
        }
      });
    for (auto& th : callers) th.join();
    std::printf("%s %s: threads=%d, %d callers x %d runs over %zu input shapes: %d mismatches\n",
                failures ? "FAIL" : "ok  ", name.c_str(), t, a.callers, a.runs, inputs.size(), failures.load());
    if (failures) ok = false;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  for (const auto& [name, path] : a.models)
    if (!std::filesystem::is_regular_file(path)) {
      std::printf("skip: model %s not found at %s (tests/models/export_models.py writes it)\n", name.c_str(), path.c_str());
      return 77;
    }
  bool ok = true;
  for (const auto& [name, path] : a.models) {
    try {
      ok &= stress_model(name, path, a);
    } catch (const std::exception& e) {
      std::printf("FAIL %s: %s\n", name.c_str(), e.what());
      ok = false;
    }
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}
