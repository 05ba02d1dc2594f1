// Test helper: builds ONNX protobuf bytes (ModelProto, GraphProto, NodeProto,
// TensorProto, ValueInfoProto ...) in memory with protozero's writer, so tests can make
// valid models and deliberately broken ones without files or protoc.
// Field numbers follow ../shared/spec/onnx.proto.
#pragma once
#include <protozero/pbf_writer.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace onyx::test {

/// TensorProto.DataType codes.
enum Elem : int32_t {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13,
  kComplex64 = 14, kComplex128 = 15, kBFloat16 = 16, kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18, kFloat8E5M2 = 19, kFloat8E5M2FNUZ = 20, kUint4 = 21, kInt4 = 22,
  kFloat4E2M1 = 23, kFloat8E8M0 = 24, kUint2 = 25, kInt2 = 26,
};

/// Raw little-endian bytes of a vector of plain values (for raw_data).
template <typename T>
std::string raw_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

using StringPairs = std::vector<std::pair<std::string, std::string>>;

inline void write_string_pairs(protozero::pbf_writer& w, uint32_t field, const StringPairs& kv) {
  for (const auto& [k, v] : kv) {
    protozero::pbf_writer e(w, field);
    e.add_string(1, k);
    e.add_string(2, v);
  }
}

/// One dimension of a declared shape: a number or a symbol ("N"). Any value other
/// than -1 is written as dim_value, even a negative one (to build invalid shapes).
struct DimSpec {
  int64_t value = -1;
  std::string param;
  DimSpec(int64_t v) : value(v) {}                 // NOLINT implicit
  DimSpec(int v) : value(v) {}                     // NOLINT implicit
  DimSpec(const char* p) : param(p) {}             // NOLINT implicit
  DimSpec(std::string p) : param(std::move(p)) {}  // NOLINT implicit
  static DimSpec unknown() { return DimSpec(std::string()); }
};

/// TypeProto.
struct TypeSpec {
  enum Kind { kTensor, kSparseTensor, kSequence, kOptional, kMap, kEmpty };
  Kind kind = kTensor;
  int32_t elem = kFloat;
  bool has_shape = true;
  std::vector<DimSpec> shape;
  std::shared_ptr<TypeSpec> inner;
  int32_t key = 0;

  static TypeSpec tensor(int32_t elem, std::vector<DimSpec> shape) {
    TypeSpec t;
    t.elem = elem;
    t.shape = std::move(shape);
    return t;
  }
  static TypeSpec unranked(int32_t elem) {
    TypeSpec t;
    t.elem = elem;
    t.has_shape = false;
    return t;
  }
  static TypeSpec sequence(TypeSpec inner) {
    TypeSpec t;
    t.kind = kSequence;
    t.inner = std::make_shared<TypeSpec>(std::move(inner));
    return t;
  }
  static TypeSpec optional(TypeSpec inner) {
    TypeSpec t;
    t.kind = kOptional;
    t.inner = std::make_shared<TypeSpec>(std::move(inner));
    return t;
  }
  static TypeSpec map(int32_t key, TypeSpec value) {
    TypeSpec t;
    t.kind = kMap;
    t.key = key;
    t.inner = std::make_shared<TypeSpec>(std::move(value));
    return t;
  }

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    switch (kind) {
      case kTensor:
      case kSparseTensor: {
        protozero::pbf_writer tt(w, kind == kTensor ? 1 : 8);
        tt.add_int32(1, elem);
        // Nested messages are built as strings: protozero's nested writers drop empty
        // messages, but a scalar shape and an unknown dim are empty and must be kept.
        if (has_shape) {
          std::string sh_bytes;
          protozero::pbf_writer sh(sh_bytes);
          for (const DimSpec& d : shape) {
            std::string dim_bytes;
            protozero::pbf_writer dim(dim_bytes);
            // value -1 without a name: an unknown dim (neither field set).
            if (!d.param.empty()) dim.add_string(2, d.param);
            else if (d.value != -1) dim.add_int64(1, d.value);
            sh.add_message(1, dim_bytes);
          }
          tt.add_message(2, sh_bytes);
        }
        break;
      }
      case kSequence:
      case kOptional: {
        protozero::pbf_writer s(w, kind == kSequence ? 4 : 9);
        if (inner) s.add_message(1, inner->serialize());
        break;
      }
      case kMap: {
        protozero::pbf_writer s(w, 5);
        s.add_int32(1, key);
        if (inner) s.add_message(2, inner->serialize());
        break;
      }
      case kEmpty: break;
    }
    return out;
  }
};

