// ModelProto / GraphProto / NodeProto / AttributeProto / TensorProto / TypeProto readers.
#include "format/loader.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "base/big_alloc.h"
#include "base/checked.h"
#include "base/error.h"
#include "base/half.h"
#include "base/mmap_file.h"
#include "format/wire.h"

namespace onyx::format {
namespace {

namespace fs = std::filesystem;
constexpr int kMaxDepth = 64;

/// External data a load resolved: a mapped file or a blob the caller gave.
struct ExternalBytes {
  const unsigned char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
};

/// State shared by one model load: where external data lives, what to keep alive.
struct LoadCtx {
  std::string base_dir;                       // folder of the model; "" = no external data
  const ExternalBlobs* blobs = nullptr;       // in-memory external data (instead of base_dir)
  std::shared_ptr<void> file_keepalive;       // the model bytes (mmap or copy)
  std::map<std::string, ExternalBytes> external;  // location -> its bytes
  ir::Model* model = nullptr;
  int depth = 0;
  uint64_t sparse_dense_bytes = 0;            // dense bytes of the sparse tensors read so far
};

/// Sparse tensors are stored densely once read, and their dense size is not bounded by
/// the file: a few bytes can declare dims [1e9, 1e9]. So the dense forms of all sparse
/// tensors of one model (initializers and attributes together) may take at most this
/// much: far above the sparse weights models carry, and an allocation a machine can make
/// (the WASM build's whole address space is 4 GiB).
constexpr uint64_t kMaxSparseDenseBytes = sizeof(size_t) == 8 ? uint64_t{4} << 30 : uint64_t{1} << 30;

/// "512 bytes", "3.5 MiB", "4 GiB": sizes in messages.
std::string size_str(long double bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", static_cast<uint64_t>(bytes));
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  int u = -1;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.4g} {}", static_cast<double>(bytes), units[u]);
}

struct RawTensor {
  std::string name;
  Dims dims;
  int32_t data_type = 0;
  bool has_raw = false;
  std::string_view raw;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<std::string> string_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  std::vector<std::pair<std::string, std::string>> external_data;
  int32_t data_location = 0;
};

std::pair<std::string, std::string> read_string_entry(Wire w) {
  std::pair<std::string, std::string> kv;
  while (w.next()) {
    switch (w.tag()) {
      case 1: kv.first = w.str(); break;
      case 2: kv.second = w.str(); break;
      default: w.skip();
    }
  }
  return kv;
}

RawTensor read_raw_tensor(Wire w) {
  RawTensor t;
  while (w.next()) {
    switch (w.tag()) {
      case 1: w.repeated_varint(t.dims); break;
      case 2: t.data_type = w.i32(); break;
      case 4: w.repeated_fixed(t.float_data); break;
      case 5: w.repeated_varint(t.int32_data); break;
      case 6: t.string_data.emplace_back(w.bytes()); break;
      case 7: w.repeated_varint(t.int64_data); break;
      case 8: t.name = w.str(); break;
      case 9: t.raw = w.bytes(); t.has_raw = true; break;
      case 10: w.repeated_fixed(t.double_data); break;
      case 11: w.repeated_varint(t.uint64_data); break;
      case 13: t.external_data.push_back(read_string_entry(w.sub("StringStringEntryProto"))); break;
      case 14: t.data_location = w.i32(); break;
      default: w.skip();
    }
  }
  return t;
}

std::string tensor_label(const RawTensor& t) {
  return t.name.empty() ? std::string("tensor") : "tensor '" + t.name + "'";
}

/// The location as a path, refused when it is empty, absolute or has a '..' part.
fs::path checked_location(const RawTensor& t, const std::string& location) {
  if (location.empty()) fail_model("{}: external data has an empty location", tensor_label(t));
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    fail_model("{}: external data location '{}' is an absolute path; it must be relative to "
               "the model's folder",
               tensor_label(t), location);
  for (const auto& part : loc)
    if (part == "..")
      fail_model("{}: external data location '{}' leaves the model's folder ('..' is not "
                 "allowed)",
                 tensor_label(t), location);
  return loc;
}

/// Finds an external-data location among the caller's in-memory blobs: as written, else
/// in its normal form ("./w.bin", "a//w.bin" name "w.bin", "a/w.bin").
ExternalBytes find_blob(const LoadCtx& ctx, const RawTensor& t, const std::string& location,
                        const fs::path& loc) {
  auto it = ctx.blobs->find(location);
  if (it == ctx.blobs->end()) it = ctx.blobs->find(loc.lexically_normal().generic_string());
  if (it == ctx.blobs->end()) {
    std::string given;
    for (const auto& [k, b] : *ctx.blobs) given += (given.empty() ? "'" : ", '") + k + "'";
    fail_model("{}: external data '{}' was not given (given: {})", tensor_label(t), location,
               given.empty() ? std::string("none") : given);
  }
  const ExternalBlob& b = it->second;
  if (!b.data && b.size)
    fail_model("{}: external data '{}' has {} bytes but no data", tensor_label(t), location, b.size);
  return {static_cast<const unsigned char*>(b.data), b.size,
          std::const_pointer_cast<void>(b.owner)};
}

/// Resolves an external-data location inside the model folder (or among the in-memory
/// blobs), refusing escapes.
const ExternalBytes& open_external(LoadCtx& ctx, const RawTensor& t, const std::string& location) {
  if (ctx.base_dir.empty() && !ctx.blobs)
    fail_model("{}: external data '{}' cannot be resolved for a model loaded from memory",
               tensor_label(t), location);
  fs::path loc = checked_location(t, location);
  auto it = ctx.external.find(location);
  if (it != ctx.external.end()) return it->second;
  ExternalBytes got;
  if (ctx.blobs) {
    got = find_blob(ctx, t, location, loc);
  } else {
    std::error_code ec;
    fs::path base = fs::weakly_canonical(fs::path(ctx.base_dir), ec);
    fs::path full = fs::weakly_canonical(fs::path(ctx.base_dir) / loc, ec);
    if (ec) fail_model("{}: cannot resolve external data '{}': {}", tensor_label(t), location, ec.message());
    auto rel = full.lexically_relative(base);
    if (rel.empty() || *rel.begin() == "..")
      fail_model("{}: external data '{}' resolves to '{}', outside the model's folder '{}'",
                 tensor_label(t), location, full.string(), base.string());
    std::shared_ptr<MappedFile> mf;
    try {
      mf = MappedFile::open(full.string(), "external data file");
    } catch (const Error& e) {
      fail_model("{}: external data file missing or unreadable: {}", tensor_label(t), e.what());
    }
    got = {mf->data(), mf->size(), mf};
  }
  if (ctx.model) ctx.model->external_files.push_back({location, 0});
  return ctx.external[location] = std::move(got);
}

/// Unpacks sub-byte elements (4-bit: two per byte LSB first; 2-bit: four per byte).
void unpack_subbyte(DType dt, const uint8_t* src, size_t n, uint8_t* dst) {
  int bits = dtype_bits(dt);
  bool sign = dt == DType::kInt4 || dt == DType::kInt2;
  int per = 8 / bits;
  uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  for (size_t i = 0; i < n; ++i) {
    uint8_t v = (src[i / per] >> ((i % per) * bits)) & mask;
    if (sign && (v & (1u << (bits - 1)))) v = static_cast<uint8_t>(v | ~mask);
    dst[i] = v;
  }
}

Tensor build_tensor(LoadCtx& ctx, RawTensor& t) {
  if (!dtype_valid(t.data_type))
    fail_model("{}: unknown data_type {} (valid codes are 1..{})", tensor_label(t), t.data_type,
               kMaxDTypeCode);
  DType dt = static_cast<DType>(t.data_type);
  if (t.dims.size() > static_cast<size_t>(kMaxRank))
    fail_model("{}: has {} dims; onyx allows at most {} axes", tensor_label(t), t.dims.size(),
               kMaxRank);
  for (int64_t d : t.dims)
    if (d < 0) fail_model("{}: negative dimension {} in dims {}", tensor_label(t), d, dims_str(t.dims));
  int64_t n;
  try {
    n = dims_numel(t.dims);
  } catch (const Error&) {
    fail_model("{}: dims {} overflow 64-bit element count", tensor_label(t), dims_str(t.dims));
  }
  const size_t count = static_cast<size_t>(n);
  // Bytes (packed or in memory) must fit in size_t, or size checks below would wrap.
  if (count > SIZE_MAX / 16)
    fail_model("{}: dims {} hold {} elements, too many to address", tensor_label(t),
               dims_str(t.dims), n);

  std::string_view bytes;
  bool have_bytes = false;
  std::shared_ptr<void> bytes_owner = ctx.file_keepalive;
  if (t.data_location == 1 || !t.external_data.empty()) {
    std::string location;
    uint64_t offset = 0;
    uint64_t length = 0;
    bool has_length = false;
    // A decimal number of bytes: digits only (no sign, no spaces), within 64 bits.
    auto parse_u64 = [&](const std::string& v, const char* key) {
      bool ok = !v.empty() && v.size() <= 20;
      uint64_t r = 0;
      for (char c : v) {
        if (c < '0' || c > '9' || r > (UINT64_MAX - static_cast<uint64_t>(c - '0')) / 10) {
          ok = false;
          break;
        }
        r = r * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!ok)
        fail_model("{}: external data {} '{}' is not a number of bytes", tensor_label(t), key, v);
      return r;
    };
    for (auto& [k, v] : t.external_data) {
      if (k == "location") location = v;
      else if (k == "offset") offset = parse_u64(v, "offset");
      else if (k == "length") {
        length = parse_u64(v, "length");
        has_length = true;
      }
    }
    const ExternalBytes& ext = open_external(ctx, t, location);
    uint64_t len = has_length ? length : (offset <= ext.size ? ext.size - offset : 0);
    if (offset > ext.size || len > ext.size - offset)
      fail_model("{}: external data range offset {} length {} is past the end of '{}' ({} bytes)",
                 tensor_label(t), offset, len, location, ext.size);
    bytes = std::string_view(reinterpret_cast<const char*>(ext.data) + offset, len);
    have_bytes = true;
    bytes_owner = ext.owner;
    if (ctx.model)
      for (auto& f : ctx.model->external_files)
        if (f.location == location) f.bytes_used += len;
  } else if (t.has_raw) {
    bytes = t.raw;
    have_bytes = true;
  }

  if (dt == DType::kString) {
    if (have_bytes) fail_model("{}: string tensors cannot use raw_data", tensor_label(t));
    if (t.string_data.size() != count)
      fail_model("{}: has {} strings, dims {} need {}", tensor_label(t), t.string_data.size(),
                 dims_str(t.dims), count);
    Tensor out(dt, t.dims);
    for (size_t i = 0; i < count; ++i) out.data<std::string>()[i] = std::move(t.string_data[i]);
    return out;
  }

  if (have_bytes) {
    size_t need = dtype_storage_bytes(dt, count);
    if (bytes.size() != need)
      fail_model("{}: holds {} bytes of data, but dims {} of {} need {}", tensor_label(t),
                 bytes.size(), dims_str(t.dims), dtype_name(dt), need);
    if (dtype_bits(dt) < 8) {
      Tensor out(dt, t.dims);
      unpack_subbyte(dt, reinterpret_cast<const uint8_t*>(bytes.data()), count, out.data<uint8_t>());
      return out;
    }
    if (dt == DType::kBool) {
      // A bool is one byte and any nonzero byte is true; kernels rely on 0 and 1 only.
      const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
      if (std::any_of(b, b + count, [](uint8_t x) { return x > 1; })) {
        Tensor out(dt, t.dims);
        auto* p = out.data<uint8_t>();
        for (size_t i = 0; i < count; ++i) p[i] = b[i] != 0;
        return out;
      }
    }
    size_t es = dtype_size(dt);
    size_t align = es > 8 ? 8 : es;
    if (count > 0 && reinterpret_cast<uintptr_t>(bytes.data()) % align == 0 && bytes_owner) {
      return Tensor::view(dt, t.dims, const_cast<char*>(bytes.data()), bytes_owner);
    }
    // Copied into memory that is not zero-filled first (Tensor(dt, dims) would: a second
    // pass over ~70 MB of fresh pages for ResNet-50); the allocation's tail past the data
    // is zeroed as Tensor's is.
    const size_t alloc = (std::max<size_t>(need, 1) + 63) / 64 * 64;
    void* mem = alloc_aligned(alloc, nullptr, Pages::kConstant);
    if (!mem) fail_runtime("out of memory allocating {} bytes for {}", need, tensor_label(t));
    std::shared_ptr<void> owner(mem, [](void* q) { std::free(q); });
    if (need) std::memcpy(mem, bytes.data(), need);
    std::memset(static_cast<char*>(mem) + need, 0, alloc - need);
    Tensor out = Tensor::view(dt, t.dims, mem, std::move(owner));
    // The file's pages of a copied tensor are not read again: out of the resident set
    // (an unaligned float tensor is copied, ~3 in 4 of a PyTorch export's: they kept
    // ResNet-50's 98 MB of weights resident twice).
    release_mapped_pages(bytes.data(), bytes.size());
    return out;
  }

  auto check = [&](size_t got, size_t want, const char* field) {
    if (got != want)
      fail_model("{}: {} has {} values, dims {} of {} need {}", tensor_label(t), field, got,
                 dims_str(t.dims), dtype_name(dt), want);
  };
  // Check the typed field holds the data before allocating: dims are untrusted.
  switch (dt) {
    case DType::kFloat:
      if (!(count == 0 && t.float_data.empty())) check(t.float_data.size(), count, "float_data");
      break;
    case DType::kComplex64: check(t.float_data.size(), count * 2, "float_data"); break;
    case DType::kDouble: check(t.double_data.size(), count, "double_data"); break;
    case DType::kComplex128: check(t.double_data.size(), count * 2, "double_data"); break;
    case DType::kInt64: check(t.int64_data.size(), count, "int64_data"); break;
    case DType::kUint64:
    case DType::kUint32: check(t.uint64_data.size(), count, "uint64_data"); break;
    case DType::kInt4:
    case DType::kUint4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUint2: {
      size_t per = static_cast<size_t>(8 / dtype_bits(dt));
      check(t.int32_data.size(), (count + per - 1) / per, "int32_data");
      break;
    }
    default: check(t.int32_data.size(), count, "int32_data"); break;
  }
  Tensor out(dt, t.dims);
  // memcpy from an empty vector's data() (null) is undefined even for 0 bytes.
  auto copy_from = [&](const void* src, size_t n) {
    if (n) std::memcpy(out.raw(), src, n);
  };
  switch (dt) {
    case DType::kFloat:
      if (count == 0 && t.float_data.empty()) break;
      check(t.float_data.size(), count, "float_data");
      copy_from(t.float_data.data(), count * 4);
      break;
    case DType::kComplex64:
      check(t.float_data.size(), count * 2, "float_data");
      copy_from(t.float_data.data(), count * 8);
      break;
    case DType::kDouble:
      check(t.double_data.size(), count, "double_data");
      copy_from(t.double_data.data(), count * 8);
      break;
    case DType::kComplex128:
      check(t.double_data.size(), count * 2, "double_data");
      copy_from(t.double_data.data(), count * 16);
      break;
    case DType::kInt64:
      check(t.int64_data.size(), count, "int64_data");
      copy_from(t.int64_data.data(), count * 8);
      break;
    case DType::kUint64:
      check(t.uint64_data.size(), count, "uint64_data");
      copy_from(t.uint64_data.data(), count * 8);
      break;
    case DType::kUint32: {
      check(t.uint64_data.size(), count, "uint64_data");
      auto* p = out.data<uint32_t>();
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<uint32_t>(t.uint64_data[i]);
      break;
    }
    case DType::kInt32:
      check(t.int32_data.size(), count, "int32_data");
      copy_from(t.int32_data.data(), count * 4);
      break;
    case DType::kInt16:
    case DType::kUint16:
    case DType::kFloat16:
    case DType::kBFloat16: {
      check(t.int32_data.size(), count, "int32_data");
      auto* p = out.data<uint16_t>();
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<uint16_t>(t.int32_data[i]);
      break;
    }
    case DType::kInt4:
    case DType::kUint4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUint2: {
      int per = 8 / dtype_bits(dt);
      check(t.int32_data.size(), (count + per - 1) / per, "int32_data");
      std::vector<uint8_t> packed(t.int32_data.size());
      for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<uint8_t>(t.int32_data[i]);
      unpack_subbyte(dt, packed.data(), count, out.data<uint8_t>());
      break;
    }
    default: {  // 8-bit types and bool
      check(t.int32_data.size(), count, "int32_data");
      auto* p = out.data<uint8_t>();
      if (dt == DType::kBool)  // nonzero is true (256 too, which a cast to 8 bits would lose)
        for (size_t i = 0; i < count; ++i) p[i] = t.int32_data[i] != 0;
      else
        for (size_t i = 0; i < count; ++i) p[i] = static_cast<uint8_t>(t.int32_data[i]);
      break;
    }
  }
  return out;
}

std::pair<std::string, Tensor> read_tensor(LoadCtx& ctx, Wire w) {
  RawTensor raw = read_raw_tensor(std::move(w));
  Tensor t = build_tensor(ctx, raw);
  return {raw.name, std::move(t)};
}

/// SparseTensorProto -> dense tensor (values scattered into zeros). Checked as the spec
/// says: values 1-D [NNZ]; int64 indices, either [NNZ] linear or [NNZ, rank] coordinates,
/// each in range and in ascending (lexicographic) order without duplicates; the dense
/// size within kMaxSparseDenseBytes, checked before anything is allocated.
std::pair<std::string, Tensor> read_sparse_tensor(LoadCtx& ctx, Wire w) {
  std::pair<std::string, Tensor> values, indices;
  Dims dims;
  bool has_values = false;
  while (w.next()) {
    switch (w.tag()) {
      case 1: values = read_tensor(ctx, w.sub("SparseTensorProto.values")); has_values = true; break;
      case 2: indices = read_tensor(ctx, w.sub("SparseTensorProto.indices")); break;
      case 3: w.repeated_varint(dims); break;
      default: w.skip();
    }
  }
  const std::string& name = values.first;
  if (!has_values) fail_model("sparse tensor '{}' has no values", name);
  const std::string label = "sparse tensor '" + name + "'";
  const Tensor& v = values.second;
  if (v.rank() != 1)
    fail_model("{}: values must be 1-D ([NNZ]), but have shape {}", label, dims_str(v.dims()));
  const int64_t nnz = v.numel();
  if (dims.empty())
    fail_model("{}: has no dims (the shape of the dense tensor must have rank >= 1)", label);
  if (dims.size() > static_cast<size_t>(kMaxRank))
    fail_model("{}: has {} dims; onyx allows at most {} axes", label, dims.size(), kMaxRank);
  for (int64_t d : dims)
    if (d < 0) fail_model("{}: negative dimension {} in dims {}", label, d, dims_str(dims));
  int64_t total;
  try {
    total = dims_numel(dims);
  } catch (const Error&) {
    fail_model("{}: dense dims {} overflow 64-bit element count", label, dims_str(dims));
  }
  const size_t es = dtype_size(v.dtype());
  if (es == 0) fail_model("{}: values of dtype {} cannot be stored", label, dtype_name(v.dtype()));
  const uint64_t budget_left = kMaxSparseDenseBytes - ctx.sparse_dense_bytes;
  if (static_cast<uint64_t>(total) > budget_left / es) {
    long double bytes = static_cast<long double>(total) * es;
    fail_model("{}: its dense form {} of {} has {} elements ({}) for {} stored value{}; onyx "
               "stores sparse tensors densely and allows at most {} for all the sparse tensors of a "
               "model{}",
               label, dims_str(dims), dtype_name(v.dtype()), total, size_str(bytes), nnz,
               nnz == 1 ? "" : "s", size_str(kMaxSparseDenseBytes),
               ctx.sparse_dense_bytes
                   ? fmt::format(" (those before it take {})", size_str(ctx.sparse_dense_bytes))
                   : std::string());
  }

  const Tensor& ix = indices.second;
  const bool coo2d = ix.defined() && ix.rank() == 2;
  if (!ix.defined()) {
    if (nnz > 0) fail_model("{}: has {} values but no indices", label, nnz);
  } else {
    if (ix.dtype() != DType::kInt64)
      fail_model("{}: indices must be int64, not {}", label, dtype_name(ix.dtype()));
    if (!((ix.rank() == 1 && ix.dim(0) == nnz) ||
          (coo2d && ix.dim(0) == nnz && ix.dim(1) == static_cast<int64_t>(dims.size()))))
      fail_model("{}: indices shape {} does not fit {} values of rank {}: expected [{}] (linear "
                 "indices) or [{}, {}] (one index per dimension)",
                 label, dims_str(ix.dims()), nnz, dims.size(), nnz, nnz, dims.size());
  }
  // Linear position of value k, range-checked; ascending without duplicates.
  std::vector<int64_t> lin(static_cast<size_t>(nnz));
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t p = 0;
    if (!coo2d) {
      p = ix.data<int64_t>()[k];
      if (p < 0 || p >= total)
        fail_model("{}: value {}: index {} out of range for {} elements (dims {})", label, k, p,
                   total, dims_str(dims));
    } else {
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t id = ix.data<int64_t>()[k * static_cast<int64_t>(dims.size()) + static_cast<int64_t>(d)];
        if (id < 0 || id >= dims[d])
          fail_model("{}: value {}: index {} out of range for dimension {} of size {}", label, k, id,
                     d, dims[d]);
        p = p * dims[d] + id;
      }
    }
    if (k > 0 && p <= lin[k - 1])
      fail_model("{}: value {}: index {} {} index {} of the value before it; indices must be in "
                 "ascending order without duplicates", label, k, p,
                 p == lin[k - 1] ? "repeats" : "comes before", lin[k - 1]);
    lin[k] = p;
  }

  ctx.sparse_dense_bytes += static_cast<uint64_t>(total) * es;
  Tensor dense(v.dtype(), dims);
  for (int64_t k = 0; k < nnz; ++k) {
    if (v.dtype() == DType::kString)
      dense.data<std::string>()[lin[k]] = v.data<std::string>()[k];
    else
      std::memcpy(static_cast<char*>(dense.raw()) + lin[k] * es,
                  static_cast<const char*>(v.raw()) + k * es, es);
  }
  return {name, dense};
}

