// SHA-256 (FIPS 180-4): a small streaming implementation for file fingerprints.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace onyx {

/// Incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  /// The 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  /// The digest as 64 lowercase hex characters.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

/// SHA-256 of a byte range, as lowercase hex.
std::string sha256_hex(const void* data, size_t size);
/// SHA-256 of a file's contents, as lowercase hex. Throws onyx::Error if it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace onyx