/// TensorProto. Set exactly the fields a test wants; everything is written as given.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = kFloat;
  std::optional<std::string> raw;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  std::vector<std::string> string_data;
  StringPairs external_data;
  int32_t data_location = 0;
  bool packed = true;    ///< repeated numeric fields packed (proto3 default) or one per tag
  std::string extra;     ///< appended verbatim (to inject broken fields)

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    if (packed) {
      if (!dims.empty()) w.add_packed_int64(1, dims.begin(), dims.end());
    } else {
      for (int64_t d : dims) w.add_int64(1, d);
    }
    w.add_int32(2, data_type);
    if (packed) {
      if (!float_data.empty()) w.add_packed_float(4, float_data.begin(), float_data.end());
      if (!int32_data.empty()) w.add_packed_int32(5, int32_data.begin(), int32_data.end());
    } else {
      for (float f : float_data) w.add_float(4, f);
      for (int32_t i : int32_data) w.add_int32(5, i);
    }
    for (const auto& s : string_data) w.add_bytes(6, s);
    if (packed) {
      if (!int64_data.empty()) w.add_packed_int64(7, int64_data.begin(), int64_data.end());
    } else {
      for (int64_t i : int64_data) w.add_int64(7, i);
    }
    if (!name.empty()) w.add_string(8, name);
    if (raw) w.add_bytes(9, *raw);
    if (packed) {
      if (!double_data.empty()) w.add_packed_double(10, double_data.begin(), double_data.end());
      if (!uint64_data.empty()) w.add_packed_uint64(11, uint64_data.begin(), uint64_data.end());
    } else {
      for (double d : double_data) w.add_double(10, d);
      for (uint64_t u : uint64_data) w.add_uint64(11, u);
    }
    write_string_pairs(w, 13, external_data);
    if (data_location) w.add_int32(14, data_location);
    out += extra;
    return out;
  }

  /// A float tensor stored in raw_data.
  static TensorSpec floats(std::string name, std::vector<int64_t> dims, const std::vector<float>& v) {
    TensorSpec t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.data_type = kFloat;
    t.raw = raw_bytes(v);
    return t;
  }
  /// An int64 tensor stored in raw_data.
  static TensorSpec int64s(std::string name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
    TensorSpec t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.data_type = kInt64;
    t.raw = raw_bytes(v);
    return t;
  }
  /// A tensor of any type from raw bytes.
  static TensorSpec raw_of(std::string name, int32_t type, std::vector<int64_t> dims, std::string bytes) {
    TensorSpec t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.data_type = type;
    t.raw = std::move(bytes);
    return t;
  }
};

/// SparseTensorProto.
struct SparseSpec {
  TensorSpec values;
  std::optional<TensorSpec> indices;
  std::vector<int64_t> dims;

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    w.add_message(1, values.serialize());
    if (indices) w.add_message(2, indices->serialize());
    if (!dims.empty()) w.add_packed_int64(3, dims.begin(), dims.end());
    return out;
  }
};

/// ValueInfoProto (type optional).
struct ValueInfoSpec {
  std::string name;
  std::optional<TypeSpec> type;

  ValueInfoSpec() = default;
  ValueInfoSpec(std::string n, TypeSpec t) : name(std::move(n)), type(std::move(t)) {}
  explicit ValueInfoSpec(std::string n) : name(std::move(n)) {}

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    w.add_string(1, name);
    if (type) w.add_message(2, type->serialize());
    return out;
  }
};

/// A tensor graph input/output: ValueInfo with a tensor type.
inline ValueInfoSpec tensor_info(std::string name, int32_t elem, std::vector<DimSpec> shape) {
  return ValueInfoSpec(std::move(name), TypeSpec::tensor(elem, std::move(shape)));
}

struct GraphSpec;

/// AttributeProto. The `type` decides which fields are written; `type` 0 omits the
/// type field (the legacy encoding) and writes whatever fields are set.
struct AttrSpec {
  enum Type : int32_t {
    kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5, kFloats = 6,
    kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10, kSparseTensor = 11,
    kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
  };
  std::string name;
  int32_t type = kUndefined;
  std::string ref_attr_name;
  std::optional<float> f;
  std::optional<int64_t> i;
  std::optional<std::string> s;
  std::optional<TensorSpec> t;
  std::shared_ptr<GraphSpec> g;
  std::optional<SparseSpec> sparse;
  std::optional<TypeSpec> tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorSpec> tensors;
  std::vector<std::shared_ptr<GraphSpec>> graphs;
  std::vector<SparseSpec> sparse_tensors;
  std::vector<TypeSpec> type_protos;

