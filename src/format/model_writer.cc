// ModelProto writer (field numbers of ../shared/spec/onnx.proto). Nested messages are
// built as strings and added whole: protozero's nested writers drop an empty message,
// and an empty TensorShapeProto (a scalar) or Dimension (an unknown dim) must be kept.
#include "format/model_writer.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <protozero/pbf_writer.hpp>

#include "base/error.h"

namespace onyx::format {
namespace {

using protozero::pbf_writer;

constexpr uint64_t kMaxMessage = (uint64_t{1} << 31) - 1;  // protobuf's limit

void add_string_pairs(pbf_writer& w, uint32_t field,
                      const std::vector<std::pair<std::string, std::string>>& kv) {
  for (const auto& [k, v] : kv) {
    std::string e;
    pbf_writer ew(e);
    ew.add_string(1, k);
    ew.add_string(2, v);
    w.add_message(field, e);
  }
}

/// The bytes raw_data holds for `t` (not for strings).
std::string raw_bytes(const Tensor& t) {
  const int bits = dtype_bits(t.dtype());
  if (bits >= 8) return std::string(static_cast<const char*>(t.raw()), t.nbytes());
  // 4-bit: two per byte, 2-bit: four per byte, the first element in the low bits.
  const size_t n = static_cast<size_t>(t.numel()), per = static_cast<size_t>(8 / bits);
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  std::string out((n + per - 1) / per, '\0');
  const uint8_t* src = static_cast<const uint8_t*>(t.raw());
  for (size_t i = 0; i < n; ++i)
    out[i / per] = static_cast<char>(static_cast<uint8_t>(out[i / per]) |
                                     ((src[i] & mask) << ((i % per) * bits)));
  return out;
}

std::string tensor_bytes(const std::string& name, const Tensor& t) {
  std::string out;
  pbf_writer w(out);
  if (!t.dims().empty()) w.add_packed_int64(1, t.dims().begin(), t.dims().end());
  w.add_int32(2, static_cast<int32_t>(t.dtype()));
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) w.add_bytes(6, s[i]);
  }
  if (!name.empty()) w.add_string(8, name);
  if (t.dtype() != DType::kString) w.add_bytes(9, raw_bytes(t));
  return out;
}

/// A dense tensor as a SparseTensorProto (values and linear indices of its nonzeros),
/// for attributes declared sparse.
std::string sparse_bytes(const Tensor& t) {
  const size_t es = dtype_size(t.dtype());
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool zero = true;
    for (size_t b = 0; b < es && zero; ++b) zero = p[i * es + b] == 0;
    if (!zero) idx.push_back(i);
  }
  Tensor values(t.dtype(), {static_cast<int64_t>(idx.size())});
  for (size_t k = 0; k < idx.size(); ++k)
    std::memcpy(static_cast<uint8_t*>(values.raw()) + k * es, p + idx[k] * es, es);
  Tensor indices(DType::kInt64, {static_cast<int64_t>(idx.size())});
  for (size_t k = 0; k < idx.size(); ++k) indices.data<int64_t>()[k] = idx[k];
  std::string out;
  pbf_writer w(out);
  w.add_message(1, tensor_bytes("", values));
  w.add_message(2, tensor_bytes("", indices));
  if (!t.dims().empty()) w.add_packed_int64(3, t.dims().begin(), t.dims().end());
  return out;
}

std::string type_bytes(const ir::TypeInfo& t) {
  std::string out;
  pbf_writer w(out);
  using K = ir::TypeInfo::Kind;
  switch (t.kind) {
    case K::kTensor:
    case K::kSparseTensor: {
      std::string tt;
      pbf_writer tw(tt);
      tw.add_int32(1, static_cast<int32_t>(t.elem));
      if (t.has_shape) {
        std::string sh;
        pbf_writer sw(sh);
        for (const ir::Dim& d : t.shape) {
          std::string dim;
          pbf_writer dw(dim);
          if (d.known())
            dw.add_int64(1, d.value);
          else if (!d.param.empty())
            dw.add_string(2, d.param);
          sw.add_message(1, dim);
        }
        tw.add_message(2, sh);
      }
      w.add_message(t.kind == K::kTensor ? 1 : 8, tt);
      break;
    }
    case K::kSequence:
    case K::kOptional: {
      std::string s;
      pbf_writer sw(s);
      if (t.inner) sw.add_message(1, type_bytes(*t.inner));
      w.add_message(t.kind == K::kSequence ? 4 : 9, s);
      break;
    }
    case K::kMap: {
      std::string m;
      pbf_writer mw(m);
      mw.add_int32(1, static_cast<int32_t>(t.key));
      if (t.inner) mw.add_message(2, type_bytes(*t.inner));
      w.add_message(5, m);
      break;
    }
    case K::kUnknown:
      break;
  }
  return out;
}

std::string value_info_bytes(const ir::ValueInfo& v) {
  std::string out;
  pbf_writer w(out);
  w.add_string(1, v.name);
  if (v.type.kind != ir::TypeInfo::Kind::kUnknown) w.add_message(2, type_bytes(v.type));
  return out;
}

std::string graph_bytes(const ir::Graph& g);

