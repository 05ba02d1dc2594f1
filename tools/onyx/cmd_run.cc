// onyx run MODEL: run a model on inputs from files or random inputs, write outputs as .npy.
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "base/error.h"
#include "format/npy.h"
#include "onyx/session.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string model;
  FeedSpec feeds;
  std::string output_dir = ".";
  int threads = 1;
  bool json = false;
};

int run_run(const RunArgs& a) {
  SessionOptions so;
  so.threads = a.threads;
  auto t0 = std::chrono::steady_clock::now();
  auto session = Session::open(a.model, so);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  Feeds feeds = make_feeds(*session, a.feeds);
  if (!a.json)
    for (const auto& n : feeds.notes) std::cerr << "onyx: note: " << n << "\n";

  auto t1 = std::chrono::steady_clock::now();
  std::vector<Value> outs = session->run(feeds.values);
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
  add_feed_options(sub, args->feeds);
  sub->add_option("--output-dir,-o", args->output_dir, "folder for the .npy outputs (default .)");
  sub->add_option("--threads", args->threads, "worker threads (default 1)")->check(CLI::Range(1, 256));
  sub->add_flag("--json", args->json, "print a JSON summary instead of text");
  return [args] { return run_run(*args); };
}

}  // namespace onyx::cli
