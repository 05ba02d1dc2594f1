#include "model_mutator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/registry.h"

namespace onyx::fuzz {
namespace {

/// The messages of onnx.proto the mutator knows the fields of.
enum class Msg {
  kNone, kModel, kGraph, kNode, kAttribute, kTensor, kSparseTensor, kValueInfo, kType,
  kTypeTensor, kTypeSequence, kTypeMap, kTypeOptional, kShape, kDim, kOpset, kFunction,
  kStringEntry,
};

/// What a field means, which decides how it is mutated.
enum class Sem {
  kUnknown, kMessage, kName, kOpType, kDomain, kAttrName, kSymbol, kString, kRawData, kInt,
  kDim, kDType, kOpsetVersion, kAttrType, kIrVersion, kDataLocation, kFloat, kFloats, kDoubles,
  kInts, kDims,
};

struct FieldInfo {
  Sem sem = Sem::kUnknown;
  Msg sub = Msg::kNone;
};

FieldInfo field_info(Msg m, uint32_t n) {
  using S = Sem;
  switch (m) {
    case Msg::kModel:
      switch (n) {
        case 1: return {S::kIrVersion};
        case 2: case 3: case 4: case 6: return {S::kString};
        case 5: return {S::kInt};
        case 7: return {S::kMessage, Msg::kGraph};
        case 8: return {S::kMessage, Msg::kOpset};
        case 14: return {S::kMessage, Msg::kStringEntry};
        case 25: return {S::kMessage, Msg::kFunction};
      }
      break;
    case Msg::kGraph:
      switch (n) {
        case 1: return {S::kMessage, Msg::kNode};
        case 2: case 10: return {S::kString};
        case 5: return {S::kMessage, Msg::kTensor};
        case 15: return {S::kMessage, Msg::kSparseTensor};
        case 11: case 12: case 13: return {S::kMessage, Msg::kValueInfo};
        case 16: return {S::kMessage, Msg::kStringEntry};
      }
      break;
    case Msg::kNode:
      switch (n) {
        case 1: case 2: return {S::kName};
        case 3: case 6: case 8: return {S::kString};
        case 4: return {S::kOpType};
        case 5: return {S::kMessage, Msg::kAttribute};
        case 7: return {S::kDomain};
      }
      break;
    case Msg::kAttribute:
      switch (n) {
        case 1: case 21: return {S::kAttrName};
        case 20: return {S::kAttrType};
        case 2: return {S::kFloat};
        case 3: return {S::kInt};
        case 4: case 9: case 13: return {S::kString};
        case 5: case 10: return {S::kMessage, Msg::kTensor};
        case 6: case 11: return {S::kMessage, Msg::kGraph};
        case 7: return {S::kFloats};
        case 8: return {S::kInts};
        case 22: case 23: return {S::kMessage, Msg::kSparseTensor};
        case 14: case 15: return {S::kMessage, Msg::kType};
      }
      break;
    case Msg::kTensor:
      switch (n) {
        case 1: return {S::kDims};
        case 2: return {S::kDType};
        case 4: return {S::kFloats};
        case 5: case 7: case 11: return {S::kInts};
        case 6: case 12: return {S::kString};
        case 8: return {S::kName};
        case 9: return {S::kRawData};
        case 10: return {S::kDoubles};
        case 13: return {S::kMessage, Msg::kStringEntry};
        case 14: return {S::kDataLocation};
      }
      break;
    case Msg::kSparseTensor:
      switch (n) {
        case 1: case 2: return {S::kMessage, Msg::kTensor};
        case 3: return {S::kDims};
      }
      break;
    case Msg::kValueInfo:
      switch (n) {
        case 1: return {S::kName};
        case 2: return {S::kMessage, Msg::kType};
        case 3: return {S::kString};
      }
      break;
    case Msg::kType:
      switch (n) {
        case 1: case 8: return {S::kMessage, Msg::kTypeTensor};
        case 4: return {S::kMessage, Msg::kTypeSequence};
        case 5: return {S::kMessage, Msg::kTypeMap};
        case 9: return {S::kMessage, Msg::kTypeOptional};
        case 6: return {S::kString};
      }
      break;
    case Msg::kTypeTensor:
      switch (n) {
        case 1: return {S::kDType};
        case 2: return {S::kMessage, Msg::kShape};
      }
      break;
    case Msg::kTypeSequence:
    case Msg::kTypeOptional:
      if (n == 1) return {S::kMessage, Msg::kType};
      break;
    case Msg::kTypeMap:
      switch (n) {
        case 1: return {S::kDType};
        case 2: return {S::kMessage, Msg::kType};
      }
      break;
    case Msg::kShape:
      if (n == 1) return {S::kMessage, Msg::kDim};
      break;
    case Msg::kDim:
      switch (n) {
        case 1: return {S::kDim};
        case 2: return {S::kSymbol};
        case 3: return {S::kString};
      }
      break;
    case Msg::kOpset:
      switch (n) {
        case 1: return {S::kDomain};
        case 2: return {S::kOpsetVersion};
      }
      break;
    case Msg::kFunction:
      switch (n) {
        case 1: return {S::kOpType};
        case 4: case 5: return {S::kName};
        case 6: return {S::kAttrName};
        case 7: return {S::kMessage, Msg::kNode};
        case 9: return {S::kMessage, Msg::kOpset};
        case 10: return {S::kDomain};
        case 11: return {S::kMessage, Msg::kAttribute};
        case 8: case 13: return {S::kString};
      }
      break;
    case Msg::kStringEntry:
      if (n == 1 || n == 2) return {S::kString};
      break;
    case Msg::kNone: break;
  }
  return {};
}

struct Message;

/// One field as it is on the wire; a length-delimited field that decodes as the message
/// the schema names is held decoded.
struct Field {
  uint32_t number = 0;
  uint8_t wire = 0;
  uint64_t value = 0;  // varint, fixed32 or fixed64
  std::string bytes;   // length-delimited, not decoded
  std::shared_ptr<Message> msg;
};

struct Message {
  Msg type = Msg::kNone;
  std::vector<Field> fields;
};

std::shared_ptr<Message> clone(const Message& m) {
  auto c = std::make_shared<Message>();
  c->type = m.type;
  c->fields = m.fields;
  for (Field& f : c->fields)
    if (f.msg) f.msg = clone(*f.msg);
  return c;
}

bool read_varint(const uint8_t*& p, const uint8_t* e, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < e; shift += 7) {
    uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

constexpr int kMaxParseDepth = 48;

bool parse(const uint8_t* p, size_t n, Msg type, Message& out, int depth) {
  if (depth > kMaxParseDepth) return false;
  out.type = type;
  const uint8_t* e = p + n;
  while (p < e) {
    uint64_t key;
    if (!read_varint(p, e, key) || (key >> 3) == 0 || (key >> 3) > (1u << 29)) return false;
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint8_t>(key & 7);
    switch (f.wire) {
      case 0:
        if (!read_varint(p, e, f.value)) return false;
        break;
      case 1:
        if (e - p < 8) return false;
        std::memcpy(&f.value, p, 8);
        p += 8;
        break;
      case 5: {
        if (e - p < 4) return false;
        uint32_t v;
        std::memcpy(&v, p, 4);
        f.value = v;
        p += 4;
        break;
      }
      case 2: {
        uint64_t len;
        if (!read_varint(p, e, len) || len > static_cast<uint64_t>(e - p)) return false;
        FieldInfo fi = field_info(type, f.number);
        if (fi.sem == Sem::kMessage) {
          auto m = std::make_shared<Message>();
          if (parse(p, len, fi.sub, *m, depth + 1)) f.msg = std::move(m);
        }
        if (!f.msg) f.bytes.assign(reinterpret_cast<const char*>(p), len);
        p += len;
        break;
      }
      default: return false;  // groups (3, 4) and invalid wire types
    }
    out.fields.push_back(std::move(f));
  }
  return true;
}

void put_varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
}

void encode(const Message& m, std::string& out) {
  for (const Field& f : m.fields) {
    put_varint(out, (uint64_t{f.number} << 3) | f.wire);
    switch (f.wire) {
      case 0: put_varint(out, f.value); break;
      case 1: out.append(reinterpret_cast<const char*>(&f.value), 8); break;
      case 5: {
        uint32_t v = static_cast<uint32_t>(f.value);
        out.append(reinterpret_cast<const char*>(&v), 4);
        break;
      }
      case 2:
        if (f.msg) {
          std::string sub;
          encode(*f.msg, sub);
          put_varint(out, sub.size());
          out += sub;
        } else {
          put_varint(out, f.bytes.size());
          out += f.bytes;
        }
        break;
    }
  }
}

/// Strings of the model by meaning, to rewire names and op types among known ones.
struct Dict {
  std::vector<std::string> names, ops, attr_names, symbols, strings;
};

struct Site {
  Message* parent;
  size_t index;
  Field& field() const { return parent->fields[index]; }
  FieldInfo info() const { return field_info(parent->type, field().number); }
};

struct Tree {
  std::vector<Site> fields;
  std::vector<Message*> messages;
  Dict dict;
};

void collect(Message& m, Tree& t, std::set<std::string>& seen) {
  t.messages.push_back(&m);
  for (size_t i = 0; i < m.fields.size(); ++i) {
    t.fields.push_back({&m, i});
    Field& f = m.fields[i];
    if (f.msg) {
      collect(*f.msg, t, seen);
      continue;
    }
    if (f.wire != 2 || f.bytes.size() > 64) continue;
    std::vector<std::string>* list = nullptr;
    switch (field_info(m.type, f.number).sem) {
      case Sem::kName: list = &t.dict.names; break;
      case Sem::kOpType: list = &t.dict.ops; break;
      case Sem::kAttrName: list = &t.dict.attr_names; break;
      case Sem::kSymbol: list = &t.dict.symbols; break;
      case Sem::kString: list = &t.dict.strings; break;
      default: break;
    }
    if (list && seen.insert(std::to_string(static_cast<int>(m.type)) + ":" + f.bytes).second)
      list->push_back(f.bytes);
  }
}

const std::vector<std::string>& registry_ops() {
  static const std::vector<std::string> ops = [] {
    std::set<std::string> s;
    for (const auto& k : kernels::default_registry().all()) s.insert(k.op);
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return ops;
}

const char* const kAttrNames[] = {
    "axis", "axes", "keepdims", "perm", "shape", "pads", "strides", "kernel_shape",
    "dilations", "group", "auto_pad", "blocksize", "mode", "value", "to", "alpha", "beta",
    "gamma", "epsilon", "transA", "transB", "split", "num_outputs", "starts", "ends",
    "then_branch", "else_branch", "body", "k", "largest", "sorted", "direction",
    "hidden_size", "exclusive", "reverse", "batch_dims", "output_shape", "output_padding",
    "ceil_mode", "count_include_pad", "storage_order", "seed", "dtype", "sample_size",
    "mean", "scale", "high", "low", "repeats", "allowzero", "coordinate_transformation_mode",
    "cubic_coeff_a", "exclude_outside", "extrapolation_value", "nearest_mode", "select_last_index",
    "noop_with_empty_axes", "stash_type", "num_scan_inputs", "scan_input_axes",
    "scan_output_axes", "layout", "activations", "clip", "input_forget", "linear_before_reset",
    "equation", "onesided", "inverse", "signal_ndim", "frame_step", "center_point_box",
    "max_output_boxes_per_class", "spatial_scale", "sampling_ratio", "output_height",
    "output_width", "align_corners", "padding_mode", "block_size", "saturate", "fmod",
    "detect_negative", "detect_positive", "upper", "unbiased", "fill_value", "case_change_action",
    "is_case_sensitive", "stopwords", "delimiter", "maxsplit", "pattern", "rewrite",
    "keys_strings", "keys_int64s", "values_strings", "values_int64s", "default_int64",
    "default_string", "classlabels_strings", "classlabels_int64s", "nodes_featureids",
    "nodes_values", "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids", "post_transform",
    "n_targets", "kernel_type", "num_groups", "q_scale", "softcap", "is_causal", "kv_num_heads",
    "q_num_heads", "qk_matmul_output_mode", "interleaved", "rotary_embedding_dim", "num_heads",
    "output_datatype", "window", "periodic", "dft_length", "antialias", "keep_aspect_ratio_policy",
    "reduction", "ignore_index", "training_mode", "momentum", "sparse_value", "value_float",
    "value_floats", "value_int", "value_ints", "value_string", "value_strings", "lambd", "bias",
    "size", "axis_w", "mode_s", "tiling", "block_shape", "image_shape", "pooled_shape",
};

const char* const kDomains[] = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training",
                                "local", "custom.domain"};

const int64_t kInterestingInts[] = {
    0, 1, -1, 2, 3, 4, 5, 7, 8, 16, 64, 65, 127, 128, 255, 256, 1000, 4096, 32767, 32768,
    65535, 65536, 1 << 20, INT32_MAX, INT32_MIN, int64_t{1} << 31, (int64_t{1} << 32) - 1,
    int64_t{1} << 32, (int64_t{1} << 32) + 1, 3037000500, int64_t{1} << 40, int64_t{1} << 62,
    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::min() + 1, -2, -3, -64, -65, -1000000000, 1000000000,
    1000000000000,
};

class Mutator {
 public:
  Mutator(unsigned int seed, Tree& tree) : rng_(seed), t_(tree) {}

