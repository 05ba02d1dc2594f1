#include "check/schema.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <tuple>

#include "onyx/dtype.h"

namespace onyx::check {
namespace {

static_assert(kMaxDTypeCode < 64, "TypeSet masks hold one bit per DType code, codes 1..63");

struct DomainRow {
  const char* domain;
  int max_opset;
};

#define ONYX_SCHEMA_DOMAINS
const DomainRow kDomains[] = {
#include "check/onnx_schemas.inc"
};
#undef ONYX_SCHEMA_DOMAINS

struct Row {
  const char* domain;
  const char* op;
  int since, min_in, max_in, min_out, max_out;
  bool deprecated;
  const char* inputs;
  const char* outputs;
  const char* attrs;
};

#define ONYX_SCHEMA_TYPESETS
const TypeSet kTypeSets[] = {
#include "check/onnx_schemas.inc"
};
#undef ONYX_SCHEMA_TYPESETS

#define ONYX_SCHEMA_ROWS
const Row kRows[] = {
#include "check/onnx_schemas.inc"
};
#undef ONYX_SCHEMA_ROWS

ir::Attribute::Type attr_type(char c) {
  using T = ir::Attribute::Type;
  switch (c) {
    case 'f': return T::kFloat;
    case 'i': return T::kInt;
    case 's': return T::kString;
    case 't': return T::kTensor;
    case 'g': return T::kGraph;
    case 'F': return T::kFloats;
    case 'I': return T::kInts;
    case 'S': return T::kStrings;
    case 'T': return T::kTensors;
    case 'G': return T::kGraphs;
    case 'p': return T::kSparseTensor;
    case 'P': return T::kSparseTensors;
    case 'y': return T::kTypeProto;
    case 'Y': return T::kTypeProtos;
    default: return T::kUndefined;
  }
}

// Split on spaces by hand: an istringstream here linked libc++'s locale machinery
// (num_get, time_get, codecvt: ~40 KB) into the WebAssembly build.
std::vector<std::string> words(const char* s) {
  std::vector<std::string> out;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  for (const char* p = s; *p;) {
    while (*p && space(*p)) ++p;
    const char* b = p;
    while (*p && !space(*p)) ++p;
    if (p > b) out.emplace_back(b, p);
  }
  return out;
}

// "name:type_str[?|*][~]:typeset"
std::vector<FormalParam> params(const char* s) {
  std::vector<FormalParam> out;
  for (const std::string& w : words(s)) {
    FormalParam p;
    size_t a = w.find(':'), b = w.rfind(':');
    p.name = w.substr(0, a);
    std::string t = w.substr(a + 1, b - a - 1);
    if (!t.empty() && t.back() == '~') {
      p.homogeneous = false;
      t.pop_back();
    }
    if (!t.empty() && (t.back() == '?' || t.back() == '*')) {
      p.option = t.back();
      t.pop_back();
    }
    p.type_str = t;
    size_t idx = std::stoul(w.substr(b + 1));
    p.types = idx < std::size(kTypeSets) ? &kTypeSets[idx] : nullptr;
    out.push_back(std::move(p));
  }
  return out;
}

std::unique_ptr<OpSchema> parse_row(const Row& r) {
  auto s = std::make_unique<OpSchema>();
  s->domain = r.domain;
  s->op = r.op;
  s->since = r.since;
  s->min_inputs = r.min_in;
  s->max_inputs = r.max_in;
  s->min_outputs = r.min_out;
  s->max_outputs = r.max_out;
  s->deprecated = r.deprecated;
  s->inputs = params(r.inputs);
  s->outputs = params(r.outputs);
  for (const std::string& w : words(r.attrs)) {
    AttrSchema a;
    size_t c = w.find(':');
    a.name = w.substr(0, c);
    a.type = attr_type(w[c + 1]);
    a.required = w.back() == '!';
    s->attrs.push_back(std::move(a));
  }
  return s;
}

// The versions of one operator: kRows[first, first + count), oldest first (the generator
// writes an operator's rows together, sorted by since). They are parsed on the first
// lookup of that operator, not all at once: parsing every row took 4 of the 21 million
// instructions of a small model's session (the digit reader), and a session looks up
// only the operators its graph has.
struct OpEntry {
  std::string_view domain, op;
  size_t first = 0, count = 0;
  mutable std::once_flag parsed;
  mutable std::vector<std::unique_ptr<OpSchema>> versions;

