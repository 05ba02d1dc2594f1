#include "format/npz.h"

#include <array>
#include <cstring>
#include <fstream>
#include <set>

#include "base/error.h"
#include "base/mmap_file.h"
#include "format/npy.h"

namespace onyx::format {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                   kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30;
// deflate cannot expand data by more than about 1032:1; a larger claim is a corrupt header.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct Reader {
  const uint8_t* b;
  size_t n;
  const std::string& what;
  void need(uint64_t off, uint64_t len, const char* field) const {
    if (off > n || len > n - off)
      fail_arg("{}: not a valid .npz (ZIP) file: {} at offset {} runs past the end of the {} bytes",
               what, field, off, n);
  }
  uint16_t u16(uint64_t off) const { return static_cast<uint16_t>(b[off] | (b[off + 1] << 8)); }
  uint32_t u32(uint64_t off) const {
    return uint32_t{b[off]} | (uint32_t{b[off + 1]} << 8) | (uint32_t{b[off + 2]} << 16) | (uint32_t{b[off + 3]} << 24);
  }
  uint64_t u64(uint64_t off) const { return u32(off) | (uint64_t{u32(off + 4)} << 32); }
};

struct Entry {
  std::string name;
  uint16_t flags, method;
  uint32_t crc;
  uint64_t csize, usize, offset;
};

uint32_t crc_table_entry(uint32_t c) {
  for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  return c;
}

}  // namespace

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) t[i] = crc_table_entry(i);
    return t;
  }();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::vector<NpzArray> read_npz(const void* data, size_t size, const std::string& what,
                               const InflateFn& inflate) {
  Reader r{static_cast<const uint8_t*>(data), size, what};
  if (size < kEndSize) fail_arg("{}: not a .npz file ({} bytes, too small for a ZIP archive)", what, size);
  if (r.u32(0) != kLocalSig && r.u32(0) != kEndSig)
    fail_arg("{}: not a .npz file (no ZIP signature at the start; np.savez writes a ZIP archive)", what);
  // The end-of-central-directory record sits in the last 22 + 65535 (comment) bytes.
  size_t end = SIZE_MAX;
  size_t lowest = size > kEndSize + 65535 ? size - kEndSize - 65535 : 0;
  for (size_t p = size - kEndSize + 1; p-- > lowest;) {
    if (r.u32(p) == kEndSig && p + kEndSize + r.u16(p + 20) == size) {
      end = p;
      break;
    }
  }
  if (end == SIZE_MAX) fail_arg("{}: not a valid .npz (ZIP) file: no end-of-central-directory record (truncated?)", what);
  uint64_t disk = r.u16(end + 4), cd_disk = r.u16(end + 6), count = r.u16(end + 10);
  uint64_t cd_size = r.u32(end + 12), cd_off = r.u32(end + 16);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (end < 20 || r.u32(end - 20) != kZip64LocatorSig)
      fail_arg("{}: ZIP64 archive without a ZIP64 locator", what);
    uint64_t z = r.u64(end - 20 + 8);
    r.need(z, 56, "ZIP64 end record");
    if (r.u32(z) != kZip64EndSig) fail_arg("{}: bad ZIP64 end record signature", what);
    disk = r.u32(z + 16), cd_disk = r.u32(z + 20), count = r.u64(z + 32);
    cd_size = r.u64(z + 40), cd_off = r.u64(z + 48);
  }
  if (disk != 0 || cd_disk != 0) fail_arg("{}: multi-disk ZIP archives are not supported", what);
  r.need(cd_off, cd_size, "central directory");
  if (count > cd_size / kCentralSize) fail_arg("{}: central directory claims {} entries in {} bytes", what, count, cd_size);

  std::vector<Entry> entries;
  uint64_t p = cd_off;
  for (uint64_t i = 0; i < count; ++i) {
    r.need(p, kCentralSize, "central directory entry");
    if (r.u32(p) != kCentralSig) fail_arg("{}: bad central directory entry {} (signature)", what, i);
    Entry e;
    e.flags = r.u16(p + 8), e.method = r.u16(p + 10), e.crc = r.u32(p + 16);
    e.csize = r.u32(p + 20), e.usize = r.u32(p + 24), e.offset = r.u32(p + 42);
    uint16_t name_len = r.u16(p + 28), extra_len = r.u16(p + 30), comment_len = r.u16(p + 32);
    r.need(p + kCentralSize, uint64_t{name_len} + extra_len + comment_len, "central directory entry name");
    e.name.assign(reinterpret_cast<const char*>(r.b + p + kCentralSize), name_len);
    // ZIP64 extra field: 64-bit values for the fields that hold 0xFFFFFFFF, in order.
    uint64_t x = p + kCentralSize + name_len, x_end = x + extra_len;
    while (x + 4 <= x_end) {
      uint16_t id = r.u16(x), len = r.u16(x + 2);
      if (x + 4 + len > x_end) fail_arg("{}: entry '{}' has a malformed extra field", what, e.name);
      if (id == 0x0001) {
        uint64_t q = x + 4, q_end = q + len;
        for (uint64_t* f : {&e.usize, &e.csize, &e.offset}) {
          if (*f != 0xFFFFFFFF) continue;
          if (q + 8 > q_end) fail_arg("{}: entry '{}' has a short ZIP64 extra field", what, e.name);
          *f = r.u64(q);
          q += 8;
        }
      }
      x += 4 + len;
    }
    p += kCentralSize + name_len + extra_len + comment_len;
    entries.push_back(std::move(e));
  }

  std::vector<NpzArray> out;
  std::set<std::string> seen;
  for (const Entry& e : entries) {
    if (!e.name.empty() && e.name.back() == '/') continue;  // a folder entry
    std::string where = what + ": entry '" + e.name + "'";
    if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
      fail_arg("{} is not a .npy array (an .npz holds only .npy files)", where);
    if (e.flags & 1) fail_arg("{} is encrypted; encrypted archives are not supported", where);
    r.need(e.offset, kLocalSize, "local header");
    if (r.u32(e.offset) != kLocalSig) fail_arg("{}: bad local header signature", where);
    uint64_t data_off = e.offset + kLocalSize + r.u16(e.offset + 26) + r.u16(e.offset + 28);
    r.need(data_off, e.csize, "entry data");
    const uint8_t* src = r.b + data_off;
    std::string inflated;
    const uint8_t* npy = src;
    uint64_t npy_size = e.csize;
    if (e.method == 0) {
      if (e.csize != e.usize) fail_arg("{} is stored but its sizes differ ({} vs {})", where, e.csize, e.usize);
    } else if (e.method == 8) {
      if (!inflate)
        fail_unsupported("{} is deflated (np.savez_compressed) and this build reads only stored "
                         "entries; save with np.savez, or use the onyx CLI (built with zlib)", where);
      if (e.usize / kMaxDeflateRatio > e.csize + 1)
        fail_arg("{} claims {} bytes from {} compressed ones; the archive is corrupt", where, e.usize, e.csize);
      if (e.usize > SIZE_MAX / 2) fail_arg("{} is too large ({} bytes)", where, e.usize);
      inflated = inflate(src, static_cast<size_t>(e.csize), static_cast<size_t>(e.usize), where);
      if (inflated.size() != e.usize)
        fail_arg("{} inflated to {} bytes, its header says {}", where, inflated.size(), e.usize);
      npy = reinterpret_cast<const uint8_t*>(inflated.data());
      npy_size = inflated.size();
    } else {
      fail_unsupported("{} uses ZIP compression method {}; only stored (0) and deflate (8) are supported",
                       where, e.method);
    }
    uint32_t crc = crc32(npy, static_cast<size_t>(npy_size));
    if (crc != e.crc) fail_arg("{} fails its CRC-32 check (corrupt archive)", where);
    std::string key = e.name.substr(0, e.name.size() - 4);
    if (!seen.insert(key).second) fail_arg("{} appears twice in the archive", where);
    out.push_back({key, read_npy(npy, static_cast<size_t>(npy_size), where)});
  }
  return out;
}

