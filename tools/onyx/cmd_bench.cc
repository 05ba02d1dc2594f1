// onyx bench MODEL: cold start and warm latency of one model, for people and for
// bench/run.py (which puts it side by side with onnxruntime).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "base/error.h"
#include "format/loader.h"
#include "format/npy.h"
#include "ir/graph.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/session_flags.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct BenchArgs {
  SessionFlags session;
  std::string model;
  FeedSpec feeds;
  int warmup = 5;
  int runs = 20;
  double min_time = 1.0;
  int threads = 1;
  GraphOptimization optimize = GraphOptimization::kAll;
  std::string save_inputs;
  bool json = false;
  bool profile = false;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// Summary of the warm run times, in milliseconds.
struct Stats {
  double mean = 0, median = 0, p90 = 0, min = 0, max = 0, stddev = 0;
};

/// q-quantile with linear interpolation between order statistics (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Stats summarize(std::vector<double> v) {
  Stats s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  s.median = quantile(v, 0.5);
  s.p90 = quantile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::string ms_str(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 1 ? "%.3f ms" : ms < 100 ? "%.2f ms" : "%.1f ms", ms);
  return buf;
}

/// Per-node times of `runs` profiled runs (RunOptions::profile): each node's median, the
/// nodes grouped by op type, and the sum of the medians beside the runs' median.
struct Profile {
  struct Node {
    std::string name, op_type;
    int index = 0;
    double ms = 0;
  };
  struct Op {
    std::string op_type;
    int nodes = 0;
    double ms = 0;
  };
  int runs = 0;
  double run_median_ms = 0, nodes_ms = 0;
  std::vector<Node> nodes;  ///< slowest first
  std::vector<Op> ops;      ///< slowest first
};

Profile profile_runs(Session& session, const std::vector<std::pair<std::string, Value>>& feeds, int runs) {
  std::map<int, std::pair<Profile::Node, std::vector<double>>> by_index;  // node, its times
  std::vector<double> run_ms;
  for (int r = 0; r < runs; ++r) {
    std::vector<NodeTime> prof;
    RunOptions ro;
    ro.profile = &prof;
    auto t = Clock::now();
    session.run(feeds, ro);
    run_ms.push_back(ms_since(t));
    for (const NodeTime& n : prof)
      by_index.try_emplace(n.index, Profile::Node{n.node, n.op_type, n.index, 0}, std::vector<double>())
          .first->second.second.push_back(n.ms);
  }
  Profile p;
  p.runs = runs;
  p.run_median_ms = summarize(run_ms).median;
  std::map<std::string, Profile::Op> ops;
  for (auto& [index, entry] : by_index) {
    auto& [node, v] = entry;
    v.resize(static_cast<size_t>(runs), 0.0);  // a run that did not run the node: 0
    node.ms = summarize(v).median;
    p.nodes_ms += node.ms;
    Profile::Op& op = ops[node.op_type];
    op.op_type = node.op_type;
    ++op.nodes;
    op.ms += node.ms;
    p.nodes.push_back(node);
  }
  for (auto& [name, op] : ops) p.ops.push_back(op);
  std::stable_sort(p.nodes.begin(), p.nodes.end(), [](const auto& x, const auto& y) { return x.ms > y.ms; });
  std::stable_sort(p.ops.begin(), p.ops.end(), [](const auto& x, const auto& y) { return x.ms > y.ms; });
  return p;
}

void print_profile(const Profile& p) {
  auto pct = [&](double ms) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%5.1f%%", p.nodes_ms > 0 ? 100.0 * ms / p.nodes_ms : 0.0);
    return std::string(buf);
  };
  std::cout << "profile     " << p.runs << " runs: median " << ms_str(p.run_median_ms) << ", of which nodes "
            << ms_str(p.nodes_ms) << " (sum of each node's median)\n";
  std::cout << "  by op type              nodes         ms   share\n";
  for (const auto& op : p.ops) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-24s %5d %10.3f  %s\n", op.op_type.c_str(), op.nodes, op.ms, pct(op.ms).c_str());
    std::cout << line;
  }
  const size_t top = std::min<size_t>(p.nodes.size(), 15);
  std::cout << "  slowest nodes (" << top << " of " << p.nodes.size() << ")\n";
  for (size_t i = 0; i < top; ++i) {
    const auto& n = p.nodes[i];
    char line[256];
    std::snprintf(line, sizeof line, "  #%-4d %-18s %10.3f  %s  %s\n", n.index, n.op_type.c_str(), n.ms, pct(n.ms).c_str(),
                  n.name.empty() ? "(no name)" : n.name.c_str());
    std::cout << line;
  }
}