ir::Shape read_shape(Wire w) {
  ir::Shape s;
  while (w.next()) {
    if (w.tag() != 1) {
      w.skip();
      continue;
    }
    if (s.size() == static_cast<size_t>(kMaxRank))
      fail_model("a declared shape has more than {} dims; onyx allows at most {} axes", kMaxRank,
                 kMaxRank);
    Wire d = w.sub("TensorShapeProto.Dimension");
    ir::Dim dim;
    while (d.next()) {
      switch (d.tag()) {
        case 1: dim.value = d.i64(); dim.param.clear();
          if (dim.value < 0) fail_model("negative dim_value {} in a declared shape", dim.value);
          break;
        case 2: dim.param = d.str(); dim.value = -1; break;
        default: d.skip();
      }
    }
    s.push_back(std::move(dim));
  }
  return s;
}

DType checked_dtype(int32_t code, const char* where) {
  if (code == 0) return DType::kUndefined;
  if (!dtype_valid(code)) fail_model("{}: unknown elem_type {}", where, code);
  return static_cast<DType>(code);
}

ir::TypeInfo read_type(LoadCtx& ctx, Wire w);

void read_tensor_type(Wire w, ir::TypeInfo& t) {
  while (w.next()) {
    switch (w.tag()) {
      case 1: t.elem = checked_dtype(w.i32(), "TypeProto.Tensor"); break;
      case 2: t.shape = read_shape(w.sub("TensorShapeProto")); t.has_shape = true; break;
      default: w.skip();
    }
  }
}