std::vector<NpzArray> read_npz_file(const std::string& path, const InflateFn& inflate) {
  auto f = MappedFile::open(path, "npz file");
  return read_npz(f->data(), f->size(), path, inflate);
}

namespace {
void put16(std::string& s, uint32_t v) { s += static_cast<char>(v & 0xff), s += static_cast<char>((v >> 8) & 0xff); }
void put32(std::string& s, uint32_t v) { put16(s, v & 0xffff), put16(s, v >> 16); }
}  // namespace

std::string write_npz(const std::vector<NpzArray>& arrays) {
  std::string out, cd;
  for (const auto& a : arrays) {
    std::string npy = write_npy(a.tensor);
    std::string name = a.name + ".npy";
    if (npy.size() >= 0xFFFFFFFFu || out.size() >= 0xFFFFFFFFu || name.size() > 0xFFFF)
      fail_arg("write_npz: array '{}' is too large for a plain ZIP archive", a.name);
    uint32_t crc = crc32(npy.data(), npy.size());
    uint32_t offset = static_cast<uint32_t>(out.size());
    // Local header: version 2.0, no flags, stored, DOS time 1980-01-01 00:00.
    put32(out, kLocalSig), put16(out, 20), put16(out, 0), put16(out, 0), put16(out, 0), put16(out, 0x21);
    put32(out, crc), put32(out, static_cast<uint32_t>(npy.size())), put32(out, static_cast<uint32_t>(npy.size()));
    put16(out, static_cast<uint32_t>(name.size())), put16(out, 0);
    out += name;
    out += npy;
    put32(cd, kCentralSig), put16(cd, 20), put16(cd, 20), put16(cd, 0), put16(cd, 0), put16(cd, 0), put16(cd, 0x21);
    put32(cd, crc), put32(cd, static_cast<uint32_t>(npy.size())), put32(cd, static_cast<uint32_t>(npy.size()));
    put16(cd, static_cast<uint32_t>(name.size())), put16(cd, 0), put16(cd, 0), put16(cd, 0), put16(cd, 0);
    put32(cd, 0x01800000u), put32(cd, offset);  // external attributes: a regular file, mode 0600
    cd += name;
  }
  if (arrays.size() >= 0xFFFF || out.size() >= 0xFFFFFFFFu) fail_arg("write_npz: too many or too large arrays");
  uint32_t cd_off = static_cast<uint32_t>(out.size());
  out += cd;
  put32(out, kEndSig), put16(out, 0), put16(out, 0);
  put16(out, static_cast<uint32_t>(arrays.size())), put16(out, static_cast<uint32_t>(arrays.size()));
  put32(out, static_cast<uint32_t>(cd.size())), put32(out, cd_off), put16(out, 0);
  return out;
}

void write_npz_file(const std::string& path, const std::vector<NpzArray>& arrays) {
  std::string bytes = write_npz(arrays);
  std::ofstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) fail(ErrorCode::kIo, "error writing '{}'", path);
}

}  // namespace onyx::format