  inline std::string serialize() const;

  static AttrSpec Float(std::string n, float v) { AttrSpec a; a.name = std::move(n); a.type = kFloat; a.f = v; return a; }
  static AttrSpec Int(std::string n, int64_t v) { AttrSpec a; a.name = std::move(n); a.type = kInt; a.i = v; return a; }
  static AttrSpec String(std::string n, std::string v) { AttrSpec a; a.name = std::move(n); a.type = kString; a.s = std::move(v); return a; }
  static AttrSpec Tensor(std::string n, TensorSpec v) { AttrSpec a; a.name = std::move(n); a.type = kTensor; a.t = std::move(v); return a; }
  static inline AttrSpec Graph(std::string n, GraphSpec v);
  static AttrSpec Floats(std::string n, std::vector<float> v) { AttrSpec a; a.name = std::move(n); a.type = kFloats; a.floats = std::move(v); return a; }
  static AttrSpec Ints(std::string n, std::vector<int64_t> v) { AttrSpec a; a.name = std::move(n); a.type = kInts; a.ints = std::move(v); return a; }
  static AttrSpec Strings(std::string n, std::vector<std::string> v) { AttrSpec a; a.name = std::move(n); a.type = kStrings; a.strings = std::move(v); return a; }
  static AttrSpec Tensors(std::string n, std::vector<TensorSpec> v) { AttrSpec a; a.name = std::move(n); a.type = kTensors; a.tensors = std::move(v); return a; }
  static inline AttrSpec Graphs(std::string n, std::vector<GraphSpec> v);
  static AttrSpec Sparse(std::string n, SparseSpec v) { AttrSpec a; a.name = std::move(n); a.type = kSparseTensor; a.sparse = std::move(v); return a; }
  static AttrSpec Sparses(std::string n, std::vector<SparseSpec> v) { AttrSpec a; a.name = std::move(n); a.type = kSparseTensors; a.sparse_tensors = std::move(v); return a; }
  static AttrSpec Type(std::string n, TypeSpec v) { AttrSpec a; a.name = std::move(n); a.type = kTypeProto; a.tp = std::move(v); return a; }
  static AttrSpec Types(std::string n, std::vector<TypeSpec> v) { AttrSpec a; a.name = std::move(n); a.type = kTypeProtos; a.type_protos = std::move(v); return a; }
  /// Inside a function body: take the caller's attribute `ref`.
  static AttrSpec Ref(std::string n, int32_t type, std::string ref) { AttrSpec a; a.name = std::move(n); a.type = type; a.ref_attr_name = std::move(ref); return a; }
};

/// NodeProto.
struct NodeSpec {
  std::string op_type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string name;
  std::string domain;
  std::vector<AttrSpec> attrs;
  std::string extra;

  NodeSpec() = default;
  NodeSpec(std::string op, std::vector<std::string> in, std::vector<std::string> out,
           std::vector<AttrSpec> at = {}, std::string nm = "", std::string dom = "")
      : op_type(std::move(op)), inputs(std::move(in)), outputs(std::move(out)),
        name(std::move(nm)), domain(std::move(dom)), attrs(std::move(at)) {}

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    for (const auto& i : inputs) w.add_string(1, i);
    for (const auto& o : outputs) w.add_string(2, o);
    if (!name.empty()) w.add_string(3, name);
    if (!op_type.empty()) w.add_string(4, op_type);
    for (const auto& a : attrs) w.add_message(5, a.serialize());
    if (!domain.empty()) w.add_string(7, domain);
    out += extra;
    return out;
  }
};

/// GraphProto.
struct GraphSpec {
  std::string name = "g";
  std::vector<NodeSpec> nodes;
  std::vector<TensorSpec> initializers;
  std::vector<SparseSpec> sparse_initializers;
  std::vector<ValueInfoSpec> inputs;
  std::vector<ValueInfoSpec> outputs;
  std::vector<ValueInfoSpec> value_info;
  StringPairs metadata;
  std::string extra;

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    for (const auto& n : nodes) w.add_message(1, n.serialize());
    if (!name.empty()) w.add_string(2, name);
    for (const auto& t : initializers) w.add_message(5, t.serialize());
    for (const auto& v : inputs) w.add_message(11, v.serialize());
    for (const auto& v : outputs) w.add_message(12, v.serialize());
    for (const auto& v : value_info) w.add_message(13, v.serialize());
    for (const auto& s : sparse_initializers) w.add_message(15, s.serialize());
    write_string_pairs(w, 16, metadata);
    out += extra;
    return out;
  }
};