ir::TypeInfo read_type(LoadCtx& ctx, Wire w) {
  if (++ctx.depth > kMaxDepth) fail_model("TypeProto nested more than {} levels deep", kMaxDepth);
  ir::TypeInfo t;
  while (w.next()) {
    switch (w.tag()) {
      case 1: t.kind = ir::TypeInfo::Kind::kTensor; read_tensor_type(w.sub("TypeProto.Tensor"), t); break;
      case 8: t.kind = ir::TypeInfo::Kind::kSparseTensor; read_tensor_type(w.sub("TypeProto.SparseTensor"), t); break;
      case 4: {
        t.kind = ir::TypeInfo::Kind::kSequence;
        Wire s = w.sub("TypeProto.Sequence");
        while (s.next())
          if (s.tag() == 1) t.inner = std::make_shared<ir::TypeInfo>(read_type(ctx, s.sub("TypeProto")));
          else s.skip();
        break;
      }
      case 9: {
        t.kind = ir::TypeInfo::Kind::kOptional;
        Wire s = w.sub("TypeProto.Optional");
        while (s.next())
          if (s.tag() == 1) t.inner = std::make_shared<ir::TypeInfo>(read_type(ctx, s.sub("TypeProto")));
          else s.skip();
        break;
      }
      case 5: {
        t.kind = ir::TypeInfo::Kind::kMap;
        Wire s = w.sub("TypeProto.Map");
        while (s.next())
          if (s.tag() == 1) t.key = checked_dtype(s.i32(), "TypeProto.Map");
          else if (s.tag() == 2) t.inner = std::make_shared<ir::TypeInfo>(read_type(ctx, s.sub("TypeProto")));
          else s.skip();
        break;
      }
      default: w.skip();
    }
  }
  --ctx.depth;
  return t;
}

