// Shape functions of the sequence family: Sequence*, SplitToSequence,
// ConcatFromSequence, SequenceMap and the Optional ops.
#include <memory>

#include "shape/infer.h"

namespace onyx::shape {

namespace flow {
// Defined in control.cc.
ir::TypeInfo scope_type(InferContext& ctx, const ir::TypeInfo& t);
ir::TypeInfo merge_types(InferContext& ctx, const ir::TypeInfo& a, const ir::TypeInfo& b);
}  // namespace flow

namespace {

using K = ir::TypeInfo::Kind;

// Element type of a sequence-typed input; unknown when the input's type says nothing.
ir::TypeInfo seq_elem(const InferContext& ctx, size_t i) {
  const ir::TypeInfo& t = ctx.input_type(i);
  if (t.kind == K::kUnknown) return {};
  if (t.kind != K::kSequence) ctx.fail("input {} must be a sequence, got {}", i, t.str());
  if (!t.inner) return {};
  if (t.inner->kind != K::kTensor && t.inner->kind != K::kUnknown)
    ctx.fail("input {} must be a sequence of tensors, got {}", i, t.str());
  return *t.inner;
}

// Checks that an optional `position` input is a scalar integer when its type is known.
void check_position(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return;
  DType dt = ctx.input_dtype(i);
  if (dt != DType::kUndefined && dt != DType::kInt32 && dt != DType::kInt64)
    ctx.fail("position must be int32 or int64, got {}", dtype_name(dt));
  // The spec asks for a scalar; exporters (and ONNX's own tests) also pass shape [1].
  if (!ctx.has_shape(i)) return;
  const ir::Shape& s = ctx.input_shape(i);
  if (s.size() > 1 || (s.size() == 1 && s[0].known() && s[0].value != 1))
    ctx.fail("position must be a scalar, got shape {}", ir::shape_str(s));
}

ir::TypeInfo tensor_elem(const InferContext& ctx, size_t i) {
  const ir::TypeInfo& t = ctx.input_type(i);
  if (t.kind != K::kTensor && t.kind != K::kUnknown)
    ctx.fail("input {} must be a tensor, got {}", i, t.str());
  return t;
}

void check_same_dtype(const InferContext& ctx, const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (a.kind == K::kTensor && b.kind == K::kTensor && a.elem != DType::kUndefined &&
      b.elem != DType::kUndefined && a.elem != b.elem)
    ctx.fail("sequence elements must share one dtype: got {} and {}", dtype_name(a.elem),
             dtype_name(b.elem));
}

void infer_sequence_construct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("SequenceConstruct needs at least one input");
  ir::TypeInfo elem = tensor_elem(ctx, 0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    ir::TypeInfo t = tensor_elem(ctx, i);
    check_same_dtype(ctx, elem, t);
    elem = flow::merge_types(ctx, elem, t);
  }
  ctx.set_output(0, ir::TypeInfo::sequence_of(std::move(elem)));
}

void infer_sequence_empty(InferContext& ctx) {
  int64_t dt = ctx.attr_i("dtype", static_cast<int64_t>(DType::kFloat));
  if (!dtype_valid(static_cast<int32_t>(dt)) || dt != static_cast<int32_t>(dt))
    ctx.fail("attribute dtype {} is not a valid tensor element type", dt);
  ctx.set_output(0, ir::TypeInfo::sequence_of(ir::TypeInfo::tensor_unranked(static_cast<DType>(dt))));
}

void infer_sequence_at(InferContext& ctx) {
  ir::TypeInfo elem = seq_elem(ctx, 0);
  check_position(ctx, 1);
  if (!ctx.has_input(1)) ctx.fail("input position is required");
  ctx.set_output(0, std::move(elem));
}

void infer_sequence_insert(InferContext& ctx) {
  ir::TypeInfo elem = seq_elem(ctx, 0);
  ir::TypeInfo t = tensor_elem(ctx, 1);
  check_same_dtype(ctx, elem, t);
  check_position(ctx, 2);
  // An element type that names no dtype comes from an untyped (empty) sequence.
  if (elem.kind == K::kTensor && elem.elem == DType::kUndefined) elem = t;
  ctx.set_output(0, ir::TypeInfo::sequence_of(flow::merge_types(ctx, elem, t)));
}

void infer_sequence_erase(InferContext& ctx) {
  ir::TypeInfo elem = seq_elem(ctx, 0);
  check_position(ctx, 1);
  ctx.set_output(0, ir::TypeInfo::sequence_of(std::move(elem)));
}

void infer_sequence_length(InferContext& ctx) {
  seq_elem(ctx, 0);
  ctx.set_output(0, DType::kInt64, {});
}

void infer_split_to_sequence(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  int64_t axis_attr = ctx.attr_i("axis", 0);
  int64_t keepdims = ctx.attr_i("keepdims", 1);
  if (ctx.has_input(1)) {
    DType st = ctx.input_dtype(1);
    if (st != DType::kUndefined && st != DType::kInt32 && st != DType::kInt64)
      ctx.fail("split must be int32 or int64, got {}", dtype_name(st));
    if (ctx.has_shape(1) && ctx.input_rank(1) > 1)
      ctx.fail("split must be a scalar or 1-D, got shape {}", ir::shape_str(ctx.input_shape(1)));
  }
  if (!ctx.has_shape(0)) {
    ctx.set_output(0, ir::TypeInfo::sequence_of(ir::TypeInfo::tensor_unranked(dt)));
    return;
  }
  ir::Shape s = ctx.input_shape(0);
  if (s.empty()) ctx.fail("input must have rank >= 1 to be split");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, axis_attr, static_cast<int64_t>(s.size())));
  const ir::Dim dim = s[axis];
  std::vector<int64_t> split;
  if (!ctx.has_input(1)) {
    if (keepdims) s[axis] = ir::Dim(1);
    else s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
  } else if (ctx.input_ints(1, split)) {
    const Tensor* sv = ctx.input_value(1);
    if (sv->rank() > 1) ctx.fail("split must be a scalar or 1-D, got shape {}", dims_str(sv->dims()));
    for (int64_t v : split)
      if (v < 0) ctx.fail("split values must be >= 0, got {}", v);
    if (sv->rank() == 0) {
      if (split[0] <= 0) ctx.fail("a scalar split must be > 0, got {}", split[0]);
      // Equal chunks unless the last one is short.
      bool even = dim.known() && dim.value % split[0] == 0;
      s[axis] = even ? ir::Dim(split[0]) : ctx.fresh_dim();
    } else {
      if (dim.known()) {
        int64_t sum = 0;
        for (int64_t v : split) {
          if (v > dim.value - sum)
            ctx.fail("split values {} exceed the size {} of axis {}", dims_str(split), dim.value, axis);
          sum += v;
        }
        if (sum != dim.value)
          ctx.fail("split values sum to {} but axis {} has size {}", sum, axis, dim.value);
      }
      bool same = !split.empty();
      for (int64_t v : split) same = same && v == split[0];
      s[axis] = same ? ir::Dim(split[0]) : ctx.fresh_dim();
    }
  } else {
    s[axis] = ctx.fresh_dim();
  }
  ctx.set_output(0, ir::TypeInfo::sequence_of(ir::TypeInfo::tensor(dt, std::move(s))));
}

