#include "shape/infer.h"

namespace onyx::shape {

InferContext::InferContext(const ir::Node& node, std::vector<const ir::TypeInfo*> input_types,
                           std::vector<const Tensor*> input_values, SymbolGen* symbols)
    : node_(node),
      types_(std::move(input_types)),
      values_(std::move(input_values)),
      outputs_(node.outputs.size()),
      symbols_(symbols) {}

const ir::TypeInfo& InferContext::input_type(size_t i) const {
  if (!has_input(i)) fail("input {} is required but not given", i);
  return *types_[i];
}

bool InferContext::has_shape(size_t i) const {
  return has_input(i) && types_[i]->kind == ir::TypeInfo::Kind::kTensor && types_[i]->has_shape;
}

const ir::Shape& InferContext::input_shape(size_t i) const {
  const ir::TypeInfo& t = input_type(i);
  if (t.kind != ir::TypeInfo::Kind::kTensor) fail("input {} must be a tensor, got {}", i, t.str());
  if (!t.has_shape) fail("input {} has unknown rank", i);
  return t.shape;
}

bool InferContext::input_ints(size_t i, std::vector<int64_t>& out) const {
  const Tensor* t = input_value(i);
  if (!t) return false;
  out.clear();
  out.reserve(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::kInt64) {
    out.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  } else if (t->dtype() == DType::kInt32) {
    for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->data<int32_t>()[k]);
  } else {
    fail("input {} must be int32 or int64, got {}", i, dtype_name(t->dtype()));
  }
  return true;
}

bool InferContext::has_output(size_t i) const {
  return i < node_.outputs.size() && !node_.outputs[i].empty();
}

namespace {

/// Every output type a shape function makes is checked here: at most kMaxRank axes, no
/// dim below -1 (-1 is "unknown"; anything lower is a wrapped computation), and known
/// dims whose product fits int64, so no later stage sizes a buffer from a wrapped count.
void check_output_type(const InferContext& ctx, size_t i, const ir::TypeInfo& t, int depth) {
  if (depth > 64) return;
  if (t.inner) check_output_type(ctx, i, *t.inner, depth + 1);
  if (!t.has_shape) return;
  if (t.shape.size() > static_cast<size_t>(kMaxRank))
    ctx.fail("output {} would have rank {}; onyx allows at most {} axes", i, t.shape.size(),
             kMaxRank);
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (const ir::Dim& d : t.shape) {
    if (d.value < -1)
      ctx.fail("output {} would have a negative dim {} (shape {})", i, d.value,
               ir::shape_str(t.shape));
    if (d.value == 0) empty = true;
    if (d.known() && !overflow && !mul_fits(n, d.value, n)) overflow = true;
  }
  if (overflow && !empty)
    ctx.fail("output {} would have shape {}, more elements than fit in 64 bits", i,
             ir::shape_str(t.shape));
}

}  // namespace

void InferContext::set_output(size_t i, ir::TypeInfo t) {
  if (i >= outputs_.size()) return;  // optional trailing output not requested
  check_output_type(*this, i, t, 0);
  outputs_[i] = std::move(t);
}

void InferContext::fail_msg(const std::string& msg) const {
  std::string ins;
  for (size_t i = 0; i < types_.size(); ++i) {
    if (i) ins += ", ";
    ins += types_[i] ? types_[i]->str() : std::string("(none)");
  }
  throw Error(ErrorCode::kInvalidModel,
              fmt::format("{}: {} (inputs: {})", node_.describe(), msg, ins));
}

void ShapeRegistry::add(std::string_view domain, std::string_view op, ShapeFn fn) {
  fns_[{std::string(domain), std::string(op)}] = fn;
}

ShapeFn ShapeRegistry::find(std::string_view domain, std::string_view op) const {
  auto it = fns_.find(std::pair<std::string, std::string>(domain, op));
  return it == fns_.end() ? nullptr : it->second;
}

const ShapeRegistry& shape_registry() {
  static const ShapeRegistry reg = [] {
    ShapeRegistry r;
    register_elementwise_shapes(r);
    register_logic_shapes(r);
    register_cast_shapes(r);
    register_matmul_shapes(r);
    register_conv_shapes(r);
    register_pool_shapes(r);
    register_norm_shapes(r);
    register_reduce_shapes(r);
    register_tensor_shapes(r);
    register_gather_shapes(r);
    register_resize_shapes(r);
    register_rnn_shapes(r);
    register_control_shapes(r);
    register_sequence_shapes(r);
    register_quant_shapes(r);
    register_misc_shapes(r);
    register_attention_shapes(r);
    register_signal_shapes(r);
    register_string_shapes(r);
    register_random_shapes(r);
    register_ml_shapes(r);
    register_fused_shapes(r);
    return r;
  }();
  return reg;
}

ir::Shape broadcast_shapes(const InferContext& ctx, const std::vector<const ir::Shape*>& shapes) {
  size_t rank = 0;
  for (const ir::Shape* s : shapes) rank = std::max(rank, s->size());
  ir::Shape out(rank, ir::Dim(1));
  for (size_t k = 0; k < rank; ++k) {
    ir::Dim acc(1);
    bool first = true;
    for (const ir::Shape* s : shapes) {
      if (k + s->size() < rank) continue;
      const ir::Dim& d = (*s)[k + s->size() - rank];
      if (d.known() && d.value == 1) continue;
      if (first || (acc.known() && acc.value == 1)) {
        acc = d;
        first = false;
        continue;
      }
      if (d.known() && acc.known()) {
        if (d.value != acc.value)
          ctx.fail("cannot broadcast dimension {} against {} (axis {} of the output)", d.value,
                   acc.value, k);
      } else if (!acc.known() && d.known()) {
        acc = d;  // the other side must be 1 or equal; assume equal
      } else if (!acc.known() && !d.known() && !(acc == d)) {
        acc = ir::Dim();  // two different symbols: unknown
      }
    }
    out[k] = first ? ir::Dim(1) : acc;
  }
  return out;
}

int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

void propagate(InferContext& ctx, size_t from, size_t to) {
  ctx.set_output(to, ctx.input_type(from));
}

int64_t checked_mul(const InferContext& ctx, int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!mul_fits(a, b, r)) ctx.fail("{} overflows 64 bits ({} * {})", what, a, b);
  return r;
}

int64_t checked_add(const InferContext& ctx, int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!add_fits(a, b, r)) ctx.fail("{} overflows 64 bits ({} + {})", what, a, b);
  return r;
}

int64_t checked_sub(const InferContext& ctx, int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!sub_fits(a, b, r)) ctx.fail("{} overflows 64 bits ({} - {})", what, a, b);
  return r;
}

void check_rank(const InferContext& ctx, int64_t rank, std::string_view what) {
  if (rank < 0 || rank > kMaxRank)
    ctx.fail("{} would have rank {}; onyx allows at most {} axes", what, rank, kMaxRank);
}

ir::Shape fresh_shape(InferContext& ctx, int64_t rank, std::string_view what) {
  check_rank(ctx, rank, what);
  ir::Shape s;
  s.reserve(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) s.push_back(ctx.fresh_dim());
  return s;
}

}  // namespace onyx::shape