inline AttrSpec AttrSpec::Graph(std::string n, GraphSpec v) {
  AttrSpec a;
  a.name = std::move(n);
  a.type = kGraph;
  a.g = std::make_shared<GraphSpec>(std::move(v));
  return a;
}
inline AttrSpec AttrSpec::Graphs(std::string n, std::vector<GraphSpec> v) {
  AttrSpec a;
  a.name = std::move(n);
  a.type = kGraphs;
  for (auto& g : v) a.graphs.push_back(std::make_shared<GraphSpec>(std::move(g)));
  return a;
}

inline std::string AttrSpec::serialize() const {
  std::string out;
  protozero::pbf_writer w(out);
  w.add_string(1, name);
  if (f) w.add_float(2, *f);
  if (i) w.add_int64(3, *i);
  if (s) w.add_bytes(4, *s);
  if (t) w.add_message(5, t->serialize());
  if (g) w.add_message(6, g->serialize());
  if (!floats.empty()) w.add_packed_float(7, floats.begin(), floats.end());
  if (!ints.empty()) w.add_packed_int64(8, ints.begin(), ints.end());
  for (const auto& x : strings) w.add_bytes(9, x);
  for (const auto& x : tensors) w.add_message(10, x.serialize());
  for (const auto& x : graphs) w.add_message(11, x->serialize());
  if (tp) w.add_message(14, tp->serialize());
  for (const auto& x : type_protos) w.add_message(15, x.serialize());
  if (type != kUndefined) w.add_int32(20, type);
  if (!ref_attr_name.empty()) w.add_string(21, ref_attr_name);
  if (sparse) w.add_message(22, sparse->serialize());
  for (const auto& x : sparse_tensors) w.add_message(23, x.serialize());
  return out;
}

/// FunctionProto.
struct FunctionSpec {
  std::string name;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attributes;
  std::vector<AttrSpec> attribute_defaults;
  std::vector<NodeSpec> nodes;
  std::vector<std::pair<std::string, int64_t>> opsets = {{"", 17}};

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    w.add_string(1, name);
    for (const auto& i : inputs) w.add_string(4, i);
    for (const auto& o : outputs) w.add_string(5, o);
    for (const auto& a : attributes) w.add_string(6, a);
    for (const auto& n : nodes) w.add_message(7, n.serialize());
    for (const auto& [d, v] : opsets) {
      protozero::pbf_writer o(w, 9);
      o.add_string(1, d);
      o.add_int64(2, v);
    }
    if (!domain.empty()) w.add_string(10, domain);
    for (const auto& a : attribute_defaults) w.add_message(11, a.serialize());
    return out;
  }
};

/// ModelProto.
struct ModelSpec {
  int64_t ir_version = 9;
  std::string producer_name = "onyx-tests";
  std::string producer_version = "1";
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, int64_t>> opsets = {{"", 17}};
  std::optional<GraphSpec> graph;
  StringPairs metadata;
  std::vector<FunctionSpec> functions;
  std::string extra;

  ModelSpec() = default;
  explicit ModelSpec(GraphSpec g, int64_t opset = 17) : opsets{{"", opset}}, graph(std::move(g)) {}

  std::string serialize() const {
    std::string out;
    protozero::pbf_writer w(out);
    w.add_int64(1, ir_version);
    if (!producer_name.empty()) w.add_string(2, producer_name);
    if (!producer_version.empty()) w.add_string(3, producer_version);
    if (!domain.empty()) w.add_string(4, domain);
    if (model_version) w.add_int64(5, model_version);
    if (!doc_string.empty()) w.add_string(6, doc_string);
    if (graph) w.add_message(7, graph->serialize());
    for (const auto& [d, v] : opsets) {
      protozero::pbf_writer o(w, 8);
      o.add_string(1, d);
      o.add_int64(2, v);
    }
    write_string_pairs(w, 14, metadata);
    for (const auto& f : functions) w.add_message(25, f.serialize());
    out += extra;
    return out;
  }
};

// ---- raw field encoders, for deliberately malformed bytes ----

/// A field key (tag and wire type) as a varint.
inline std::string pb_key(uint32_t field, int wire_type) {
  std::string out;
  uint64_t v = (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type);
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
inline std::string pb_varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
/// A length-delimited field whose declared length may differ from the payload.
inline std::string pb_bytes(uint32_t field, const std::string& payload,
                            std::optional<uint64_t> declared_len = std::nullopt) {
  return pb_key(field, 2) + pb_varint(declared_len ? *declared_len : payload.size()) + payload;
}

// ---- files ----

/// A fresh directory under the system temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "onyx-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace onyx::test