  size_t below(size_t n) { return n ? static_cast<size_t>(rng_() % n) : 0; }
  bool one_in(size_t n) { return below(n) == 0; }

  int64_t interesting_int(int64_t cur) {
    // Wrapping arithmetic: the mutator itself must not overflow.
    const auto u = static_cast<uint64_t>(cur);
    switch (below(6)) {
      case 0: return static_cast<int64_t>(u + below(9) - 4);
      case 1: return static_cast<int64_t>(0 - u);
      case 2: return static_cast<int64_t>(u * 2);
      case 3: return static_cast<int64_t>(rng_());
      default:
        return kInterestingInts[below(std::size(kInterestingInts))];
    }
  }
  int64_t small_dim(int64_t cur) {
    switch (below(5)) {
      case 0: return static_cast<int64_t>(below(5));
      case 1: return static_cast<int64_t>(static_cast<uint64_t>(cur) + below(5) - 2);
      default: return interesting_int(cur);
    }
  }
  float interesting_float(float cur) {
    static const float kFloats[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e-45f, 1e-7f, 1e10f,
                                    3.4e38f, -3.4e38f, 4294967296.0f, 9.3e18f, -9.3e18f,
                                    std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN()};
    switch (below(4)) {
      case 0: return cur * static_cast<float>(below(7)) - 3.0f;
      case 1: {
        const bool in_range = std::fabs(cur) < 9.2e18f;  // else the cast is undefined
        return static_cast<float>(interesting_int(in_range ? static_cast<int64_t>(cur) : 0));
      }
      default: return kFloats[below(std::size(kFloats))];
    }
  }

