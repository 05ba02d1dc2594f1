// onyx run MODEL: run a model on inputs from files or random inputs, write outputs as
// .npy files (numpy forms) or .pb files (ONNX protobuf).
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "format/npy.h"
#include "format/value_io.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/session_flags.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  SessionFlags session;
  std::string model;
  FeedSpec feeds;
  std::string output_dir = ".";
  std::string output_format = "npy";
  int threads = 1;
  bool json = false;
  GraphOptimization optimize = GraphOptimization::kAll;
  bool optimize_given = false;
  bool reference = false;
  double timeout = 0;  ///< seconds; 0: none
};

/// Sets `ro.terminate` once `seconds` have passed, unless destroyed first (seconds <= 0:
/// never). The run then ends with kCancelled naming the node it was in.
class RunTimer {
 public:
  RunTimer(double seconds, RunOptions& ro) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds, &ro] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; }))
        ro.terminate = true;
    });
  }
  ~RunTimer() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  RunTimer(const RunTimer&) = delete;
  RunTimer& operator=(const RunTimer&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string kind_of(const Value& v) { return v.is_tensor() ? "tensor" : v.is_sequence() ? "sequence" : "none"; }

/// The element dtype of a value: its tensor's, its sequence's, or the declared one.
DType elem_of(const Value& v, const ir::TypeInfo& declared) {
  if (v.is_tensor()) return v.tensor().dtype();
  if (v.is_sequence()) return v.seq_dtype();
  const ir::TypeInfo* t = &declared;
  while (t->inner) t = t->inner.get();
  return t->elem;
}

int run_run(const RunArgs& a) {
  const auto format = a.output_format == "pb" ? format::ValueFormat::kPb : format::ValueFormat::kNpy;
  SessionOptions so;
  so.threads = a.threads;
  apply_session_flags(a.session, so);
  so.reference_kernels = a.reference;
  so.optimize = a.optimize_given || !a.reference ? a.optimize : GraphOptimization::kNone;
  auto t0 = std::chrono::steady_clock::now();
  auto session = Session::open(a.model, so);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  Feeds feeds = make_feeds(*session, a.feeds, so.max_tensor_bytes);
  if (!a.json)
    for (const auto& n : feeds.notes) std::cerr << "onyx: note: " << n << "\n";

  // Two outputs whose file names coincide would overwrite each other: refuse before running.
  const std::vector<ir::ValueInfo>& declared = session_model(*session).graph->outputs;
  std::map<std::string, std::string> stems;
  for (const auto& io : session->outputs()) {
    std::string stem = safe_file_name(io.name);
    if (stems.count(stem))
      fail_arg("outputs '{}' and '{}' would both be written as '{}' in '{}'", stems[stem], io.name, stem,
               a.output_dir);
    stems[stem] = io.name;
  }

  auto t1 = std::chrono::steady_clock::now();
  std::vector<Value> outs;
  {
    RunOptions ro;
    RunTimer timer(a.timeout, ro);
    try {
      outs = session->run(feeds.values, ro);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCancelled) throw;
      fail(ErrorCode::kCancelled, "{} (--timeout {} s)", e.what(), a.timeout);
    }
  }
  double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();

  std::error_code ec;
  fs::create_directories(a.output_dir, ec);
  if (ec) fail(ErrorCode::kIo, "cannot create output folder '{}': {}", a.output_dir, ec.message());
  nlohmann::json j;
  j["model"] = a.model;
  j["load_ms"] = load_ms;
  j["run_ms"] = run_ms;
  j["threads"] = a.threads;
  j["output_format"] = a.output_format;
  j["notes"] = feeds.notes;
  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) {
    const IoInfo& io = session->outputs()[i];
    const Value& v = outs[i];
    format::WrittenValue w =
        format::write_value_files(a.output_dir, safe_file_name(io.name), v, declared[i].type, io.name, format);
    nlohmann::json o;
    o["name"] = io.name;
    o["kind"] = kind_of(v);
    DType dt = elem_of(v, declared[i].type);
    o["dtype"] = std::string(dtype_name(dt));
    o["file"] = w.path;
    std::string bits = format == format::ValueFormat::kNpy && !v.is_none() ? format::npy_bits_note(dt) : "";
    if (!bits.empty()) {
      o["stored_as"] = std::string(dtype_name(format::npy_bits_dtype(dt)));
      o["note"] = w.path + " holds " + bits + "; numpy has no " + std::string(dtype_name(dt)) +
                  " (onyx run --input reads the file back as " + std::string(dtype_name(dt)) + ")";
    }
    std::string what;
    if (v.is_tensor()) {
      o["shape"] = v.tensor().dims();
      what = std::string(dtype_name(dt)) + dims_str(v.tensor().dims());
    } else if (v.is_sequence()) {
      o["length"] = v.seq().size();
      o["items"] = nlohmann::json::array();
      for (size_t k = 0; k < v.seq().size(); ++k) {
        nlohmann::json it;
        it["dtype"] = std::string(dtype_name(v.seq()[k].dtype()));
        it["shape"] = v.seq()[k].dims();
        if (k < w.items.size()) it["file"] = w.items[k];
        o["items"].push_back(it);
      }
      what = "sequence of " + std::to_string(v.seq().size()) + " " + std::string(dtype_name(dt)) + " tensor" +
             (v.seq().size() == 1 ? "" : "s");
    } else {
      what = "empty optional";
    }
    if (!a.json) {
      std::string where = w.path;
      if (v.is_sequence() && format == format::ValueFormat::kNpy)
        where += "/ (" + (w.items.empty() ? std::string("empty") : w.items.size() == 1 ? "0.npy" : "0.npy .. " + std::to_string(w.items.size() - 1) + ".npy") + ")";
      std::cout << io.name << ": " << what << " -> " << where << "\n";
      if (!bits.empty()) std::cerr << "onyx: note: " << o["note"].get<std::string>() << "\n";
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
      "Run a model once and write every output into OUTPUT_DIR, as .npy files or as ONNX .pb files.\n\n"
      "Inputs come from --input NAME=PATH or are made at random from the model's declared\n"
      "types (--random-inputs; symbolic dims are fixed with --dim SYMBOL=VALUE, else 1). An\n"
      "optional input that is not given is left empty.\n\n"
      "--output-format npy (default) writes each output as numpy does:\n"
      "  a tensor          OUTPUT_DIR/<name>.npy; strings as numpy unicode ('<U<n>'); bytes\n"
      "                    that are not UTF-8 as Python's surrogateescape reads them\n"
      "                    (U+DC80..U+DCFF), so s.encode('utf-8', 'surrogateescape') gives them back\n"
      "  bfloat16, float8*, 4-bit, 2-bit\n"
      "                    their raw bits, which numpy can hold: bfloat16 as uint16, float8* as\n"
      "                    uint8, int4/int2 as int8 values, uint4/uint2/float4e2m1 as uint8, one\n"
      "                    value per byte (a note on stderr and in --json says so)\n"
      "  a sequence        the folder OUTPUT_DIR/<name>/ of 0.npy, 1.npy, ...\n"
      "  an empty optional the marker file OUTPUT_DIR/<name>.none (an optional holding a value\n"
      "                    is written as that value)\n"
      "--output-format pb writes each output as OUTPUT_DIR/<name>.pb, the way the ONNX test data\n"
      "stores values: a TensorProto, a SequenceProto or an OptionalProto as the output's type\n"
      "says. (onyx has no map values: no kernel makes one.)\n"
      "<name> is the output name with characters other than letters, digits, '-', '_' and\n"
      "'.' replaced by '_'. A file left by an earlier run in another form is removed.\n\n"
      "--input takes every form this writes, so outputs can be fed back: a .npy (raw bits are\n"
      "read as the declared bfloat16/float8/4-bit/2-bit type, values checked to fit), a .pb\n"
      "(TensorProto, SequenceProto or OptionalProto, as the input's type says), a folder of\n"
      "0.npy, 1.npy ... (or .pb) for a sequence, a NAME.none marker for an empty optional, or a\n"
      ".npz whose array is named after the input (NAME/0, NAME/1 ... for a sequence).");
  sub->add_option("model", args->model, "the .onnx file")->required();
  add_feed_options(sub, args->feeds);
  sub->add_option("--output-dir,-o", args->output_dir, "folder for the outputs (default .)");
  sub->add_option("--output-format", args->output_format, "npy (default) or pb")
      ->check(CLI::IsMember({"npy", "pb"}));
  sub->add_option("--threads", args->threads, "worker threads (default 1)")->transform(integer_in(1, 256));
  add_session_flags(sub, args->session);
  sub->add_option("--timeout", args->timeout,
                  "stop the run after this many seconds (default 0: no limit); it ends with an error "
                  "naming the node it was in, within milliseconds even inside a long node")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", args->json, "print a JSON summary instead of text");
  auto* opt = sub->add_option("--optimize", args->optimize, "graph optimization: none, basic or all (default all)")
                  ->transform(CLI::CheckedTransformer(optimize_levels()));
  sub->add_flag("--reference", args->reference,
                "run on the reference kernels only, unoptimized (unless --optimize is given): the oracle");
  return [args, opt] {
    args->optimize_given = opt->count() > 0;
    return run_run(*args);
  };
}

}  // namespace onyx::cli
