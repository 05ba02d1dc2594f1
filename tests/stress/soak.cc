// Soak test: long runs with varying shapes keep memory flat, and opening and closing
// sessions leaks neither file descriptors nor threads.
//
//   onyx_soak --model NAME=PATH [--model ...] [--runs 1000] [--opens 1000] [--threads 2]
//
// For each model: `runs` calls of Session::run on one session, each on an input whose
// symbolic dims (image width, sequence length) change from call to call over a fixed
// cycle of shapes; the resident set size (VmRSS) is read after every call. After a
// warm-up (the first tenth of the calls, at least one pass over the shape cycle) the
// RSS must stay within 10% of its peak during the warm-up: RSS moves by a few MiB with
// the shape of the moment (heap pages returned and taken back), so the peak over whole
// cycles is the level to compare with, and a leak still climbs past it. Then `opens` cycles of
// Session::open + one run + close on the first model: the process's open file
// descriptors and threads must be the same after as before. Linux only (/proc/self).
// Exits 0 on success, 1 on a leak, 77 when a model file is missing.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "onyx/session.h"

namespace {

using onyx::Dims;
using onyx::DType;
using onyx::Session;
using onyx::Tensor;
using onyx::Value;

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

int count_entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

/// One input per shape of the cycle: symbolic dims after the first take `cycle` values
/// spread over [16, 16 + 8 * cycle); a symbolic first (batch) dim stays 1.
std::vector<std::vector<std::pair<std::string, Value>>> shape_cycle(const Session& s, int cycle) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<std::vector<std::pair<std::string, Value>>> out;
  for (int k = 0; k < cycle; ++k) {
    std::vector<std::pair<std::string, Value>> feeds;
    for (const auto& io : s.inputs()) {
      if (io.has_default) continue;
      Dims d;
      for (size_t i = 0; i < io.dims.size(); ++i)
        d.push_back(io.dims[i] >= 0 ? io.dims[i] : i == 0 ? 1 : 16 + (k * 53) % (8 * cycle));
      Tensor t(DType::kFloat, d);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
      feeds.emplace_back(io.name, Value(t));
    }
    out.push_back(std::move(feeds));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> models;
  int runs = 1000, opens = 1000, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i], v = argv[i + 1];
    if (f == "--model") {
      size_t eq = v.find('=');
      models.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (f == "--runs") {
      runs = std::stoi(v);
    } else if (f == "--opens") {
      opens = std::stoi(v);
    } else if (f == "--threads") {
      threads = std::stoi(v);
    } else {
      std::fprintf(stderr, "onyx_soak: unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  if (models.empty() || runs < 20) {
    std::fprintf(stderr, "usage: onyx_soak --model NAME=PATH [...] [--runs N>=20] [--opens N] [--threads N]\n");
    return 2;
  }
  for (const auto& [name, path] : models)
    if (!std::filesystem::is_regular_file(path)) {
      std::printf("skip: model %s not found at %s\n", name.c_str(), path.c_str());
      return 77;
    }
  bool ok = true;
  onyx::SessionOptions so;
  so.threads = threads;
  for (const auto& [name, path] : models) {
    auto session = Session::open(path, so);
    const int cycle = 25;
    auto inputs = shape_cycle(*session, cycle);
    int warm = std::max(cycle, runs / 10);
    long base = 0, peak = 0;
    for (int r = 0; r < runs; ++r) {
      session->run(inputs[r % cycle]);
      long rss = rss_kib();
      if (r < warm) base = std::max(base, rss);
      if (r >= warm) peak = std::max(peak, rss);
    }
    double growth = base > 0 ? static_cast<double>(peak - base) / base : 0;
    bool flat = growth <= 0.10;
    std::printf("%s %s: %d runs over %d shapes, peak RSS in warm-up %ld KiB, peak after %ld KiB (%+.1f%%)\n",
                flat ? "ok  " : "FAIL", name.c_str(), runs, cycle, base, peak, 100 * growth);
    ok &= flat;
  }
  // Open/close cycles: count fds and threads with no session alive.
  int fds0 = count_entries("/proc/self/fd"), threads0 = count_entries("/proc/self/task");
  {
    auto probe = Session::open(models[0].second, so);
    auto inputs = shape_cycle(*probe, 1);
    probe.reset();
    for (int i = 0; i < opens; ++i) {
      auto s = Session::open(models[0].second, so);
      s->run(inputs[0]);
    }
  }
  int fds1 = count_entries("/proc/self/fd"), threads1 = count_entries("/proc/self/task");
  bool no_leak = fds1 == fds0 && threads1 == threads0;
  std::printf("%s %d open/run/close cycles of %s (threads=%d): fds %d -> %d, threads %d -> %d\n",
              no_leak ? "ok  " : "FAIL", opens, models[0].first.c_str(), threads, fds0, fds1, threads0, threads1);
  ok &= no_leak;
  return ok ? 0 : 1;
}