int run_bench(const BenchArgs& a) {
  if (a.runs < 1) fail_arg("--runs must be at least 1, got {}", a.runs);
  SessionOptions so;
  so.threads = a.threads;
  apply_session_flags(a.session, so);
  so.optimize = a.optimize;

  // Cold start: what a process pays before its first answer.
  auto t0 = Clock::now();
  auto model = format::load_model(a.model);
  double open_ms = ms_since(t0);
  auto t1 = Clock::now();
  std::unique_ptr<Session> session;
  try {
    session = session_from_model(model, so);
  } catch (const Error& e) {
    throw Error(e.code(), a.model + ": " + e.what());
  }
  double session_ms = ms_since(t1);

  Feeds feeds = make_feeds(*session, a.feeds, so.max_tensor_bytes);
  if (!a.json)
    for (const auto& n : feeds.notes) std::cerr << "onyx: note: " << n << "\n";
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& [name, v] : feeds.values) {
    nlohmann::json in{{"name", name}};
    if (v.is_tensor()) {
      in["dtype"] = std::string(dtype_name(v.tensor().dtype()));
      in["shape"] = v.tensor().dims();
    }
    inputs.push_back(in);
  }
  if (!a.save_inputs.empty()) {
    std::error_code ec;
    fs::create_directories(a.save_inputs, ec);
    if (ec) fail(ErrorCode::kIo, "cannot create folder '{}': {}", a.save_inputs, ec.message());
    for (const auto& [name, v] : feeds.values) {
      if (!v.is_tensor()) fail_arg("--save-inputs: input '{}' is not a tensor", name);
      format::write_npy_file((fs::path(a.save_inputs) / (safe_file_name(name) + ".npy")).string(), v.tensor());
    }
  }

  auto t2 = Clock::now();
  session->run(feeds.values);
  double first_ms = ms_since(t2);

  // Warm: warmup runs, then at least `runs` runs and at least `min_time` seconds of them.
  for (int i = 0; i < a.warmup; ++i) session->run(feeds.values);
  std::vector<double> times;
  double guess_ms = std::max(first_ms, 1e-3);
  size_t planned = std::max<size_t>(static_cast<size_t>(a.runs),
                                    static_cast<size_t>(a.min_time * 1000.0 / guess_ms));
  Progress progress(planned, !a.json && planned * guess_ms > 2000.0);
  auto t_warm = Clock::now();
  while (times.size() < static_cast<size_t>(a.runs) ||
         std::chrono::duration<double>(Clock::now() - t_warm).count() < a.min_time) {
    auto t = Clock::now();
    session->run(feeds.values);
    times.push_back(ms_since(t));
    if (times.size() == 3) {
      planned = std::max<size_t>(static_cast<size_t>(a.runs),
                                 static_cast<size_t>(a.min_time * 1000.0 / (ms_since(t_warm) / 3.0)));
      progress.set_total(planned);
    }
    progress.update(times.size(), "warm runs");
  }
  double warm_s = ms_since(t_warm) / 1000.0;
  progress.finish();
  Stats s = summarize(times);

  double load_ms = open_ms + session_ms;
  Profile prof;
  if (a.profile) prof = profile_runs(*session, feeds.values, std::max(a.runs, 10));
  if (a.json) {
    nlohmann::json j;
    j["tool"] = "onyx";
    j["model"] = a.model;
    j["provider"] = "cpu";
    j["threads"] = a.threads;
    for (const auto& [name, level] : optimize_levels())
      if (level == a.optimize) j["optimize"] = name;
    j["inputs"] = inputs;
    j["cold"] = {{"open_ms", open_ms},          {"session_ms", session_ms}, {"load_ms", load_ms},
                 {"first_run_ms", first_ms}, {"total_ms", load_ms + first_ms}};
    j["warm"] = {{"warmup", a.warmup},    {"runs", times.size()}, {"seconds", warm_s},
                 {"mean_ms", s.mean},     {"median_ms", s.median}, {"p90_ms", s.p90},
                 {"min_ms", s.min},       {"max_ms", s.max},       {"stddev_ms", s.stddev}};
    if (a.profile) {
      nlohmann::json pj{{"runs", prof.runs}, {"run_median_ms", prof.run_median_ms}, {"nodes_ms", prof.nodes_ms}};
      pj["by_op"] = nlohmann::json::array();
      for (const auto& op : prof.ops) pj["by_op"].push_back({{"op_type", op.op_type}, {"nodes", op.nodes}, {"ms", op.ms}});
      pj["nodes"] = nlohmann::json::array();
      for (const auto& n : prof.nodes)
        pj["nodes"].push_back({{"index", n.index}, {"name", n.name}, {"op_type", n.op_type}, {"median_ms", n.ms}});
      j["profile"] = pj;
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "model       " << a.model << "\n";
  std::cout << "provider    cpu, " << a.threads << " thread" << (a.threads == 1 ? "" : "s") << "\n";
  for (const auto& in : inputs)
    std::cout << "input       " << in["name"].get<std::string>() << ": "
              << (in.contains("dtype") ? in["dtype"].get<std::string>() + in["shape"].dump() : "not a tensor") << "\n";
  std::cout << "cold start  " << ms_str(load_ms + first_ms) << " = open " << ms_str(open_ms) << " + session "
            << ms_str(session_ms) << " + first run " << ms_str(first_ms) << "\n";
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f s", warm_s);
  std::cout << "warm        " << times.size() << " runs after " << a.warmup << " warmup (" << secs << ")\n";
  std::cout << "            median " << ms_str(s.median) << "  mean " << ms_str(s.mean) << "  p90 " << ms_str(s.p90)
            << "  min " << ms_str(s.min) << "  stddev " << ms_str(s.stddev) << "\n";
  if (a.profile) print_profile(prof);
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand(
      "bench",
      "Measure how long a model takes to start and to run, inside this process.\n"
      "Cold start: reading the model (open), planning the session (session) and the first\n"
      "run, each timed once. Warm: after --warmup runs, the model runs at least --runs\n"
      "times and for at least --min-time seconds on the same inputs; each run is timed\n"
      "alone (feeds in, outputs allocated and returned) and summarised as median, mean,\n"
      "p90 (linear interpolation), min and stddev in milliseconds. Inputs are built as by\n"
      "'onyx run' and are not part of any timing. A progress line goes to stderr when it is\n"
      "a terminal and the warm runs take more than about 2 s. bench/run.py compares this\n"
      "with onnxruntime.");
  sub->add_option("model", args->model, "the .onnx file")->required();
  add_feed_options(sub, args->feeds);
  sub->add_option("--warmup", args->warmup, "untimed runs after the first one (default 5)")->transform(integer_in(0, 1000000));
  sub->add_option("--runs", args->runs, "least number of timed runs (default 20)")->transform(integer_in(1, 100000000));
  sub->add_option("--min-time", args->min_time, "least seconds of timed runs (default 1)")->transform(number_in(0.0, 86400.0));
  sub->add_option("--threads", args->threads, "worker threads (default 1)")->transform(integer_in(1, 256));
  add_session_flags(sub, args->session);
  sub->add_option("--save-inputs", args->save_inputs, "write the inputs used as DIR/<input name>.npy (for another runtime)");
  sub->add_flag("--json", args->json, "print the measurements as JSON");
  sub->add_flag("--profile", args->profile,
                "after the warm runs, time every node over max(--runs, 10) more runs and print each\n"
                "node's median, grouped by op type (slowest first) and the slowest nodes");
  sub->add_option("--optimize", args->optimize, "graph optimization: none, basic or all (default all)")
      ->transform(CLI::CheckedTransformer(optimize_levels()));
  return [args] { return run_bench(*args); };
}

}  // namespace onyx::cli
