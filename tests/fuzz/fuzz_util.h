// Shared by the fuzz targets: the one rule they check is that only onyx::Error leaves the
// library. Any other exception escapes LLVMFuzzerTestOneInput, and libFuzzer reports it
// as a crash ("deadly signal" after std::terminate), as it does sanitizer reports.
#pragma once
#include <cstddef>
#include <cstdint>

#include "onyx/error.h"

namespace onyx::fuzz {

/// Runs `f`, swallowing onyx::Error (the expected way for bad input to end). Returns
/// true when `f` returned normally.
template <typename F>
bool expect_error_only(F&& f) {
  try {
    f();
    return true;
  } catch (const Error&) {
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
