#include "format/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "base/mmap_file.h"

namespace onyx::format {
namespace {

/// A descr parsed: the dtype, and for strings the width and whether it is unicode.
struct Descr {
  DType dtype = DType::kUndefined;
  bool unicode = false;  // '<U<n>' (UTF-32 code points) rather than '|S<n>' (bytes)
  uint64_t width = 0;    // characters per string element
};

Descr parse_descr(const std::string& d, const std::string& what) {
  static const std::pair<const char*, DType> kTable[] = {
      {"f4", DType::kFloat},  {"f8", DType::kDouble}, {"f2", DType::kFloat16},
      {"i1", DType::kInt8},   {"i2", DType::kInt16},  {"i4", DType::kInt32},
      {"i8", DType::kInt64},  {"u1", DType::kUint8},  {"u2", DType::kUint16},
      {"u4", DType::kUint32}, {"u8", DType::kUint64}, {"b1", DType::kBool},
      {"c8", DType::kComplex64}, {"c16", DType::kComplex128}, {"?", DType::kBool}};
  if (d.empty()) fail_arg("{}: empty dtype descriptor", what);
  char order = d[0];
  std::string code = (order == '<' || order == '|' || order == '=' || order == '>') ? d.substr(1) : d;
  if (!code.empty() && (code[0] == 'U' || code[0] == 'S')) {
    Descr r{DType::kString, code[0] == 'U', 0};
    if (code.size() < 2 || code.size() > 12 || code.find_first_not_of("0123456789", 1) != std::string::npos)
      fail_arg("{}: malformed string dtype '{}'", what, d);
    r.width = std::stoull(code.substr(1));
    if (r.unicode && order == '>')
      fail_arg("{}: big-endian dtype '{}' is not supported; save with a little-endian dtype ('<U')", what, d);
    return r;
  }
  if (code == "O")
    fail_arg("{}: dtype 'O' (Python objects, pickled) cannot be read; save strings with .astype(str) "
             "(numpy unicode) or .astype(bytes)", what);
  if (order == '>' && code != "i1" && code != "u1" && code != "b1")
    fail_arg("{}: big-endian dtype '{}' is not supported; save with a little-endian dtype", what, d);
  for (const auto& [k, v] : kTable)
    if (code == k) return {v, false, 0};
  fail_arg("{}: unsupported numpy dtype '{}'", what, d);
}

/// Appends the UTF-8 form of code point `c` to `out`; code points U+DC80..U+DCFF are the
/// bytes 0x80..0xFF that "surrogateescape" decoding made of bytes that were not UTF-8.
void append_code_point(uint32_t c, std::string& out, const std::string& what, int64_t index) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out += static_cast<char>(c - 0xDC00);
  } else if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) {
    fail_arg("{}: string element {} holds U+{:04X}, which is not a Unicode character", what, index, c);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

/// The code points of `s` read as UTF-8; a byte that does not start a valid UTF-8
/// sequence (overlong forms, encoded surrogates and values past U+10FFFF are not valid)
/// becomes U+DC00 + byte, as Python's "surrogateescape" does.
std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> out;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = b[i];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (b[i + k] & 0x3Fu);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back(0xDC00u + c);
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

/// Value of `key` in the header dict, as the raw text up to the next top-level comma.
std::string header_field(const std::string& h, const std::string& key, const std::string& what) {
  auto p = h.find("'" + key + "'");
  if (p == std::string::npos) fail_arg("{}: npy header lacks '{}'", what, key);
  p = h.find(':', p);
  if (p == std::string::npos) fail_arg("{}: malformed npy header", what);
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  if (p < h.size() && h[p] == '(') {
    auto e = h.find(')', p);
    if (e == std::string::npos) fail_arg("{}: malformed shape in npy header", what);
    return h.substr(p, e - p + 1);
  }
  auto e = h.find_first_of(",}", p);
  return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

}  // namespace

Tensor read_npy(const void* data, size_t size, const std::string& what) {
  const auto* b = static_cast<const unsigned char*>(data);
  if (size < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0)
    fail_arg("{}: not a .npy file (bad magic)", what);
  int major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = b[8] | (b[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail_arg("{}: truncated npy header", what);
    hlen = b[8] | (b[9] << 8) | (static_cast<size_t>(b[10]) << 16) | (static_cast<size_t>(b[11]) << 24);
    hstart = 12;
  } else {
    fail_arg("{}: unsupported npy format version {}", what, major);
  }
  if (hstart + hlen > size) fail_arg("{}: npy header runs past the end of the file", what);
  std::string h(reinterpret_cast<const char*>(b + hstart), hlen);
  std::string descr = header_field(h, "descr", what);
  auto q1 = descr.find('\''), q2 = descr.rfind('\'');
  if (q1 == std::string::npos || q2 <= q1) fail_arg("{}: malformed descr in npy header", what);
  Descr dsc = parse_descr(descr.substr(q1 + 1, q2 - q1 - 1), what);
  DType dt = dsc.dtype;
  if (header_field(h, "fortran_order", what).find("True") != std::string::npos)
    fail_arg("{}: Fortran-ordered arrays are not supported; save with np.ascontiguousarray", what);
  std::string shape = header_field(h, "shape", what);
  Dims dims;
  size_t i = 0;
  while (i < shape.size()) {
    if (shape[i] == '-')
      fail_arg("{}: negative dimension in npy header shape {}", what, shape);
    if (shape[i] >= '0' && shape[i] <= '9') {
      int64_t v = 0;
      while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
        if (v > (int64_t{1} << 56)) fail_arg("{}: dimension too large in npy header", what);
        v = v * 10 + (shape[i] - '0');
        ++i;
      }
      dims.push_back(v);
    } else {
      ++i;
    }
  }
  // Check the data size before allocating: the shape in the header is untrusted.
  int64_t numel;
  try {
    numel = dims_numel(dims);
  } catch (const Error&) {
    fail_arg("{}: npy shape {} has more elements than fit in 64 bits", what, dims_str(dims));
  }
  const size_t avail = size - hstart - hlen;
  const unsigned char* body = b + hstart + hlen;
  if (dt == DType::kString) {
    uint64_t es = dsc.unicode ? dsc.width * 4 : dsc.width;
    std::string descr_text = descr.substr(q1 + 1, q2 - q1 - 1);
    if (es && static_cast<uint64_t>(numel) > avail / es)
      fail_arg("{}: npy data is {} bytes, shape {} of {} needs {} per element (truncated file?)", what,
               avail, dims_str(dims), descr_text, es);
    // Each element costs a std::string even when empty: bound the count by the data too.
    if (es == 0 && numel > (int64_t{1} << 24))
      fail_arg("{}: npy shape {} of empty strings ({}) is too large", what, dims_str(dims), descr_text);
    Tensor t(dt, dims);
    auto* out = t.data<std::string>();
    for (int64_t k = 0; k < numel; ++k) {
      const unsigned char* e = body + static_cast<uint64_t>(k) * es;
      std::string& s = out[k];
      if (dsc.unicode) {
        uint64_t len = dsc.width;
        auto cp = [&](uint64_t j) {
          const unsigned char* q = e + j * 4;
          return static_cast<uint32_t>(q[0]) | (static_cast<uint32_t>(q[1]) << 8) |
                 (static_cast<uint32_t>(q[2]) << 16) | (static_cast<uint32_t>(q[3]) << 24);
        };
        while (len > 0 && cp(len - 1) == 0) --len;
        for (uint64_t j = 0; j < len; ++j) append_code_point(cp(j), s, what, k);
      } else {
        uint64_t len = dsc.width;
        while (len > 0 && e[len - 1] == 0) --len;
        s.assign(reinterpret_cast<const char*>(e), len);
      }
    }
    return t;
  }
  size_t es = dtype_size(dt);
  if (static_cast<uint64_t>(numel) > SIZE_MAX / es)
    fail_arg("{}: npy shape {} of {} is too large", what, dims_str(dims), dtype_name(dt));
  size_t need = static_cast<size_t>(numel) * es;
  if (avail < need)
    fail_arg("{}: npy data is {} bytes, shape {} of {} needs {} (truncated file?)", what, avail,
             dims_str(dims), dtype_name(dt), need);
  Tensor t(dt, dims);
  if (need) std::memcpy(t.raw(), body, need);
  if (dt == DType::kBool)
    for (int64_t k = 0; k < t.numel(); ++k) t.data<uint8_t>()[k] = t.data<uint8_t>()[k] != 0;
  return t;
}

Tensor read_npy_file(const std::string& path) {
  auto f = MappedFile::open(path, "npy file");
  return read_npy(f->data(), f->size(), path);
}

DType npy_bits_dtype(DType t) {
  switch (t) {
    case DType::kBFloat16: return DType::kUint16;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kUint4:
    case DType::kFloat4E2M1:
    case DType::kUint2: return DType::kUint8;
    case DType::kInt4:
    case DType::kInt2: return DType::kInt8;
    default: return DType::kUndefined;
  }
}

std::string npy_bits_note(DType t) {
  DType bits = npy_bits_dtype(t);
  if (bits == DType::kUndefined) return "";
  std::string n = fmt::format("{} values as their raw bits ({}", dtype_name(t), dtype_name(bits));
  if (t == DType::kInt4) n += ", values -8..7";
  else if (t == DType::kInt2) n += ", values -2..1";
  else if (t == DType::kUint4 || t == DType::kFloat4E2M1) n += ", one 4-bit value 0..15 per byte";
  else if (t == DType::kUint2) n += ", values 0..3";
  return n + ")";
}

Tensor npy_as_declared(const Tensor& t, DType declared, const std::string& what) {
  DType bits = npy_bits_dtype(declared);
  if (bits == DType::kUndefined || t.dtype() == declared || !t.defined()) return t;
  auto view_as = [&](const Tensor& src) {
    return Tensor::view(declared, src.dims(), const_cast<void*>(src.raw()), std::make_shared<Tensor>(src));
  };
  if (declared == DType::kBFloat16 || (bits == DType::kUint8 && declared != DType::kUint4 && declared != DType::kUint2 &&
                                       declared != DType::kFloat4E2M1)) {
    if (t.dtype() != bits)
      fail_arg("{} is {}, but {} is declared: give its raw bits as {} (numpy has no {})", what, dtype_name(t.dtype()),
               dtype_name(declared), dtype_name(bits), dtype_name(declared));
    return view_as(t);
  }
  // 4-bit and 2-bit: any integer array whose values fit; float4e2m1 takes uint8 bits only.
  int64_t lo = 0, hi = 0;
  switch (declared) {
    case DType::kInt4: lo = -8, hi = 7; break;
    case DType::kUint4:
    case DType::kFloat4E2M1: lo = 0, hi = 15; break;
    case DType::kInt2: lo = -2, hi = 1; break;
    default: lo = 0, hi = 3; break;  // uint2
  }
  bool integer = dtype_is_integer(t.dtype()) && dtype_bits(t.dtype()) >= 8;
  if (!integer || (declared == DType::kFloat4E2M1 && t.dtype() != DType::kUint8))
    fail_arg("{} is {}, but {} is declared: give {} (numpy has no {})", what, dtype_name(t.dtype()),
             dtype_name(declared), declared == DType::kFloat4E2M1 ? "its raw bits as uint8" : "integers", dtype_name(declared));
  Tensor out(declared, t.dims());
  auto* dst = out.data<int8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = 0;
    bool big = false;  // a uint64 above INT64_MAX
    switch (t.dtype()) {
      case DType::kInt8: v = t.data<int8_t>()[i]; break;
      case DType::kUint8: v = t.data<uint8_t>()[i]; break;
      case DType::kInt16: v = t.data<int16_t>()[i]; break;
      case DType::kUint16: v = t.data<uint16_t>()[i]; break;
      case DType::kInt32: v = t.data<int32_t>()[i]; break;
      case DType::kUint32: v = t.data<uint32_t>()[i]; break;
      case DType::kInt64: v = t.data<int64_t>()[i]; break;
      default: {
        uint64_t u = t.data<uint64_t>()[i];
        big = u > static_cast<uint64_t>(INT64_MAX);
        v = static_cast<int64_t>(u);
      }
    }
    if (big || v < lo || v > hi)
      fail_arg("{}: element {} is {}, outside the range of {} [{}, {}]", what, i,
               big ? std::to_string(t.data<uint64_t>()[i]) : std::to_string(v), dtype_name(declared), lo, hi);
    dst[i] = static_cast<int8_t>(v);
  }
  return out;
}

