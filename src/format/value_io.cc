#include "format/value_io.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <protozero/pbf_writer.hpp>

#include "base/error.h"
#include "format/loader.h"
#include "format/npy.h"

namespace onyx::format {
namespace {

namespace fs = std::filesystem;
using Kind = ir::TypeInfo::Kind;

// OptionalProto.DataType / SequenceProto.DataType (onnx-data.proto).
constexpr int32_t kElemTensor = 1;
constexpr int32_t kElemSequence = 3;

/// Values packed as onnx.proto stores 4-bit and 2-bit types: element i in bits
/// (i % per) * bits of byte i / per.
std::string pack_subbyte(const Tensor& t) {
  int bits = dtype_bits(t.dtype());
  size_t per = static_cast<size_t>(8 / bits);
  size_t n = static_cast<size_t>(t.numel());
  std::string out((n + per - 1) / per, '\0');
  const auto* src = t.data<uint8_t>();
  auto mask = static_cast<uint8_t>((1u << bits) - 1);
  for (size_t i = 0; i < n; ++i)
    out[i / per] = static_cast<char>(static_cast<uint8_t>(out[i / per]) |
                                     ((src[i] & mask) << ((i % per) * bits)));
  return out;
}

std::string sequence_proto(const Value& v, const std::string& name) {
  std::string out;
  protozero::pbf_writer w(out);
  if (!name.empty()) w.add_string(1, name);
  w.add_int32(2, kElemTensor);
  for (const Tensor& t : v.seq()) w.add_message(3, write_tensor_proto(t));
  return out;
}

std::string kind_name(const Value& v) {
  return v.is_tensor() ? "a tensor" : v.is_sequence() ? "a sequence" : "an empty optional";
}

void check_not_map(const ir::TypeInfo& type, const std::string& what) {
  if (type.kind == Kind::kMap || (type.inner && type.inner->kind == Kind::kMap))
    fail_unsupported(
        "{} is declared {}: onyx holds no map values (no kernel it has takes or makes maps)", what,
        type.str());
}

/// Writes `bytes` to `path`, refusing to write into anything but a regular file (a FIFO
/// would block, a device would take the bytes).
void write_file(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st))
    fail(ErrorCode::kIo, "cannot write '{}': it exists and is not a regular file", path.string());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(ErrorCode::kIo, "cannot write '{}'", path.string());
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) fail(ErrorCode::kIo, "error writing '{}'", path.string());
}

void remove_regular(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(p, ec))) fs::remove(p, ec);
}

/// "0", "1", ... "12": the index a sequence item file is named by, or -1.
int64_t item_index(const std::string& stem) {
  if (stem.empty() || stem.size() > 12 ||
      stem.find_first_not_of("0123456789") != std::string::npos ||
      (stem.size() > 1 && stem[0] == '0'))
    return -1;
  return std::stoll(stem);
}

/// Removes the numbered .npy/.pb files of a sequence folder (and the folder when that
/// leaves it empty); anything else in it stays.
void remove_sequence_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return;
  std::vector<fs::path> items;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const fs::path& p = it->path();
    if ((p.extension() == ".npy" || p.extension() == ".pb") && item_index(p.stem().string()) >= 0)
      items.push_back(p);
  }
  for (const auto& p : items) remove_regular(p);
  if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

Tensor read_tensor_file(const fs::path& p, DType declared, const std::string& what) {
  std::string ext = p.extension().string();
  if (ext == ".npy") return npy_as_declared(read_npy_file(p.string()), declared, what);
  if (ext == ".pb") {
    Value v = read_value_file(p.string(), ir::TypeInfo::tensor_unranked(declared));
    return npy_as_declared(v.tensor(), declared, what);
  }
  fail_arg("{}: file '{}' must end in .npy (numpy) or .pb (TensorProto)", what, p.string());
}

