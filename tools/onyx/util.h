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

/// `text` as a decimal integer in [lo, hi]: an optional '-' and digits, nothing else (no
/// spaces, '+', exponent, hex, fraction or trailing text). Throws onyx::Error
/// (kInvalidArgument) naming `what` ("--dim W") and the text.
int64_t parse_int(const std::string& text, const std::string& what, int64_t lo, int64_t hi);

/// CLI11 checks that replace CLI::Range for numbers, which accepts what strtoll and
/// strtold accept: " 5", "010" (octal 8), "0x10", "-1" for an unsigned option (2^64-1),
/// a value past the type's range (clamped), "inf" and "nan". These take plain decimal
/// text in [lo, hi] only and pass it on without leading zeros; use with ->transform().
CLI::Validator integer_in(int64_t lo, int64_t hi);
CLI::Validator unsigned_in(uint64_t lo, uint64_t hi);
/// A finite decimal number ("0.5", "1e-3", "-2") in [lo, hi].
CLI::Validator number_in(double lo, double hi);

/// Where the inputs of a model come from (`onyx run`, `onyx bench`).
struct FeedSpec {
  std::vector<std::string> inputs;  ///< NAME=PATH (.npy, .npz, .pb, a sequence folder, NAME.none)
  std::vector<std::string> dims;    ///< SYMBOL=VALUE for symbolic dims of random inputs
  bool random = false;              ///< make every input not given at random
  uint64_t seed = 0;
};

/// The feeds of one run, and notes for the user (symbolic dims that defaulted to 1, raw
/// bits read as the declared dtype, optional inputs left empty).
struct Feeds {
  std::vector<std::pair<std::string, Value>> values;
  std::vector<std::string> notes;
};

/// Adds --input, --random-inputs, --seed and --dim to `sub`, filling `spec`.
void add_feed_options(CLI::App* sub, FeedSpec& spec);

/// Builds the feeds of `session` from `spec`: files first (read_input_value), then random
/// tensors (uniform in [-1, 1) for floats, 0..9 for integers, from a mt19937_64 seeded
/// with spec.seed) for inputs neither given nor defaulted; an input declared optional
/// that is neither given nor made at random is left empty. Throws onyx::Error
/// (kInvalidArgument) for a malformed spec (a --dim value that is not an integer in
/// [0, 2^31-1], a --dim symbol no input has, a symbol or an input given twice), an input
/// name the model lacks (listing its inputs), or an input that is missing.
/// A random input larger than `max_tensor_bytes` (0: no limit) is refused (kLimit).
Feeds make_feeds(const Session& session, const FeedSpec& spec,
                 uint64_t max_tensor_bytes = SessionOptions{}.max_tensor_bytes);

/// The value of graph input `vi` from `path`, in any form `onyx run` writes
/// (format::read_value_path: .npy, .pb, a sequence folder, a NAME.none marker) or a .npz
/// archive: its array named after the input (or its file-safe name; or the only array),
/// or for a sequence its arrays NAME/0, NAME/1, ... Raw bits of a dtype numpy lacks are
/// read as the declared dtype; `notes` gets a line saying so.
Value read_input_value(const std::string& path, const ir::ValueInfo& vi, std::vector<std::string>& notes);

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
