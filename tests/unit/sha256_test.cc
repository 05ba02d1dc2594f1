// base::Sha256 against the FIPS 180-4 example vectors and hashlib on padding boundaries.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/sha256.h"
#include "onyx/error.h"

namespace onyx {
namespace {

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(sha256_hex(fox.data(), fox.size()), "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592");
}

TEST(Sha256, MillionAsInPieces) {
  Sha256 h;
  std::string chunk(997, 'a');  // a size that never lines up with the 64-byte blocks
  size_t left = 1000000;
  while (left) {
    size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Expected values from Python's hashlib.sha256(bytes((i * 7 + 3) % 256 for i in range(n))).
  const std::pair<size_t, const char*> cases[] = {
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"}};
  for (const auto& [n, want] : cases) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 7 + 3) % 256);
    EXPECT_EQ(sha256_hex(b.data(), n), want) << n << " bytes";
    Sha256 bytewise;
    for (uint8_t c : b) bytewise.update(&c, 1);
    EXPECT_EQ(bytewise.hex_digest(), want) << n << " bytes, one at a time";
  }
}

TEST(Sha256, FileAndMissingFile) {
  EXPECT_EQ(sha256_file_hex(ONYX_SOURCE_DIR "/tests/unit/data/savez.npz").size(), 64u);
  EXPECT_THROW(sha256_file_hex("/nonexistent/model.onnx"), Error);
}

}  // namespace
}  // namespace onyx
