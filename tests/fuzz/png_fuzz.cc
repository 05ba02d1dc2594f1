// The PNG path of `onyx ocr`: PNG bytes -> image::decode_png (with the CLI's default size
// limits) -> image::preprocess_rgba (gray, resize to the model's height, normalise), and
// the batch padding of several crops.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "image/png.h"
#include "onyx/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onyx::fuzz::expect_error_only([&] {
    onyx::image::RgbaImage rgba = onyx::image::decode_png(data, size, "fuzz.png");
    onyx::image::TextLineParams params;
    // The crop height a meta file may choose: the default (32) or a small other one.
    uint64_t h = onyx::fuzz::input_hash(data, size);
    if (h % 4 == 0) params.height = 1 + static_cast<int64_t>((h >> 8) % 64);
    onyx::Tensor x = onyx::image::preprocess_rgba(rgba, params);
    std::vector<onyx::Tensor> crops = {x, onyx::image::preprocess_gray(
                                              onyx::image::rgba_to_gray(rgba), params)};
    (void)onyx::image::pad_batch(crops, onyx::image::white_value(params));
  });
  return 0;
}
