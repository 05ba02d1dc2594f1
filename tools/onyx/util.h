// Small helpers shared by the CLI's subcommands: files, sizes, JSON views of a model,
// model inputs from files or at random, a progress line.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onyx/session.h"

namespace onyx::cli {

/// The whole content of `path`; throws onyx::Error (kIo) naming `what` ("meta file")
/// when it cannot be opened.
std::string read_text_file(const std::string& path, const char* what);

/// A byte count for people: "512 B", "1.5 KiB", "3.0 MiB" (1024-based, one decimal).
std::string human_bytes(uint64_t b);

/// `name` as a file name: every character other than letters, digits, '-', '_' and '.'
/// replaced by '_'; an empty name, "." and ".." become "output" (how `onyx run` names
/// its .npy files).
std::string safe_file_name(const std::string& name);

/// A graph input or output as JSON: name, type, dtype (of the innermost element type)
/// and shape (dims as numbers, symbolic dims by name, unknown ones null; null when the
/// value is not a tensor or has no shape).
nlohmann::json value_info_json(const ir::ValueInfo& v);

/// obj[key], or nullptr when the key is missing or null.
const nlohmann::json* member(const nlohmann::json& obj, const char* key);

/// Where the inputs of a model come from (`onyx run`, `onyx bench`).
struct FeedSpec {
  std::vector<std::string> inputs;  ///< NAME=FILE (.npy or .pb TensorProto)
  std::vector<std::string> dims;    ///< SYMBOL=VALUE for symbolic dims of random inputs
  bool random = false;              ///< make every input not given at random
  uint64_t seed = 0;
};

/// The feeds of one run, and notes for the user (symbolic dims that defaulted to 1).
struct Feeds {
  std::vector<std::pair<std::string, Value>> values;
  std::vector<std::string> notes;
};

/// Adds --input, --random-inputs, --seed and --dim to `sub`, filling `spec`.
void add_feed_options(CLI::App* sub, FeedSpec& spec);

/// Builds the feeds of `session` from `spec`: files first, then random tensors (uniform
/// in [-1, 1) for floats, 0..9 for integers, from a mt19937_64 seeded with spec.seed) for
/// inputs neither given nor defaulted. Throws onyx::Error (kInvalidArgument) for a
/// malformed spec, an unknown input name, or an input that is missing.
Feeds make_feeds(const Session& session, const FeedSpec& spec);

/// A progress line with an ETA on stderr, drawn only when `enabled` and stderr is a
/// terminal, at most every 100 ms; finish() erases it.
class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  Progress(size_t total, bool enabled);
  void set_total(size_t total) { total_ = total; }
  void update(size_t done, const std::string& current);
  void finish();

 private:
  size_t total_;
  bool enabled_;
  Clock::time_point start_, last_;
};

}  // namespace onyx::cli
