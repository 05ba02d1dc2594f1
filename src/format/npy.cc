#include "format/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "base/mmap_file.h"

namespace onyx::format {
namespace {

DType dtype_from_descr(const std::string& d, const std::string& what) {
  static const std::pair<const char*, DType> kTable[] = {
      {"f4", DType::kFloat},  {"f8", DType::kDouble}, {"f2", DType::kFloat16},
      {"i1", DType::kInt8},   {"i2", DType::kInt16},  {"i4", DType::kInt32},
      {"i8", DType::kInt64},  {"u1", DType::kUint8},  {"u2", DType::kUint16},
      {"u4", DType::kUint32}, {"u8", DType::kUint64}, {"b1", DType::kBool},
      {"c8", DType::kComplex64}, {"c16", DType::kComplex128}, {"?", DType::kBool}};
  if (d.empty()) fail_arg("{}: empty dtype descriptor", what);
  char order = d[0];
  std::string code = (order == '<' || order == '|' || order == '=' || order == '>') ? d.substr(1) : d;
  if (order == '>' && code != "i1" && code != "u1" && code != "b1")
    fail_arg("{}: big-endian dtype '{}' is not supported; save with a little-endian dtype", what, d);
  for (const auto& [k, v] : kTable)
    if (code == k) return v;
  fail_arg("{}: unsupported numpy dtype '{}'", what, d);
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
  DType dt = dtype_from_descr(descr.substr(q1 + 1, q2 - q1 - 1), what);
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
  size_t es = dtype_size(dt);
  if (static_cast<uint64_t>(numel) > SIZE_MAX / es)
    fail_arg("{}: npy shape {} of {} is too large", what, dims_str(dims), dtype_name(dt));
  size_t need = static_cast<size_t>(numel) * es;
  size_t avail = size - hstart - hlen;
  if (avail < need)
    fail_arg("{}: npy data is {} bytes, shape {} of {} needs {} (truncated file?)", what, avail,
             dims_str(dims), dtype_name(dt), need);
  Tensor t(dt, dims);
  if (need) std::memcpy(t.raw(), b + hstart + hlen, need);
  if (dt == DType::kBool)
    for (int64_t k = 0; k < t.numel(); ++k) t.data<uint8_t>()[k] = t.data<uint8_t>()[k] != 0;
  return t;
}

Tensor read_npy_file(const std::string& path) {
  auto f = MappedFile::open(path, "npy file");
  return read_npy(f->data(), f->size(), path);
}

std::string write_npy(const Tensor& t) {
  std::string_view descr = dtype_numpy(t.dtype());
  if (descr.empty() && t.dtype() == DType::kBFloat16) descr = "<u2";  // raw bits
  if (descr.empty())
    fail_arg("dtype {} has no numpy equivalent; cannot write it as .npy", dtype_name(t.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) shape += std::to_string(t.dim(i)) + (t.rank() == 1 ? "," : (i + 1 < t.rank() ? ", " : ""));
  shape += ")";
  std::string h = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  h += std::string(pad, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  out += h;
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
