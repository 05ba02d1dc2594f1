// numpy .npz archives (np.savez / np.savez_compressed): a ZIP file of .npy arrays.
// The reader handles stored entries itself and deflated ones through an inflate
// function supplied by the caller, so the core library needs no compression library
// (the CLI passes zlib's; see tools/onyx/zlib_inflate.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::format {

/// Decompresses a raw deflate stream (no zlib or gzip header) that must expand to exactly
/// `out_size` bytes. Throws onyx::Error (naming `what`) on corrupt data.
using InflateFn = std::function<std::string(const uint8_t* data, size_t size, size_t out_size,
                                             const std::string& what)>;

/// One array of an archive: its key (entry name without ".npy") and its values.
struct NpzArray {
  std::string name;
  Tensor tensor;
};

/// Parses .npz bytes: every entry must be a .npy file, stored or (with `inflate`) deflated.
/// ZIP64 archives (numpy writes them) are read; multi-disk and encrypted archives are
/// refused. Checks every offset and size against the buffer and every entry's CRC-32.
/// Throws onyx::Error naming `what` and the entry on any fault. Arrays keep archive order.
std::vector<NpzArray> read_npz(const void* data, size_t size, const std::string& what = "npz",
                               const InflateFn& inflate = {});
std::vector<NpzArray> read_npz_file(const std::string& path, const InflateFn& inflate = {});

/// Serializes arrays as an uncompressed .npz (what np.savez writes, loadable by np.load).
std::string write_npz(const std::vector<NpzArray>& arrays);
void write_npz_file(const std::string& path, const std::vector<NpzArray>& arrays);

/// CRC-32 (IEEE 802.3, the ZIP checksum), continuing from `crc` (0 to start).
uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace onyx::format