std::string write_npy(const Tensor& t) {
  std::string descr(dtype_numpy(t.dtype()));
  DType bits = npy_bits_dtype(t.dtype());
  if (bits != DType::kUndefined) descr = dtype_numpy(bits);
  std::vector<std::vector<uint32_t>> text;  // strings as code points
  uint64_t width = 0;
  if (t.dtype() == DType::kString) {
    text.reserve(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const std::string& s = t.data<std::string>()[i];
      if (!s.empty() && s.back() == '\0')
        fail_arg("string element {} ends in a NUL byte, which numpy's fixed-width strings cannot hold "
                 "(they are NUL-padded); write it as .pb instead", i);
      text.push_back(code_points(s));
      width = std::max<uint64_t>(width, text.back().size());
    }
    descr = "<U" + std::to_string(std::max<uint64_t>(width, 1));
    width = std::max<uint64_t>(width, 1);
  }
  if (descr.empty())
    fail_arg("dtype {} has no numpy equivalent; cannot write it as .npy", dtype_name(t.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) shape += std::to_string(t.dim(i)) + (t.rank() == 1 ? "," : (i + 1 < t.rank() ? ", " : ""));
  shape += ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  bool v2 = 10 + h.size() + 1 + 63 > 0xffff;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + h.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  h += std::string(pad, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += static_cast<char>(0);
  for (size_t k = 0; k < (v2 ? 4u : 2u); ++k) out += static_cast<char>((h.size() >> (8 * k)) & 0xff);
  out += h;
  if (t.dtype() == DType::kString) {
    if (static_cast<uint64_t>(t.numel()) > (SIZE_MAX / 4 - out.size()) / width)
      fail_arg("string tensor {} with strings of {} characters is too large for .npy", dims_str(t.dims()), width);
    size_t start = out.size();
    out.resize(start + static_cast<size_t>(t.numel()) * width * 4, '\0');
    for (size_t i = 0; i < text.size(); ++i)
      for (size_t j = 0; j < text[i].size(); ++j) {
        uint32_t c = text[i][j];
        char* q = out.data() + start + (i * width + j) * 4;
        q[0] = static_cast<char>(c & 0xff);
        q[1] = static_cast<char>((c >> 8) & 0xff);
        q[2] = static_cast<char>((c >> 16) & 0xff);
        q[3] = static_cast<char>((c >> 24) & 0xff);
      }
    return out;
  }
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy_file(const std::string& path, const Tensor& t) {
  std::string bytes = write_npy(t);
  std::ofstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) fail(ErrorCode::kIo, "error writing '{}'", path);
}

}  // namespace onyx::format