Value read_sequence_folder(const fs::path& dir, const ir::TypeInfo& seq_type,
                           const std::string& what) {
  const ir::TypeInfo* elem = seq_type.inner.get();
  if (elem && elem->kind != Kind::kTensor && elem->kind != Kind::kUnknown)
    fail_unsupported("{} is declared {}: onyx holds sequences of tensors only", what,
                     seq_type.str());
  DType declared = elem ? elem->elem : DType::kUndefined;
  std::map<int64_t, fs::path> items;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const fs::path& p = it->path();
    std::string file = p.filename().string();
    if (file.empty() || file[0] == '.') continue;
    std::string ext = p.extension().string();
    int64_t k = item_index(p.stem().string());
    if ((ext != ".npy" && ext != ".pb") || k < 0)
      fail_arg(
          "{}: folder '{}' (a sequence) holds '{}'; a sequence folder holds only its items, named "
          "0.npy, 1.npy, ... (or 0.pb, 1.pb, ...)",
          what, dir.string(), file);
    if (items.count(k))
      fail_arg("{}: folder '{}' holds item {} twice ({} and {})", what, dir.string(), k,
               items[k].filename().string(), file);
    items[k] = p;
  }
  if (ec) fail(ErrorCode::kIo, "{}: cannot list folder '{}': {}", what, dir.string(), ec.message());
  std::vector<Tensor> tensors;
  for (const auto& [k, p] : items) {
    if (k != static_cast<int64_t>(tensors.size()))
      fail_arg("{}: folder '{}' has no item {} (its items must be numbered 0 to {} without a gap)",
               what, dir.string(), tensors.size(), items.size() - 1);
    tensors.push_back(read_tensor_file(p, declared, what + " item " + std::to_string(k)));
  }
  DType dt = declared;
  if (dt == DType::kUndefined && !tensors.empty()) dt = tensors[0].dtype();
  return Value::sequence(dt, std::move(tensors));
}

}  // namespace

std::string write_tensor_proto(const Tensor& t, const std::string& name) {
  std::string out;
  protozero::pbf_writer w(out);
  // Fields in field-number order, as protobuf's own serializers write them.
  for (int64_t d : t.dims()) w.add_int64(1, d);
  w.add_int32(2, static_cast<int32_t>(t.dtype()));
  if (t.dtype() == DType::kString)
    for (int64_t i = 0; i < t.numel(); ++i) w.add_bytes(6, t.data<std::string>()[i]);
  if (!name.empty()) w.add_string(8, name);
  if (t.dtype() != DType::kString) {
    if (dtype_bits(t.dtype()) < 8)
      w.add_bytes(9, pack_subbyte(t));
    else
      w.add_bytes(9, static_cast<const char*>(t.raw()), t.nbytes());
  }
  return out;
}

std::string write_value_proto(const Value& v, const ir::TypeInfo& type, const std::string& name) {
  const std::string what = name.empty() ? std::string("value") : "'" + name + "'";
  check_not_map(type, what);
  if (type.kind == Kind::kOptional || (type.kind == Kind::kUnknown && v.is_none())) {
    const ir::TypeInfo* inner = type.inner.get();
    bool seq = inner ? inner->kind == Kind::kSequence : v.is_sequence();
    std::string out;
    protozero::pbf_writer w(out);
    if (!name.empty()) w.add_string(1, name);
    // An empty optional says UNDEFINED (0), as onnx.helper.make_optional writes it.
    w.add_int32(2, v.is_none() ? 0 : seq ? kElemSequence : kElemTensor);
    if (v.is_tensor()) {
      if (seq) fail_arg("{} is {}, but {} is declared", what, kind_name(v), type.str());
      w.add_message(3, write_tensor_proto(v.tensor()));
    } else if (v.is_sequence()) {
      if (inner && !seq) fail_arg("{} is {}, but {} is declared", what, kind_name(v), type.str());
      w.add_message(5, sequence_proto(v, ""));
    }
    return out;
  }
  if (v.is_none()) fail_arg("{} is empty, but {} is declared (not optional)", what, type.str());
  if (type.kind == Kind::kSequence || (type.kind == Kind::kUnknown && v.is_sequence())) {
    if (!v.is_sequence()) fail_arg("{} is {}, but {} is declared", what, kind_name(v), type.str());
    return sequence_proto(v, name);
  }
  if (!v.is_tensor()) fail_arg("{} is {}, but {} is declared", what, kind_name(v), type.str());
  return write_tensor_proto(v.tensor(), name);
}

