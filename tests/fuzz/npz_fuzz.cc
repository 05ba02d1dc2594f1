// .npz bytes -> format::read_npz with zlib's inflate, as the CLI reads `--input x.npz`
// (stored and deflated entries, ZIP64 records, CRC checks).
#include <cstddef>
#include <cstdint>

#include "format/npz.h"
#include "fuzz_util.h"
#include "tools/onyx/zlib_inflate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onyx::fuzz::expect_error_only(
      [&] { (void)onyx::format::read_npz(data, size, "fuzz.npz", onyx::cli::zlib_inflate); });
  // Without an inflate function (the WASM build) deflated entries must be refused cleanly.
  onyx::fuzz::expect_error_only([&] { (void)onyx::format::read_npz(data, size, "fuzz.npz"); });
  return 0;
}