ir::ValueInfo read_value_info(LoadCtx& ctx, Wire w) {
  ir::ValueInfo v;
  while (w.next()) {
    switch (w.tag()) {
      case 1: v.name = w.str(); break;
      case 2:
        try {
          v.type = read_type(ctx, w.sub("TypeProto"));
        } catch (const Error& e) {
          throw Error(e.code(), fmt::format("value '{}': {}", v.name, e.what()));
        }
        break;
      default: w.skip();
    }
  }
  return v;
}

std::shared_ptr<ir::Graph> read_graph(LoadCtx& ctx, Wire w);

ir::Attribute read_attribute(LoadCtx& ctx, Wire w) {
  ir::Attribute a;
  int32_t type = -1;
  while (w.next()) {
    switch (w.tag()) {
      case 1: a.name = w.str(); break;
      case 21: a.ref_attr_name = w.str(); break;
      case 20: type = w.i32(); break;
      case 2: a.f = w.f32(); break;
      case 3: a.i = w.i64(); break;
      case 4: a.s = w.str(); break;
      case 5: a.t = read_tensor(ctx, w.sub("AttributeProto.t")).second; break;
      case 6: a.g = read_graph(ctx, w.sub("GraphProto")); break;
      case 22: a.t = read_sparse_tensor(ctx, w.sub("SparseTensorProto")).second; break;
      case 14: a.tp = read_type(ctx, w.sub("TypeProto")); break;
      case 7: w.repeated_fixed(a.floats); break;
      case 8: w.repeated_varint(a.ints); break;
      case 9: a.strings.emplace_back(w.bytes()); break;
      case 10: a.tensors.push_back(read_tensor(ctx, w.sub("AttributeProto.tensors")).second); break;
      case 11: a.graphs.push_back(read_graph(ctx, w.sub("GraphProto"))); break;
      case 23: a.tensors.push_back(read_sparse_tensor(ctx, w.sub("SparseTensorProto")).second); break;
      case 15: a.type_protos.push_back(read_type(ctx, w.sub("TypeProto"))); break;
      default: w.skip();
    }
  }
  if (type < 0) {
    // IR < 0.0.2 files may omit the type; infer it from the field that is set.
    if (a.g) type = 5;
    else if (a.t.defined()) type = 4;
    else if (!a.floats.empty()) type = 6;
    else if (!a.ints.empty()) type = 7;
    else if (!a.strings.empty()) type = 8;
    else if (!a.s.empty()) type = 3;
    else if (a.f != 0) type = 1;
    else type = 2;
  }
  if (type < 0 || type > 14)
    fail_model("attribute '{}' has unknown type {}", a.name, type);
  a.type = static_cast<ir::Attribute::Type>(type);
  if (a.type == ir::Attribute::Type::kSparseTensor) a.type = ir::Attribute::Type::kTensor;
  if (a.type == ir::Attribute::Type::kSparseTensors) a.type = ir::Attribute::Type::kTensors;
  return a;
}

