#include "ir/graph.h"

#include "base/error.h"

namespace onyx::ir {

std::string Dim::str() const {
  if (known()) return std::to_string(value);
  if (!param.empty()) return param;
  return "?";
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += s[i].str();
  }
  return r + "]";
}

Shape shape_of(const Dims& dims) { return Shape(dims.begin(), dims.end()); }

bool shape_known(const Shape& s) {
  for (const Dim& d : s)
    if (!d.known()) return false;
  return true;
}

Dims shape_dims(const Shape& s) {
  Dims d;
  d.reserve(s.size());
  for (const Dim& x : s) d.push_back(x.value);
  return d;
}

std::string TypeInfo::str() const {
  switch (kind) {
    case Kind::kUnknown: return "unknown";
    case Kind::kTensor:
    case Kind::kSparseTensor: {
      std::string r = std::string(kind == Kind::kSparseTensor ? "sparse " : "") +
                      std::string(dtype_name(elem));
      return r + (has_shape ? shape_str(shape) : std::string("[unknown rank]"));
    }
    case Kind::kSequence: return "seq(" + (inner ? inner->str() : "?") + ")";
    case Kind::kOptional: return "optional(" + (inner ? inner->str() : "?") + ")";
    case Kind::kMap:
      return "map(" + std::string(dtype_name(key)) + ", " + (inner ? inner->str() : "?") + ")";
  }
  return "?";
}

std::string_view attribute_type_name(Attribute::Type t) {
  switch (t) {
    case Attribute::Type::kFloat: return "float";
    case Attribute::Type::kInt: return "int";
    case Attribute::Type::kString: return "string";
    case Attribute::Type::kTensor: return "tensor";
    case Attribute::Type::kGraph: return "graph";
    case Attribute::Type::kFloats: return "floats";
    case Attribute::Type::kInts: return "ints";
    case Attribute::Type::kStrings: return "strings";
    case Attribute::Type::kTensors: return "tensors";
    case Attribute::Type::kGraphs: return "graphs";
    case Attribute::Type::kSparseTensor: return "sparse_tensor";
    case Attribute::Type::kSparseTensors: return "sparse_tensors";
    case Attribute::Type::kTypeProto: return "type_proto";
    case Attribute::Type::kTypeProtos: return "type_protos";
    default: return "undefined";
  }
}

const Attribute* Node::attr(std::string_view n) const {
  for (const Attribute& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {
const Attribute* typed(const Node& node, std::string_view n, Attribute::Type t) {
  const Attribute* a = node.attr(n);
  if (a && a->type != t)
    fail_model("{}: attribute '{}' is {}, expected {}", node.describe(), n,
               attribute_type_name(a->type), attribute_type_name(t));
  return a;
}
}  // namespace

int64_t Node::attr_i(std::string_view n, int64_t def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kInt);
  return a ? a->i : def;
}
float Node::attr_f(std::string_view n, float def) const {
  const Attribute* a = attr(n);
  if (a && a->type == Attribute::Type::kInt) return static_cast<float>(a->i);
  a = typed(*this, n, Attribute::Type::kFloat);
  return a ? a->f : def;
}
std::string Node::attr_s(std::string_view n, const std::string& def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kString);
  return a ? a->s : def;
}
std::vector<int64_t> Node::attr_ints(std::string_view n, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kInts);
  return a ? a->ints : def;
}
std::vector<float> Node::attr_floats(std::string_view n, std::vector<float> def) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kFloats);
  return a ? a->floats : def;
}
std::vector<std::string> Node::attr_strings(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kStrings);
  return a ? a->strings : std::vector<std::string>{};
}
const Tensor* Node::attr_t(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kTensor);
  return a ? &a->t : nullptr;
}
const Graph* Node::attr_g(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Type::kGraph);
  return a ? a->g.get() : nullptr;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  if (!name.empty()) d += " '" + name + "'";
  else if (!outputs.empty()) d += " (output '" + outputs[0] + "')";
  return d + " (opset " + std::to_string(opset) + ")";
}

const Tensor* Graph::initializer(std::string_view n) const {
  for (const auto& [k, t] : initializers)
    if (k == n) return &t;
  return nullptr;
}

std::set<std::string> free_names(const Graph& g) {
  std::set<std::string> defined, out;
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& [n, t] : g.initializers) defined.insert(n);
  for (const auto& node : g.nodes)
    for (const auto& o : node.outputs)
      if (!o.empty()) defined.insert(o);
  auto add_free_of = [&](const Graph& sub) {
    for (const auto& s : free_names(sub))
      if (!defined.count(s)) out.insert(s);
  };
  for (const auto& node : g.nodes) {
    for (const auto& i : node.inputs)
      if (!i.empty() && !defined.count(i)) out.insert(i);
    for (const auto& a : node.attrs) {
      if (a.g) add_free_of(*a.g);
      for (const auto& sg : a.graphs) add_free_of(*sg);
    }
  }
  for (const auto& o : g.outputs)
    if (!defined.count(o.name)) out.insert(o.name);
  return out;
}

}  // namespace onyx::ir