std::string attribute_bytes(const ir::Attribute& a) {
  using T = ir::Attribute::Type;
  std::string out;
  pbf_writer w(out);
  w.add_string(1, a.name);
  if (!a.ref_attr_name.empty()) {
    w.add_int32(20, static_cast<int32_t>(a.type));
    w.add_string(21, a.ref_attr_name);
    return out;
  }
  switch (a.type) {
    case T::kFloat:
      w.add_float(2, a.f);
      break;
    case T::kInt:
      w.add_int64(3, a.i);
      break;
    case T::kString:
      w.add_bytes(4, a.s);
      break;
    case T::kTensor:
      w.add_message(5, tensor_bytes("", a.t));
      break;
    case T::kGraph:
      w.add_message(6, graph_bytes(*a.g));
      break;
    case T::kSparseTensor:
      w.add_message(22, sparse_bytes(a.t));
      break;
    case T::kTypeProto:
      w.add_message(14, type_bytes(a.tp));
      break;
    case T::kFloats:
      w.add_packed_float(7, a.floats.begin(), a.floats.end());
      break;
    case T::kInts:
      w.add_packed_int64(8, a.ints.begin(), a.ints.end());
      break;
    case T::kStrings:
      for (const auto& s : a.strings) w.add_bytes(9, s);
      break;
    case T::kTensors:
      for (const auto& t : a.tensors) w.add_message(10, tensor_bytes("", t));
      break;
    case T::kGraphs:
      for (const auto& sg : a.graphs) w.add_message(11, graph_bytes(*sg));
      break;
    case T::kSparseTensors:
      for (const auto& t : a.tensors) w.add_message(23, sparse_bytes(t));
      break;
    case T::kTypeProtos:
      for (const auto& t : a.type_protos) w.add_message(15, type_bytes(t));
      break;
    case T::kUndefined:
      break;
  }
  w.add_int32(20, static_cast<int32_t>(a.type));
  return out;
}

std::string node_bytes(const ir::Node& n) {
  std::string out;
  pbf_writer w(out);
  for (const auto& i : n.inputs) w.add_string(1, i);
  for (const auto& o : n.outputs) w.add_string(2, o);
  if (!n.name.empty()) w.add_string(3, n.name);
  w.add_string(4, n.op_type);
  for (const auto& a : n.attrs) w.add_message(5, attribute_bytes(a));
  if (!n.domain.empty()) w.add_string(7, n.domain);
  return out;
}

std::string graph_bytes(const ir::Graph& g) {
  std::string out;
  pbf_writer w(out);
  for (const auto& n : g.nodes) w.add_message(1, node_bytes(n));
  w.add_string(2, g.name);
  for (const auto& [name, t] : g.initializers) {
    if (out.size() + t.nbytes() > kMaxMessage)
      fail_unsupported(
          "the model would pass protobuf's 2 GiB limit (at initializer '{}'); onyx writes "
          "no external data",
          name);
    w.add_message(5, tensor_bytes(name, t));
  }
  for (const auto& v : g.inputs) w.add_message(11, value_info_bytes(v));
  for (const auto& v : g.outputs) w.add_message(12, value_info_bytes(v));
  for (const auto& v : g.value_info) w.add_message(13, value_info_bytes(v));
  add_string_pairs(w, 16, g.metadata);
  return out;
}

bool uses_domain(const ir::Graph& g, const std::string& d) {
  for (const auto& n : g.nodes) {
    if (n.domain == d) return true;
    for (const auto& a : n.attrs) {
      if (a.g && uses_domain(*a.g, d)) return true;
      for (const auto& sg : a.graphs)
        if (uses_domain(*sg, d)) return true;
    }
  }
  return false;
}

}  // namespace

std::string write_model(const ir::Model& model, const ir::Graph& graph) {
  std::string out;
  pbf_writer w(out);
  // Initializers need not be graph inputs from IR version 4 on.
  w.add_int64(1, std::max<int64_t>(model.ir_version, 4));
  if (!model.producer_name.empty()) w.add_string(2, model.producer_name);
  if (!model.producer_version.empty()) w.add_string(3, model.producer_version);
  if (!model.domain.empty()) w.add_string(4, model.domain);
  if (model.model_version) w.add_int64(5, model.model_version);
  if (!model.doc_string.empty()) w.add_string(6, model.doc_string);
  const std::string g = graph_bytes(graph);
  if (g.size() > kMaxMessage)
    fail_unsupported("the model would pass protobuf's 2 GiB limit; onyx writes no external data");
  w.add_message(7, g);
  auto opsets = model.opset_imports;
  if (uses_domain(graph, "ai.onyx") && !opsets.count("ai.onyx")) opsets["ai.onyx"] = 1;
  for (const auto& [domain, version] : opsets) {
    std::string o;
    pbf_writer ow(o);
    ow.add_string(1, domain);
    ow.add_int64(2, version);
    w.add_message(8, o);
  }
  add_string_pairs(w, 14, model.metadata);
  return out;
}

void write_model_file(const std::string& path, const ir::Model& model, const ir::Graph& graph) {
  const std::string bytes = write_model(model, graph);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(ErrorCode::kIo, "cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) fail(ErrorCode::kIo, "writing '{}' failed", path);
}

}  // namespace onyx::format