ir::Node read_node(LoadCtx& ctx, Wire w) {
  ir::Node n;
  while (w.next()) {
    switch (w.tag()) {
      case 1: n.inputs.push_back(w.str()); break;
      case 2: n.outputs.push_back(w.str()); break;
      case 3: n.name = w.str(); break;
      case 4: n.op_type = w.str(); break;
      case 7: n.domain = ir::normalize_domain(w.str()); break;
      case 5: n.attrs.push_back(read_attribute(ctx, w.sub("AttributeProto"))); break;
      default: w.skip();
    }
  }
  if (n.op_type.empty()) fail_model("node '{}' has no op_type", n.name);
  return n;
}

std::shared_ptr<ir::Graph> read_graph(LoadCtx& ctx, Wire w) {
  if (++ctx.depth > kMaxDepth) fail_model("graphs nested more than {} levels deep", kMaxDepth);
  auto g = std::make_shared<ir::Graph>();
  while (w.next()) {
    switch (w.tag()) {
      case 1: g->nodes.push_back(read_node(ctx, w.sub("NodeProto"))); break;
      case 2: g->name = w.str(); break;
      case 5: g->initializers.push_back(read_tensor(ctx, w.sub("TensorProto"))); break;
      case 15: g->initializers.push_back(read_sparse_tensor(ctx, w.sub("SparseTensorProto"))); break;
      case 11: g->inputs.push_back(read_value_info(ctx, w.sub("ValueInfoProto"))); break;
      case 12: g->outputs.push_back(read_value_info(ctx, w.sub("ValueInfoProto"))); break;
      case 13: g->value_info.push_back(read_value_info(ctx, w.sub("ValueInfoProto"))); break;
      case 16: g->metadata.push_back(read_string_entry(w.sub("StringStringEntryProto"))); break;
      default: w.skip();
    }
  }
  for (auto& [name, t] : g->initializers)
    if (name.empty()) fail_model("graph '{}' has an initializer without a name", g->name);
  --ctx.depth;
  return g;
}

