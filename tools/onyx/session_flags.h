// The SessionOptions flags every command that runs a model takes: resource limits
// (--max-tensor-bytes, --max-run-bytes, --max-loop-iterations).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "onyx/session.h"

namespace onyx::cli {

struct SessionFlags {
  std::string max_tensor_bytes;  ///< as given ("2GiB"); empty: the default
  std::string max_run_bytes;
  int64_t max_loop_iterations = -1;  ///< -1: the default
};

/// Adds the limit flags to `sub`.
void add_session_flags(CLI::App* sub, SessionFlags& flags);

/// Sets the limits of `so` from the flags; throws onyx::Error (kInvalidArgument) for a
/// malformed size.
void apply_session_flags(const SessionFlags& flags, SessionOptions& so);

/// A byte count as people write it: "0" (no limit), "1048576", "512MiB", "2GiB", "1.5GB",
/// "64K" (K/M/G/T: powers of 1024, as KiB/MiB/GiB/TiB; KB/MB/GB/TB: powers of 1000).
/// Throws onyx::Error (kInvalidArgument) naming `what` and the text.
uint64_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace onyx::cli