  /// double -> float without the undefined behaviour of an out-of-range value.
  static float to_float(double x) {
    if (std::isnan(x)) return static_cast<float>(x);
    return static_cast<float>(std::clamp(x, -3.4e38, 3.4e38));
  }

  std::string pick(const std::vector<std::string>& v, const std::string& otherwise) {
    return v.empty() ? otherwise : v[below(v.size())];
  }

  void bytes_mutation(std::string& s) {
    switch (below(4)) {
      case 0:  // change the data length by a few bytes (dims vs data)
        if (!s.empty() && one_in(2)) s.resize(s.size() - 1 - below(std::min<size_t>(s.size(), 8)));
        else s.append(1 + below(8), static_cast<char>(below(256)));
        return;
      case 1:
        if (!s.empty()) s[below(s.size())] = static_cast<char>(rng_());
        return;
      default: {
        size_t n = s.size();
        s.resize(n * 2 + 16);
        n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(s.data()), n, s.size());
        s.resize(n);
      }
    }
  }

  template <typename T>
  void packed_mutation(std::string& s, bool is_dims) {
    // Fixed-width (T = float/double) or varint (T = int64_t) elements.
    std::vector<T> v;
    if constexpr (std::is_same_v<T, int64_t>) {
      const auto* p = reinterpret_cast<const uint8_t*>(s.data());
      const auto* e = p + s.size();
      while (p < e) {
        uint64_t x;
        if (!read_varint(p, e, x)) return bytes_mutation(s);
        v.push_back(static_cast<int64_t>(x));
      }
    } else {
      if (s.size() % sizeof(T)) return bytes_mutation(s);
      v.resize(s.size() / sizeof(T));
      if (!v.empty()) std::memcpy(v.data(), s.data(), s.size());
    }
    auto value = [&](T cur) -> T {
      if constexpr (std::is_same_v<T, int64_t>) return is_dims ? small_dim(cur) : interesting_int(cur);
      else return static_cast<T>(interesting_float(to_float(cur)));
    };
    switch (below(5)) {
      case 0: v.insert(v.begin() + static_cast<ptrdiff_t>(below(v.size() + 1)), value(T{})); break;
      case 1:
        if (!v.empty()) v.erase(v.begin() + static_cast<ptrdiff_t>(below(v.size())));
        break;
      case 2:
        if (!v.empty()) std::swap(v[below(v.size())], v[below(v.size())]);
        break;
      default:
        if (v.empty()) v.push_back(value(T{}));
        else {
          T& x = v[below(v.size())];
          x = value(x);
        }
    }
    s.clear();
    if constexpr (std::is_same_v<T, int64_t>) {
      for (int64_t x : v) put_varint(s, static_cast<uint64_t>(x));
    } else {
      s.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
  }

  /// Mutates the value of one field according to its meaning.
  void mutate_value(const Site& site) {
    Field& f = site.field();
    Sem sem = site.info().sem;
    if (f.msg) {  // a message field: replace it with a copy of another of its type
      std::vector<const Site*> same;
      for (const Site& s : t_.fields)
        if (s.field().msg && s.field().msg->type == f.msg->type && &s.field() != &f) same.push_back(&s);
      if (!same.empty()) f.msg = clone(*same[below(same.size())]->field().msg);
      return;
    }
    if (f.wire == 0) {
      int64_t cur = static_cast<int64_t>(f.value);
      int64_t v;
      switch (sem) {
        case Sem::kDType: v = one_in(8) ? interesting_int(cur) : static_cast<int64_t>(below(28)); break;
        case Sem::kOpsetVersion: v = one_in(8) ? interesting_int(cur) : 1 + static_cast<int64_t>(below(27)); break;
        case Sem::kAttrType: v = static_cast<int64_t>(below(16)); break;
        case Sem::kIrVersion: v = one_in(4) ? interesting_int(cur) : static_cast<int64_t>(below(13)); break;
        case Sem::kDataLocation: v = static_cast<int64_t>(below(3)); break;
        case Sem::kDim: case Sem::kDims: v = small_dim(cur); break;
        default: v = interesting_int(cur);
      }
      f.value = static_cast<uint64_t>(v);
      return;
    }
    if (f.wire == 5) {
      float x;
      uint32_t bits = static_cast<uint32_t>(f.value);
      std::memcpy(&x, &bits, 4);
      x = interesting_float(x);
      std::memcpy(&bits, &x, 4);
      f.value = bits;
      return;
    }
    if (f.wire == 1) {
      double x;
      std::memcpy(&x, &f.value, 8);
      x = interesting_float(to_float(x));
      std::memcpy(&f.value, &x, 8);
      return;
    }
    switch (sem) {
      case Sem::kName:
        if (one_in(6)) f.bytes.clear();  // an omitted optional input
        else if (one_in(6)) f.bytes = "fz" + std::to_string(below(4));
        else f.bytes = pick(t_.dict.names, "x");
        return;
      case Sem::kOpType:
        f.bytes = one_in(4) ? pick(t_.dict.ops, "Identity") : pick(registry_ops(), "Identity");
        return;
      case Sem::kDomain: f.bytes = kDomains[below(std::size(kDomains))]; return;
      case Sem::kAttrName:
        f.bytes = one_in(2) ? pick(t_.dict.attr_names, "axis") : kAttrNames[below(std::size(kAttrNames))];
        return;
      case Sem::kSymbol: f.bytes = one_in(2) ? pick(t_.dict.symbols, "N") : std::string(1, 'M' + below(3)); return;
      case Sem::kString:
        if (one_in(3)) f.bytes = pick(t_.dict.strings, "");
        else bytes_mutation(f.bytes);
        return;
      case Sem::kDims: return packed_mutation<int64_t>(f.bytes, true);
      case Sem::kInts: return packed_mutation<int64_t>(f.bytes, false);
      case Sem::kFloats: return packed_mutation<float>(f.bytes, false);
      case Sem::kDoubles: return packed_mutation<double>(f.bytes, false);
      default: bytes_mutation(f.bytes);
    }
  }

  /// A new attribute (int, ints, float or string) for a node.
  Field new_attribute() {
    auto m = std::make_shared<Message>();
    m->type = Msg::kAttribute;
    Field name{1, 2, 0, one_in(2) ? pick(t_.dict.attr_names, "axis") : kAttrNames[below(std::size(kAttrNames))], {}};
    m->fields.push_back(name);
    switch (below(4)) {
      case 0:
        m->fields.push_back({20, 0, 2, {}, {}});
        m->fields.push_back({3, 0, static_cast<uint64_t>(interesting_int(0)), {}, {}});
        break;
      case 1: {
        std::string s;
        for (size_t k = 0, n = below(5); k < n; ++k) put_varint(s, static_cast<uint64_t>(small_dim(1)));
        m->fields.push_back({20, 0, 7, {}, {}});
        m->fields.push_back({8, 2, 0, s, {}});
        break;
      }
      case 2: {
        float x = interesting_float(1.0f);
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        m->fields.push_back({20, 0, 1, {}, {}});
        m->fields.push_back({2, 5, bits, {}, {}});
        break;
      }
      default:
        m->fields.push_back({20, 0, 3, {}, {}});
        m->fields.push_back({4, 2, 0, pick(t_.dict.strings, "constant"), {}});
    }
    return Field{5, 2, 0, {}, m};
  }

  /// One structural or value mutation; false when nothing applied.
  bool mutate_once() {
    if (t_.fields.empty()) return false;
    const Site site = t_.fields[below(t_.fields.size())];
    switch (below(16)) {
      case 0: case 1:  // drop a field (a node, an input name, an attribute, a dim ...)
        site.parent->fields.erase(site.parent->fields.begin() + static_cast<ptrdiff_t>(site.index));
        return true;
      case 2: {  // duplicate a field in place
        Field copy = site.field();
        if (copy.msg) copy.msg = clone(*copy.msg);
        site.parent->fields.insert(site.parent->fields.begin() + static_cast<ptrdiff_t>(site.index), copy);
        return true;
      }
      case 3: {  // copy a field into another message of the same type (nodes across subgraphs)
        std::vector<Message*> same;
        for (Message* m : t_.messages)
          if (m->type == site.parent->type && m != site.parent) same.push_back(m);
        if (same.empty()) return false;
        Field copy = site.field();
        if (copy.msg) copy.msg = clone(*copy.msg);
        Message* to = same[below(same.size())];
        to->fields.insert(to->fields.begin() + static_cast<ptrdiff_t>(below(to->fields.size() + 1)), copy);
        return true;
      }
      case 4: {  // swap two fields of one message (node order, input order)
        auto& fs = site.parent->fields;
        std::swap(fs[site.index], fs[below(fs.size())]);
        return true;
      }
      case 5: {  // add an attribute or an input/output name to a node
        std::vector<Message*> nodes;
        for (Message* m : t_.messages)
          if (m->type == Msg::kNode) nodes.push_back(m);
        if (nodes.empty()) return false;
        Message* n = nodes[below(nodes.size())];
        if (one_in(2)) n->fields.push_back(new_attribute());
        else n->fields.push_back({one_in(2) ? 1u : 2u, 2, 0, pick(t_.dict.names, "x"), {}});
        return true;
      }
      default: mutate_value(site); return true;
    }
  }

 private:
  std::mt19937_64 rng_;
  Tree& t_;
};

Msg root_msg(RootType root) { return root == RootType::kModel ? Msg::kModel : Msg::kTensor; }

size_t write_out(const Message& m, uint8_t* out, size_t max_size) {
  std::string bytes;
  encode(m, bytes);
  if (bytes.size() > max_size) return 0;
  std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace

size_t mutate_proto(uint8_t* data, size_t size, size_t max_size, unsigned int seed, RootType root) {
  std::mt19937 pick(seed);
  if (size == 0 || pick() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  // A mutation may change nothing (a name replaced by itself): try again a few times.
  for (unsigned attempt = 0; attempt < 4; ++attempt) {
    Message m;
    if (!parse(data, size, root_msg(root), m, 0)) break;
    Tree tree;
    std::set<std::string> seen;
    collect(m, tree, seen);
    Mutator mut(seed + attempt * 0x9e3779b9u, tree);
    if (!mut.mutate_once()) continue;
    std::string bytes;
    encode(m, bytes);
    if (bytes.size() > max_size) continue;
    if (bytes.size() == size && std::memcmp(bytes.data(), data, size) == 0) continue;
    std::memcpy(data, bytes.data(), bytes.size());
    return bytes.size();
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

size_t cross_over_proto(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                        uint8_t* out, size_t max_out_size, unsigned int seed, RootType root) {
  Message a, b;
  if (!parse(data1, size1, root_msg(root), a, 0) || !parse(data2, size2, root_msg(root), b, 0))
    return 0;
  Tree ta, tb;
  std::set<std::string> seen_a, seen_b;
  collect(a, ta, seen_a);
  collect(b, tb, seen_b);
  std::vector<const Site*> donors;
  for (const Site& s : tb.fields)
    if (s.field().msg) donors.push_back(&s);
  if (donors.empty()) return 0;
  std::mt19937_64 rng(seed);
  const Site& donor = *donors[rng() % donors.size()];
  std::vector<Message*> targets;
  for (Message* m : ta.messages)
    if (m->type == donor.parent->type) targets.push_back(m);
  if (targets.empty()) return 0;
  Message* to = targets[rng() % targets.size()];
  Field copy = donor.field();
  copy.msg = clone(*copy.msg);
  to->fields.insert(to->fields.begin() + static_cast<ptrdiff_t>(rng() % (to->fields.size() + 1)), copy);
  return write_out(a, out, max_out_size);
}

std::string reencode_proto(const uint8_t* data, size_t size, RootType root) {
  Message m;
  if (!parse(data, size, root_msg(root), m, 0)) return "";
  std::string out;
  encode(m, out);
  return out;
}

}  // namespace onyx::fuzz
