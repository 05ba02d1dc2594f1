#include "tools/onyx/zlib_inflate.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "base/error.h"

namespace onyx::cli {

std::string zlib_inflate(const uint8_t* data, size_t size, size_t out_size, const std::string& what) {
  std::string out(out_size, '\0');
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) fail_runtime("{}: cannot start zlib", what);
  size_t in_pos = 0, out_pos = 0;
  uint8_t spare;  // once out_size bytes are out, one more byte means the stream is too long
  const char* problem = nullptr;
  for (;;) {
    bool full = out_pos == out_size;
    s.next_in = const_cast<Bytef*>(data + in_pos);
    s.avail_in = static_cast<uInt>(std::min<size_t>(size - in_pos, UINT_MAX));
    s.next_out = full ? &spare : reinterpret_cast<Bytef*>(out.data() + out_pos);
    s.avail_out = full ? 1 : static_cast<uInt>(std::min<size_t>(out_size - out_pos, UINT_MAX));
    uInt ai = s.avail_in, ao = s.avail_out;
    int rc = inflate(&s, Z_NO_FLUSH);
    in_pos += ai - s.avail_in;
    if (full && s.avail_out == 0) { problem = "it inflates to more bytes than its header says"; break; }
    if (!full) out_pos += ao - s.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) { problem = s.msg ? s.msg : "zlib error"; break; }
    if (ai == s.avail_in && ao == s.avail_out) { problem = "the stream is truncated"; break; }
  }
  inflateEnd(&s);
  if (problem) fail_arg("{}: corrupt deflate data: {}", what, problem);
  if (out_pos != out_size) fail_arg("{}: inflated to {} bytes, its header says {}", what, out_pos, out_size);
  return out;
}

}  // namespace onyx::cli
