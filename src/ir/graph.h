// The in-memory model: graphs, nodes, attributes, value types with symbolic dims.
// Built by format:: from the file; read by shape::, runtime:: and the tools.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::ir {

/// One dimension of a (possibly symbolic) shape: a value >= 0, a named symbol
/// ("batch"), or unknown (value -1 and no name).
struct Dim {
  int64_t value = -1;
  std::string param;
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT implicit: dims are written as numbers
  static Dim symbol(std::string name) {
    Dim d;
    d.param = std::move(name);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && param == o.param; }
  std::string str() const;
};
using Shape = std::vector<Dim>;
std::string shape_str(const Shape& s);
Shape shape_of(const Dims& dims);
/// True when every dim is known.
bool shape_known(const Shape& s);
Dims shape_dims(const Shape& s);  ///< requires shape_known

/// Type of a graph value (TypeProto).
struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSparseTensor, kSequence, kOptional, kMap };
  Kind kind = Kind::kUnknown;
  DType elem = DType::kUndefined;  ///< tensor element type; map value elem for maps
  bool has_shape = false;          ///< false: rank unknown
  Shape shape;
  std::shared_ptr<TypeInfo> inner;  ///< element type of sequence / optional / map value
  DType key = DType::kUndefined;    ///< map key type

  static TypeInfo tensor(DType dt, Shape s) {
    TypeInfo t;
    t.kind = Kind::kTensor;
    t.elem = dt;
    t.has_shape = true;
    t.shape = std::move(s);
    return t;
  }
  static TypeInfo tensor_unranked(DType dt) {
    TypeInfo t;
    t.kind = Kind::kTensor;
    t.elem = dt;
    return t;
  }
  static TypeInfo sequence_of(TypeInfo elem) {
    TypeInfo t;
    t.kind = Kind::kSequence;
    t.inner = std::make_shared<TypeInfo>(std::move(elem));
    return t;
  }
  static TypeInfo optional_of(TypeInfo elem) {
    TypeInfo t;
    t.kind = Kind::kOptional;
    t.inner = std::make_shared<TypeInfo>(std::move(elem));
    return t;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  std::string str() const;  ///< "float[N, 3, 224, 224]", "seq(float[?])", ...
};

struct Graph;

/// An attribute of a node (AttributeProto). Only the fields of its `type` are set.
struct Attribute {
  enum class Type {
    kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
    kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
    kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
  };
  std::string name;
  Type type = Type::kUndefined;
  std::string ref_attr_name;  ///< inside a function body: take the caller's attribute
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo tp;
  std::vector<TypeInfo> type_protos;
};
std::string_view attribute_type_name(Attribute::Type t);

/// A node (NodeProto). `opset` is the version of its domain that applies to it,
/// resolved from the model's (or the enclosing function's) opset imports.
struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  ///< "" for the default ONNX domain ("ai.onnx" is normalized to "")
  std::vector<std::string> inputs;   ///< "" marks an omitted optional input
  std::vector<std::string> outputs;  ///< "" marks an omitted optional output
  std::vector<Attribute> attrs;
  int opset = 0;

  const Attribute* attr(std::string_view n) const;
  bool has_attr(std::string_view n) const { return attr(n) != nullptr; }
  /// Typed getters: return `def` when absent; throw when present with another type.
  int64_t attr_i(std::string_view n, int64_t def) const;
  float attr_f(std::string_view n, float def) const;
  std::string attr_s(std::string_view n, const std::string& def) const;
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(std::string_view n, std::vector<float> def = {}) const;
  std::vector<std::string> attr_strings(std::string_view n) const;
  const Tensor* attr_t(std::string_view n) const;
  const Graph* attr_g(std::string_view n) const;
  /// "Conv 'conv1' (opset 17)" for error messages.
  std::string describe() const;
};

/// A typed graph input, output or value_info entry.
struct ValueInfo {
  std::string name;
  TypeInfo type;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  /// Initializers in file order (sparse ones converted to dense).
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<std::pair<std::string, std::string>> metadata;

  const Tensor* initializer(std::string_view n) const;
};

/// Names a graph uses (as node inputs, graph outputs, or inside nested subgraphs) that it
/// does not define (as an input, an initializer or a node output): for a subgraph, the
/// outer-scope values it captures.
std::set<std::string> free_names(const Graph& g);

/// A model-local function (FunctionProto).
struct Function {
  std::string name;
  std::string domain;
  std::string overload;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attribute_names;
  std::vector<Attribute> attribute_defaults;
  std::vector<Node> nodes;
  std::map<std::string, int64_t> opset_imports;
};

/// One external-data file a model references.
struct ExternalFile {
  std::string location;
  uint64_t bytes_used = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::map<std::string, int64_t> opset_imports;  ///< domain ("" default) -> version
  std::shared_ptr<Graph> graph;
  std::vector<Function> functions;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<ExternalFile> external_files;
  std::string path;          ///< file it came from ("" when loaded from memory)
  uint64_t file_bytes = 0;
  std::vector<std::shared_ptr<void>> keepalive;  ///< mmaps the tensors view into
};

/// "ai.onnx" and "" both name the default domain.
inline std::string normalize_domain(std::string d) { return d == "ai.onnx" ? std::string() : d; }

}  // namespace onyx::ir