std::pair<std::string, int64_t> read_opset(Wire w) {
  std::pair<std::string, int64_t> o{"", 0};
  while (w.next()) {
    switch (w.tag()) {
      case 1: o.first = ir::normalize_domain(w.str()); break;
      case 2: o.second = w.i64(); break;
      default: w.skip();
    }
  }
  return o;
}

ir::Function read_function(LoadCtx& ctx, Wire w) {
  ir::Function f;
  while (w.next()) {
    switch (w.tag()) {
      case 1: f.name = w.str(); break;
      case 4: f.inputs.push_back(w.str()); break;
      case 5: f.outputs.push_back(w.str()); break;
      case 6: f.attribute_names.push_back(w.str()); break;
      case 11: f.attribute_defaults.push_back(read_attribute(ctx, w.sub("AttributeProto"))); break;
      case 7: f.nodes.push_back(read_node(ctx, w.sub("NodeProto"))); break;
      case 9: f.opset_imports.insert(read_opset(w.sub("OperatorSetIdProto"))); break;
      case 10: f.domain = ir::normalize_domain(w.str()); break;
      case 13: f.overload = w.str(); break;
      default: w.skip();
    }
  }
  return f;
}

/// Sets node.opset from the imports; recurses into subgraphs.
void resolve_opsets(std::vector<ir::Node>& nodes, const std::map<std::string, int64_t>& imports,
                    const std::map<std::string, int64_t>& fallback) {
  for (ir::Node& n : nodes) {
    if (auto it = imports.find(n.domain); it != imports.end())
      n.opset = static_cast<int>(it->second);
    else if (auto jt = fallback.find(n.domain); jt != fallback.end())
      n.opset = static_cast<int>(jt->second);
    else
      n.opset = 0;  // unknown domain: reported by the session when the node is resolved
    for (ir::Attribute& a : n.attrs) {
      if (a.g) resolve_opsets(a.g->nodes, imports, fallback);
      for (auto& g : a.graphs) resolve_opsets(g->nodes, imports, fallback);
    }
  }
}

