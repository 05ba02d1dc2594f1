// Shape and type inference: one pure function per op, run at session creation on
// (possibly symbolic) types, and again at run time on concrete shapes and values.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/checked.h"
#include "base/error.h"
#include "ir/graph.h"

namespace onyx::shape {

/// Makes fresh symbolic dims ("unk__0", "unk__1", ...) for data-dependent extents.
class SymbolGen {
 public:
  ir::Dim next() { return ir::Dim::symbol("unk__" + std::to_string(n_++)); }

 private:
  int n_ = 0;
};

/// What a shape function sees: the node, its input types, the values of inputs that
/// are known (initializers and constants at session creation; every tensor input at
/// run time), and where to put the output types.
class InferContext {
 public:
  InferContext(const ir::Node& node, std::vector<const ir::TypeInfo*> input_types,
               std::vector<const Tensor*> input_values, SymbolGen* symbols);

  const ir::Node& node() const { return node_; }
  int opset() const { return node_.opset; }

  size_t num_inputs() const { return types_.size(); }
  /// True when input `i` is given (not omitted with "" and within range).
  bool has_input(size_t i) const { return i < types_.size() && types_[i] != nullptr; }
  const ir::TypeInfo& input_type(size_t i) const;
  DType input_dtype(size_t i) const { return input_type(i).elem; }
  /// True when input `i` is a tensor of known rank.
  bool has_shape(size_t i) const;
  const ir::Shape& input_shape(size_t i) const;  ///< fails when the rank is unknown
  size_t input_rank(size_t i) const { return input_shape(i).size(); }
  /// The value of input `i` when known, else nullptr. Notes that the function read it
  /// (values_read()).
  const Tensor* input_value(size_t i) const {
    if (i >= values_.size()) return nullptr;
    if (values_[i]) values_read_ |= uint64_t{1} << (i < 63 ? i : 63);
    return values_[i];
  }
  /// Bit i (i < 63): the value of input i was read; bit 63: some input from 63 on. The
  /// executor caches an output type per input signature only when every value it was
  /// inferred from is itself fixed by the signature.
  uint64_t values_read() const { return values_read_; }
  /// The value of input `i` without noting a read: for a function that hands the values
  /// on to another context and then adds that context's reads with note_values_read().
  const Tensor* peek_value(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }
  void note_values_read(uint64_t mask) const { values_read_ |= mask; }
  /// Reads an integer tensor input (int32/int64) as int64 values; nullopt when unknown.
  bool input_ints(size_t i, std::vector<int64_t>& out) const;

  size_t num_outputs() const { return outputs_.size(); }
  /// True when output `i` is requested (named) by the node.
  bool has_output(size_t i) const;
  void set_output(size_t i, ir::TypeInfo t);
  void set_output(size_t i, DType dt, ir::Shape s) { set_output(i, ir::TypeInfo::tensor(dt, std::move(s))); }
  void set_output_unranked(size_t i, DType dt) { set_output(i, ir::TypeInfo::tensor_unranked(dt)); }
  std::vector<ir::TypeInfo>& outputs() { return outputs_; }

  ir::Dim fresh_dim() { return symbols_ ? symbols_->next() : ir::Dim(); }

  // Attribute access (see ir::Node).
  int64_t attr_i(std::string_view n, int64_t def) const { return node_.attr_i(n, def); }
  float attr_f(std::string_view n, float def) const { return node_.attr_f(n, def); }
  std::string attr_s(std::string_view n, const std::string& def) const { return node_.attr_s(n, def); }
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const {
    return node_.attr_ints(n, std::move(def));
  }
  bool has_attr(std::string_view n) const { return node_.has_attr(n); }

  /// Throws an onyx::Error naming the node, its op type and opset.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    fail_msg(fmt::format(f, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_msg(const std::string& msg) const;

 private:
  const ir::Node& node_;
  std::vector<const ir::TypeInfo*> types_;
  std::vector<const Tensor*> values_;
  std::vector<ir::TypeInfo> outputs_;
  SymbolGen* symbols_;
  mutable uint64_t values_read_ = 0;
};

using ShapeFn = void (*)(InferContext&);

/// (domain, op type) -> shape function. Each function handles every opset version
/// of its op (ctx.opset() tells which applies).
class ShapeRegistry {
 public:
  void add(std::string_view domain, std::string_view op, ShapeFn fn);
  ShapeFn find(std::string_view domain, std::string_view op) const;

 private:
  std::map<std::pair<std::string, std::string>, ShapeFn, std::less<>> fns_;
};

/// The registry with every family registered (built once, on first use).
const ShapeRegistry& shape_registry();

// ---- helpers shared by shape functions ----

/// Numpy-style multidirectional broadcast of shapes; fails on a mismatch.
ir::Shape broadcast_shapes(const InferContext& ctx, const std::vector<const ir::Shape*>& shapes);
/// Normalizes a possibly negative axis into [0, rank); fails when out of range.
int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank);
/// Output type = input `i`'s type (same dtype and shape).
void propagate(InferContext& ctx, size_t from = 0, size_t to = 0);

// Checked arithmetic on dims and integer attributes (they come from the file): overflow
// fails naming the node and `what` ("blocksize * blocksize"), never wraps.
int64_t checked_mul(const InferContext& ctx, int64_t a, int64_t b, std::string_view what);
int64_t checked_add(const InferContext& ctx, int64_t a, int64_t b, std::string_view what);
int64_t checked_sub(const InferContext& ctx, int64_t a, int64_t b, std::string_view what);
/// Fails naming the node when an output rank taken from an input's length or an
/// attribute list (`what`) is negative or above kMaxRank; call it before building a
/// shape of that rank.
void check_rank(const InferContext& ctx, int64_t rank, std::string_view what);
/// A shape of `rank` fresh symbolic dims (rank checked first).
ir::Shape fresh_shape(InferContext& ctx, int64_t rank, std::string_view what = "the output");

// One registration function per op family (src/shape/<family>.cc).
void register_elementwise_shapes(ShapeRegistry& r);
void register_logic_shapes(ShapeRegistry& r);
void register_cast_shapes(ShapeRegistry& r);
void register_matmul_shapes(ShapeRegistry& r);
void register_conv_shapes(ShapeRegistry& r);
void register_pool_shapes(ShapeRegistry& r);
void register_norm_shapes(ShapeRegistry& r);
void register_reduce_shapes(ShapeRegistry& r);
void register_tensor_shapes(ShapeRegistry& r);
void register_gather_shapes(ShapeRegistry& r);
void register_resize_shapes(ShapeRegistry& r);
void register_rnn_shapes(ShapeRegistry& r);
void register_control_shapes(ShapeRegistry& r);
void register_sequence_shapes(ShapeRegistry& r);
void register_quant_shapes(ShapeRegistry& r);
void register_misc_shapes(ShapeRegistry& r);
void register_attention_shapes(ShapeRegistry& r);
void register_signal_shapes(ShapeRegistry& r);
void register_string_shapes(ShapeRegistry& r);
void register_random_shapes(ShapeRegistry& r);
void register_ml_shapes(ShapeRegistry& r);
void register_fused_shapes(ShapeRegistry& r);  ///< ai.onyx fused ops (src/shape/fused.cc)

}  // namespace onyx::shape
