// Operator schemas of the standard domains (ai.onnx, ai.onnx.ml, ai.onnx.preview,
// ai.onnx.preview.training), every version the ONNX specification text describes: input/output
// counts, formal parameters with their allowed types, attributes with their types. Generated
// into onnx_schemas.inc by scripts/gen_schemas.py from ../shared/spec; `onyx check` validates
// nodes against it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onyx::check {

/// The types a formal parameter accepts: dtype bit masks per kind of value.
struct TypeSet {
  uint64_t tensor = 0;  ///< tensor(T): bit = DType code
  uint64_t seq = 0;     ///< seq(tensor(T))
  uint64_t opt = 0;     ///< optional(tensor(T))
  uint64_t optseq = 0;  ///< optional(seq(tensor(T)))
  bool other = false;   ///< maps, sequences of maps, sparse tensors (not checked further)
  /// True when a value of type `t` fits. Types with unknown parts are given the benefit
  /// of the doubt.
  bool allows(const ir::TypeInfo& t) const;
  /// "tensor(float), tensor(double)" (types of the kind of `t` only when given).
  std::string str(const ir::TypeInfo* like = nullptr) const;
};

struct FormalParam {
  std::string name;
  std::string type_str;  ///< type parameter ("T") or a concrete type ("tensor(int64)")
  char option = ' ';     ///< ' ' single, '?' optional, '*' variadic
  bool homogeneous = true;
  const TypeSet* types = nullptr;
};

struct AttrSchema {
  std::string name;
  ir::Attribute::Type type = ir::Attribute::Type::kUndefined;
  bool required = false;
};

/// One version of one operator. A deprecated version has no signature (the spec gives none).
struct OpSchema {
  std::string domain;
  std::string op;
  int since = 1;
  int min_inputs = 0, max_inputs = 0, min_outputs = 0, max_outputs = 0;
  bool deprecated = false;
  std::vector<FormalParam> inputs, outputs;
  std::vector<AttrSchema> attrs;
  const AttrSchema* attr(std::string_view name) const;
  /// The formal parameter input/output `i` binds to (the last one when variadic).
  const FormalParam* input_param(size_t i) const;
  const FormalParam* output_param(size_t i) const;
};

/// Highest opset of `domain` the table describes (0: a domain the table does not cover).
int schema_max_opset(std::string_view domain);
/// The version of `op` that applies at `opset` (the greatest `since` <= opset), or nullptr.
const OpSchema* find_schema(std::string_view domain, std::string_view op, int opset);
/// Every version of `op` in `domain`, oldest first (empty when the table has none).
std::vector<const OpSchema*> schema_versions(std::string_view domain, std::string_view op);
/// Which specification the table was generated from ("ONNX 1.22.0 specification"; without a
/// release named in the spec folder, the highest opset of each domain).
std::string schema_source();

}  // namespace onyx::check
