// Shared by the fuzz targets: the one rule they check is that only onyx::Error leaves the
// library, and that it is a real one. Any other exception escapes LLVMFuzzerTestOneInput
// and libFuzzer reports it as a crash (std::terminate), as it does sanitizer reports.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onyx/error.h"

namespace onyx::fuzz {

/// True when an error message is a standard-library exception passed through (the
/// runtime turns every exception a kernel throws into an Error naming the node, the
/// loader turns bad_alloc and length_error into one): an unchecked length, index or
/// size reached the standard library, which is the bug. Defined in findings.cc, which is
/// built without coverage or comparison tracing: libFuzzer must not learn the markers
/// and write them into a model's strings, which the messages quote.
bool wraps_std_exception(std::string_view msg);

/// Reports a finding on stderr ("==FUZZ FINDING== what: msg") and aborts.
[[noreturn]] void finding(const char* what, std::string_view msg);

/// Runs `f`, accepting onyx::Error (the expected way for bad input to end) unless it
/// wraps a standard-library exception. Returns true when `f` returned normally.
template <typename F>
bool expect_error_only(F&& f) {
  try {
    f();
    return true;
  } catch (const Error& e) {
    if (wraps_std_exception(e.what())) finding("onyx::Error wrapping a std exception", e.what());
    return false;
  }
}

/// FNV-1a of the input: seeds the random choices a target makes besides the bytes, so
/// that a saved input replays the same way.
inline uint64_t input_hash(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

}  // namespace onyx::fuzz