  const std::vector<std::unique_ptr<OpSchema>>& get() const {
    std::call_once(parsed, [this] {
      for (size_t i = first; i < first + count; ++i) versions.push_back(parse_row(kRows[i]));
    });
    return versions;
  }
};

struct Table {
  std::deque<OpEntry> entries;           // std::once_flag does not move
  std::vector<const OpEntry*> by_name;   // sorted by (domain, op)
};

const Table& table() {
  static const Table t = [] {
    Table tb;
    for (size_t i = 0; i < std::size(kRows); ++i) {
      const Row& r = kRows[i];
      if (tb.entries.empty() || tb.entries.back().domain != r.domain || tb.entries.back().op != r.op) {
        OpEntry& e = tb.entries.emplace_back();
        e.domain = r.domain;
        e.op = r.op;
        e.first = i;
      }
      ++tb.entries.back().count;
    }
    for (const OpEntry& e : tb.entries) tb.by_name.push_back(&e);
    std::sort(tb.by_name.begin(), tb.by_name.end(), [](const OpEntry* a, const OpEntry* b) {
      return std::tie(a->domain, a->op) < std::tie(b->domain, b->op);
    });
    return tb;
  }();
  return t;
}

const OpEntry* find_entry(std::string_view domain, std::string_view op) {
  const auto& v = table().by_name;
  auto it = std::lower_bound(v.begin(), v.end(), std::tie(domain, op), [](const OpEntry* e, const auto& key) {
    return std::tie(e->domain, e->op) < key;
  });
  return it != v.end() && (*it)->domain == domain && (*it)->op == op ? *it : nullptr;
}

bool mask_allows(uint64_t mask, const ir::TypeInfo* elem_of) {
  if (!elem_of) return mask != 0;  // element type unknown
  if (elem_of->kind == ir::TypeInfo::Kind::kUnknown) return mask != 0;
  if (elem_of->kind != ir::TypeInfo::Kind::kTensor) return false;
  int code = static_cast<int>(elem_of->elem);
  if (code <= 0) return mask != 0;
  return code < 64 && (mask >> code & 1);
}

void add_names(std::string& out, uint64_t mask, const char* pre, const char* post) {
  for (int c = 1; c < 64; ++c)
    if (mask >> c & 1) {
      if (!out.empty()) out += ", ";
      out += pre;
      out += dtype_name(static_cast<DType>(c));
      out += post;
    }
}

}  // namespace

bool TypeSet::allows(const ir::TypeInfo& t) const {
  using K = ir::TypeInfo::Kind;
  switch (t.kind) {
    case K::kUnknown: return true;
    case K::kTensor: {
      if (t.elem == DType::kUndefined) return tensor != 0;
      int code = static_cast<int>(t.elem);
      return code < 64 && (tensor >> code & 1);
    }
    case K::kSequence:
      if (other) return true;  // seq(map(...)) may be meant
      return mask_allows(seq, t.inner.get());
    case K::kOptional: {
      const ir::TypeInfo* in = t.inner.get();
      if (in && in->kind == K::kSequence) return mask_allows(optseq, in->inner.get());
      if (in && in->kind == K::kTensor) return mask_allows(opt, in);
      return opt != 0 || optseq != 0;
    }
    case K::kMap:
    case K::kSparseTensor: return other;
  }
  return true;
}

std::string TypeSet::str(const ir::TypeInfo* like) const {
  using K = ir::TypeInfo::Kind;
  std::string s;
  K k = like ? like->kind : K::kUnknown;
  bool all = k == K::kUnknown;
  if (all || k == K::kTensor) add_names(s, tensor, "tensor(", ")");
  if (all || k == K::kSequence) add_names(s, seq, "seq(tensor(", "))");
  if (all || k == K::kOptional) {
    add_names(s, opt, "optional(tensor(", "))");
    add_names(s, optseq, "optional(seq(tensor(", ")))");
  }
  if (other && (all || k == K::kMap || k == K::kSparseTensor || k == K::kSequence))
    s += s.empty() ? "map/sparse types" : ", map/sparse types";
  return s.empty() ? "(none of this kind)" : s;
}

const AttrSchema* OpSchema::attr(std::string_view name) const {
  for (const AttrSchema& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

const FormalParam* OpSchema::input_param(size_t i) const {
  if (inputs.empty()) return nullptr;
  if (i < inputs.size()) return &inputs[i];
  return inputs.back().option == '*' ? &inputs.back() : nullptr;
}

const FormalParam* OpSchema::output_param(size_t i) const {
  if (outputs.empty()) return nullptr;
  if (i < outputs.size()) return &outputs[i];
  return outputs.back().option == '*' ? &outputs.back() : nullptr;
}

int schema_max_opset(std::string_view domain) {
  if (domain == "ai.onnx") domain = "";
  for (const DomainRow& d : kDomains)
    if (domain == d.domain) return d.max_opset;
  return 0;
}

const OpSchema* find_schema(std::string_view domain, std::string_view op, int opset) {
  const OpEntry* e = find_entry(domain, op);
  if (!e) return nullptr;
  const OpSchema* best = nullptr;
  for (const auto& s : e->get())
    if (s->since <= opset) best = s.get();
  return best;
}

std::vector<const OpSchema*> schema_versions(std::string_view domain, std::string_view op) {
  std::vector<const OpSchema*> out;
  if (const OpEntry* e = find_entry(domain, op))
    for (const auto& s : e->get()) out.push_back(s.get());
  return out;
}

std::string schema_source() {
  return ONYX_SCHEMA_SOURCE;
}

}  // namespace onyx::check
