// Raw-deflate decompression with zlib, for deflated .npz entries (np.savez_compressed).
// Lives with the CLI so that onyx_core (and its WASM build) stays free of zlib.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace onyx::cli {

/// A format::InflateFn: inflates raw deflate `data` to exactly `out_size` bytes; throws
/// onyx::Error naming `what` when the stream is corrupt or has another length.
std::string zlib_inflate(const uint8_t* data, size_t size, size_t out_size, const std::string& what);

}  // namespace onyx::cli