std::shared_ptr<ir::Model> read_model(LoadCtx& ctx, const char* data, size_t size) {
  auto m = std::make_shared<ir::Model>();
  ctx.model = m.get();
  Wire w(data, size, "ModelProto");
  bool has_graph = false;
  while (w.next()) {
    switch (w.tag()) {
      case 1: m->ir_version = w.i64(); break;
      case 2: m->producer_name = w.str(); break;
      case 3: m->producer_version = w.str(); break;
      case 4: m->domain = w.str(); break;
      case 5: m->model_version = w.i64(); break;
      case 6: m->doc_string = w.str(); break;
      case 7: m->graph = read_graph(ctx, w.sub("GraphProto")); has_graph = true; break;
      case 8: {
        auto o = read_opset(w.sub("OperatorSetIdProto"));
        m->opset_imports[o.first] = o.second;
        break;
      }
      case 14: m->metadata.push_back(read_string_entry(w.sub("StringStringEntryProto"))); break;
      case 25: m->functions.push_back(read_function(ctx, w.sub("FunctionProto"))); break;
      default: w.skip();
    }
  }
  if (!has_graph) fail_model("the file holds no graph (is it an ONNX model?)");
  if (m->ir_version < 3 && m->opset_imports.empty()) m->opset_imports[""] = 1;
  if (m->opset_imports.empty()) fail_model("the model imports no opset (opset_import is empty)");
  // Versions are held as int in nodes: a larger one would wrap (2^32 + 17 to 17).
  auto check_opsets = [](const std::map<std::string, int64_t>& imports, const std::string& where) {
    for (auto& [d, v] : imports)
      if (v < 1 || v > INT32_MAX)
        fail_model("{}opset_import for domain '{}' has version {}", where, d.empty() ? "ai.onnx" : d, v);
  };
  check_opsets(m->opset_imports, "");
  for (const ir::Function& f : m->functions) check_opsets(f.opset_imports, "function '" + f.name + "': ");
  resolve_opsets(m->graph->nodes, m->opset_imports, m->opset_imports);
  for (ir::Function& f : m->functions) resolve_opsets(f.nodes, f.opset_imports, m->opset_imports);
  ctx.model = nullptr;
  return m;
}

template <typename F>
auto guarded(const std::string& where, F&& f) {
  try {
    return f();
  } catch (const protozero::exception& e) {
    fail_model("{}: malformed protobuf ({}); the file may be truncated or not an ONNX model", where,
               e.what());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidModel && std::string(e.what()).rfind(where, 0) != 0)
      throw Error(e.code(), where + ": " + e.what());
    throw;
  } catch (const std::bad_alloc&) {
    fail_model("{}: out of memory while reading the model", where);
  } catch (const std::length_error&) {
    fail_model("{}: a length in the file is too large", where);
  }
}

}  // namespace

std::shared_ptr<ir::Model> load_model(const std::string& path) {
  auto file = MappedFile::open(path, "model");
  return guarded(path, [&] {
    LoadCtx ctx;
    fs::path p(path);
    ctx.base_dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
    ctx.file_keepalive = file;
    auto m = read_model(ctx, reinterpret_cast<const char*>(file->data()), file->size());
    m->path = path;
    m->file_bytes = file->size();
    m->keepalive.push_back(file);
    for (auto& [loc, ext] : ctx.external) m->keepalive.push_back(ext.owner);
    return m;
  });
}

