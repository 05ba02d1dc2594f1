// .npy bytes -> format::read_npy (the reader of `onyx run --input x.npy`).
#include <cstddef>
#include <cstdint>

#include "format/npy.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onyx::fuzz::expect_error_only([&] {
    onyx::Tensor t = onyx::format::read_npy(data, size, "fuzz.npy");
    // What was read must be writable again (`onyx run` echoes inputs back as .npy).
    if (t.dtype() != onyx::DType::kString) (void)onyx::format::write_npy(t);
  });
  return 0;
}