void infer_concat_from_sequence(InferContext& ctx) {
  ir::TypeInfo elem = seq_elem(ctx, 0);
  if (!ctx.has_attr("axis")) ctx.fail("attribute axis is required");
  int64_t axis = ctx.attr_i("axis", 0);
  int64_t new_axis = ctx.attr_i("new_axis", 0);
  if (new_axis != 0 && new_axis != 1) ctx.fail("attribute new_axis must be 0 or 1, got {}", new_axis);
  if (elem.kind != K::kTensor || !elem.has_shape) {
    ctx.set_output_unranked(0, elem.elem);
    return;
  }
  ir::Shape s = elem.shape;
  int64_t r = static_cast<int64_t>(s.size()) + new_axis;
  if (r == 0) ctx.fail("cannot concatenate scalars without new_axis=1");
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, r));
  if (new_axis) s.insert(s.begin() + static_cast<std::ptrdiff_t>(a), ctx.fresh_dim());
  else s[a] = ctx.fresh_dim();
  ctx.set_output(0, elem.elem, std::move(s));
}

void infer_sequence_map(InferContext& ctx) {
  const ir::Graph* body = ctx.node().attr_g("body");
  if (!body) ctx.fail("graph attribute 'body' is required");
  seq_elem(ctx, 0);
  if (body->inputs.size() != ctx.num_inputs())
    ctx.fail("body has {} inputs but the node has {}", body->inputs.size(), ctx.num_inputs());
  if (body->outputs.size() != ctx.num_outputs())
    ctx.fail("body has {} outputs but the node has {}", body->outputs.size(), ctx.num_outputs());
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    ir::TypeInfo t = flow::scope_type(ctx, body->outputs[k].type);
    if (t.kind != K::kTensor && t.kind != K::kUnknown)
      ctx.fail("body output {} must be a tensor, got {}", k, t.str());
    ctx.set_output(k, ir::TypeInfo::sequence_of(std::move(t)));
  }
}

void infer_optional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    const ir::TypeInfo& t = ctx.input_type(0);
    if (t.kind == K::kOptional) ctx.fail("input must be a tensor or a sequence, got {}", t.str());
    ctx.set_output(0, ir::TypeInfo::optional_of(t));
    return;
  }
  const ir::Attribute* a = ctx.node().attr("type");
  if (!a || a->type != ir::Attribute::Type::kTypeProto)
    ctx.fail("without an input, attribute 'type' (a type proto) is required");
  ctx.set_output(0, ir::TypeInfo::optional_of(a->tp));
}

void infer_optional_has_element(InferContext& ctx) { ctx.set_output(0, DType::kBool, {}); }

void infer_optional_get_element(InferContext& ctx) {
  const ir::TypeInfo& t = ctx.input_type(0);
  if (t.kind == K::kOptional) ctx.set_output(0, t.inner ? *t.inner : ir::TypeInfo{});
  else ctx.set_output(0, t);
}

}  // namespace

void register_sequence_shapes(ShapeRegistry& r) {
  r.add("", "SequenceConstruct", infer_sequence_construct);
  r.add("", "SequenceEmpty", infer_sequence_empty);
  r.add("", "SequenceAt", infer_sequence_at);
  r.add("", "SequenceInsert", infer_sequence_insert);
  r.add("", "SequenceErase", infer_sequence_erase);
  r.add("", "SequenceLength", infer_sequence_length);
  r.add("", "SplitToSequence", infer_split_to_sequence);
  r.add("", "ConcatFromSequence", infer_concat_from_sequence);
  r.add("", "SequenceMap", infer_sequence_map);
  r.add("", "Optional", infer_optional);
  r.add("", "OptionalHasElement", infer_optional_has_element);
  r.add("", "OptionalGetElement", infer_optional_get_element);
}

}  // namespace onyx::shape