std::shared_ptr<ir::Model> load_model_from_bytes(const void* data, size_t size,
                                                 const std::string& base_dir) {
  auto copy = std::shared_ptr<char[]>(new char[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  return guarded("model", [&] {
    LoadCtx ctx;
    ctx.base_dir = base_dir;
    ctx.file_keepalive = std::shared_ptr<void>(copy, copy.get());
    auto m = read_model(ctx, copy.get(), size);
    m->file_bytes = size;
    m->keepalive.push_back(ctx.file_keepalive);
    for (auto& [loc, ext] : ctx.external) m->keepalive.push_back(ext.owner);
    return m;
  });
}

std::shared_ptr<ir::Model> load_model_from_bytes(const void* data, size_t size,
                                                 const ExternalBlobs& external) {
  auto copy = std::shared_ptr<char[]>(new char[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  return guarded("model", [&] {
    LoadCtx ctx;
    ctx.blobs = &external;
    ctx.file_keepalive = std::shared_ptr<void>(copy, copy.get());
    auto m = read_model(ctx, copy.get(), size);
    m->file_bytes = size;
    m->keepalive.push_back(ctx.file_keepalive);
    for (auto& [loc, ext] : ctx.external)
      if (ext.owner) m->keepalive.push_back(ext.owner);
    return m;
  });
}

Tensor read_tensor_proto(const void* data, size_t size) {
  return guarded("TensorProto", [&] {
    LoadCtx ctx;
    auto copy = std::shared_ptr<char[]>(new char[size ? size : 1]);
    if (size) std::memcpy(copy.get(), data, size);
    ctx.file_keepalive = std::shared_ptr<void>(copy, copy.get());
    return read_tensor(ctx, Wire(copy.get(), size, "TensorProto")).second;
  });
}

namespace {

Value read_value_impl(LoadCtx& ctx, Wire w, const ir::TypeInfo& type);

/// Field names of SequenceProto/OptionalProto values onyx cannot hold (it has sequences
/// of tensors and optionals of a tensor or such a sequence only).
const char* unheld_field(uint32_t tag, bool sequence) {
  switch (tag) {
    case 4: return sequence ? "sparse_tensor_values" : "sparse_tensor_value";
    case 5: return sequence ? "sequence_values" : nullptr;
    case 6: return sequence ? "map_values" : "map_value";
    case 7: return sequence ? "optional_values" : "optional_value";
    default: return nullptr;
  }
}

Value read_sequence(LoadCtx& ctx, Wire w, const ir::TypeInfo& type) {
  std::vector<Tensor> items;
  DType elem = type.inner ? type.inner->elem : DType::kUndefined;
  while (w.next()) {
    if (const char* f = unheld_field(w.tag(), true))
      fail_unsupported("SequenceProto holds {}: onyx holds sequences of tensors only", f);
    switch (w.tag()) {
      case 3: items.push_back(read_tensor(ctx, w.sub("SequenceProto.tensor_values")).second); break;
      default: w.skip();
    }
  }
  if (elem == DType::kUndefined && !items.empty()) elem = items[0].dtype();
  return Value::sequence(elem, std::move(items));
}

Value read_optional(LoadCtx& ctx, Wire w, const ir::TypeInfo& type) {
  Value v;
  ir::TypeInfo inner = type.inner ? *type.inner : ir::TypeInfo{};
  while (w.next()) {
    if (const char* f = unheld_field(w.tag(), false))
      fail_unsupported("OptionalProto holds {}: onyx holds optionals of a tensor or a sequence of tensors only", f);
    switch (w.tag()) {
      case 3: v = Value(read_tensor(ctx, w.sub("OptionalProto.tensor_value")).second); break;
      case 5: v = read_sequence(ctx, w.sub("SequenceProto"), inner); break;
      default: w.skip();
    }
  }
  return v;
}

Value read_value_impl(LoadCtx& ctx, Wire w, const ir::TypeInfo& type) {
  switch (type.kind) {
    case ir::TypeInfo::Kind::kSequence: return read_sequence(ctx, std::move(w), type);
    case ir::TypeInfo::Kind::kOptional: return read_optional(ctx, std::move(w), type);
    case ir::TypeInfo::Kind::kMap:
      fail_unsupported("the value is declared {}: onyx holds no map values (MapProto)", type.str());
    default: return Value(read_tensor(ctx, std::move(w)).second);
  }
}

}  // namespace

Value read_value_proto(const void* data, size_t size, const ir::TypeInfo& type) {
  return guarded("value", [&] {
    LoadCtx ctx;
    auto copy = std::shared_ptr<char[]>(new char[size ? size : 1]);
    if (size) std::memcpy(copy.get(), data, size);
    ctx.file_keepalive = std::shared_ptr<void>(copy, copy.get());
    return read_value_impl(ctx, Wire(copy.get(), size, "value"), type);
  });
}

Value read_value_file(const std::string& path, const ir::TypeInfo& type) {
  auto f = MappedFile::open(path, "input file");
  try {
    return read_value_proto(f->data(), f->size(), type);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace onyx::format