WrittenValue write_value_files(const std::string& dir, const std::string& stem, const Value& v,
                               const ir::TypeInfo& type, const std::string& name,
                               ValueFormat format) {
  const std::string what = "'" + name + "'";
  check_not_map(type, what);
  fs::path base = fs::path(dir) / stem;
  auto with = [&](const char* suffix) { return fs::path(base.string() + suffix); };
  WrittenValue out;
  if (format == ValueFormat::kPb) {
    std::string bytes = write_value_proto(v, type, name);
    remove_regular(with(".npy"));
    remove_regular(with(kNoneSuffix));
    remove_sequence_folder(base);
    out.path = with(".pb").string();
    write_file(out.path, bytes);
    return out;
  }
  if (v.is_none() && type.kind != Kind::kOptional && type.kind != Kind::kUnknown)
    fail_arg("{} is empty, but {} is declared (not optional)", what, type.str());
  std::string npy;
  if (v.is_tensor()) npy = write_npy(v.tensor());  // before removing anything: it may refuse
  std::vector<std::string> item_bytes;
  if (v.is_sequence())
    for (size_t i = 0; i < v.seq().size(); ++i) {
      try {
        item_bytes.push_back(write_npy(v.seq()[i]));
      } catch (const Error& e) {
        throw Error(e.code(), what + " item " + std::to_string(i) + ": " + e.what());
      }
    }
  remove_regular(with(".pb"));
  if (!v.is_none()) remove_regular(with(kNoneSuffix));
  if (!v.is_tensor()) remove_regular(with(".npy"));
  remove_sequence_folder(base);
  if (v.is_none()) {
    out.path = with(kNoneSuffix).string();
    write_file(out.path, "empty optional: " + name + " holds no value\n");
  } else if (v.is_tensor()) {
    out.path = with(".npy").string();
    write_file(out.path, npy);
  } else {
    std::error_code ec;
    fs::create_directories(base, ec);
    if (ec) fail(ErrorCode::kIo, "cannot create folder '{}': {}", base.string(), ec.message());
    out.path = base.string();
    for (size_t i = 0; i < item_bytes.size(); ++i) {
      out.items.push_back((base / (std::to_string(i) + ".npy")).string());
      write_file(out.items.back(), item_bytes[i]);
    }
  }
  return out;
}

Value value_as_declared(const Value& v, const ir::TypeInfo& type, const std::string& what) {
  const ir::TypeInfo* t = &type;
  if (t->kind == Kind::kOptional && t->inner) t = t->inner.get();
  if (v.is_tensor()) return Value(npy_as_declared(v.tensor(), t->elem, what));
  if (v.is_sequence() && t->kind == Kind::kSequence && t->inner) {
    DType declared = t->inner->elem;
    std::vector<Tensor> items;
    for (size_t i = 0; i < v.seq().size(); ++i)
      items.push_back(npy_as_declared(v.seq()[i], declared, what + " item " + std::to_string(i)));
    return Value::sequence(declared == DType::kUndefined ? v.seq_dtype() : declared,
                           std::move(items));
  }
  return v;
}

Value read_value_path(const std::string& path, const ir::TypeInfo& type, const std::string& what) {
  check_not_map(type, what);
  fs::path p(path);
  std::error_code ec;
  auto st = fs::status(p, ec);
  const bool optional = type.kind == Kind::kOptional;
  const ir::TypeInfo& held = optional && type.inner ? *type.inner : type;
  std::string ext = p.extension().string();
  if (ext == kNoneSuffix) {
    if (!optional && type.kind != Kind::kUnknown)
      fail_arg("{}: '{}' marks an empty optional, but {} is declared (not optional)", what, path,
               type.str());
    if (!fs::exists(st)) fail(ErrorCode::kIo, "{}: cannot open '{}': no such file", what, path);
    if (!fs::is_regular_file(st))
      fail(ErrorCode::kIo, "{}: '{}' is not a regular file", what, path);
    return Value::none();
  }
  if (fs::is_directory(st)) {
    if (held.kind != Kind::kSequence && held.kind != Kind::kUnknown)
      fail_arg("{}: '{}' is a folder, which holds a sequence, but {} is declared", what, path,
               type.str());
    return read_sequence_folder(p, held, what);
  }
  if (ext == ".pb") {
    Value v;
    try {
      v = read_value_file(path, type);
    } catch (const Error& e) {
      throw Error(e.code(), what + ": " + e.what());
    }
    return value_as_declared(v, type, what);
  }
  if (ext == ".npy") {
    if (held.kind == Kind::kSequence)
      fail_arg(
          "{} is declared {}: give a folder of 0.npy, 1.npy, ... or a .pb SequenceProto, not '{}'",
          what, type.str(), path);
    return Value(npy_as_declared(read_npy_file(path), held.elem, what));
  }
  fail_arg(
      "{}: '{}' must be a .npy or .pb file, a folder (a sequence) or a NAME{} marker (an empty "
      "optional)",
      what, path, kNoneSuffix);
}

}  // namespace onyx::format
