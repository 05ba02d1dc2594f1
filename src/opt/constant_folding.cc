// Pass fold_constants: computes at optimization time every node whose inputs are all
// constants (initializers that are not graph inputs) and replaces it by initializers
// holding its outputs; Constant nodes become initializers (a `value` tensor as it is, at
// any size). Also folds what the static
// shapes already tell: Shape and Size of a value whose shape is fully known, and
// Gather(Shape(x), constant indices) when the gathered dims are known.
// Not folded: ops of other domains, random ops, nodes with subgraphs, outputs that are
// not tensors, graph outputs, and any output above OptimizeOptions::fold_max_bytes (64 MiB
// by default; such a node stays and runs each time). A node whose kernel fails on its
// constant inputs stays too: the run reports the error in its place, and so does one
// still computing when the folding time of the whole optimization is spent
// (OptimizeOptions::fold_max_seconds, 2 s: its kernel polls the deadline).
//
// The planner (src/runtime/compile.cc) folds all-constant nodes as well, when a session
// is planned. This pass complements it rather than replacing it: the planner's folding
// also serves sessions with GraphOptimization::kNone, while this pass runs before the
// pattern passes (which need constants as initializers: BatchNormalization statistics,
// Clip bounds, scales computed by Constant nodes), folds static Shape/Size, and its result
// is what `onyx optimize` writes. After this pass the planner finds nothing left to fold
// but the nodes above the size limit.
#include <algorithm>
#include <set>

#include "base/cancel.h"
#include "kernels/registry.h"
#include "opt/pass.h"
#include "shape/infer.h"

namespace onyx::opt {
namespace {

bool foldable_op(const ir::Node& n) {
  static const std::set<std::string, std::less<>> kNever = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Bernoulli",    "Multinomial",      "Dropout"};
  return n.domain.empty() && n.opset > 0 && !kNever.count(n.op_type) && !has_subgraph(n) &&
         given_outputs(n) > 0;
}

/// Runs the reference kernel of `n` on constant inputs. Returns false (leaving `out`
/// undefined) when there is no kernel, an output is not a tensor or exceeds max_bytes, or
/// the kernel fails.
bool evaluate(const ir::Node& n, const std::vector<const Tensor*>& in, const OptimizeOptions& opts,
              double* seconds_left, std::vector<Value>& out) {
  // The folding time left bounds this node: its kernel polls the deadline and throws
  // kCancelled past it (caught below: the node stays).
  if (seconds_left && *seconds_left <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  CancelToken deadline;
  deadline.has_deadline = seconds_left != nullptr;
  if (seconds_left)
    deadline.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(*seconds_left));
  CancelScope scope(seconds_left ? &deadline : nullptr);
  struct Spend {
    double* left;
    std::chrono::steady_clock::time_point start;
    ~Spend() {
      if (left) *left -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  } spend{seconds_left, start};
  try {
    const kernels::Registry& reg = kernels::default_registry();
    const kernels::KernelDef* any = reg.find(n.domain, n.op_type, n.opset, DType::kUndefined);
    if (!any) return false;
    DType dt = DType::kUndefined;
    if (any->type_input >= 0 && static_cast<size_t>(any->type_input) < in.size() &&
        in[any->type_input])
      dt = in[any->type_input]->dtype();
    const kernels::KernelDef* k = reg.find(n.domain, n.op_type, n.opset, dt);
    shape::ShapeFn fn = shape::shape_registry().find(n.domain, n.op_type);
    if (!k || !fn) return false;
    std::vector<ir::TypeInfo> in_types(in.size());
    std::vector<const ir::TypeInfo*> type_ptrs(in.size(), nullptr);
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i]) {
        in_types[i] = ir::TypeInfo::tensor(in[i]->dtype(), ir::shape_of(in[i]->dims()));
        type_ptrs[i] = &in_types[i];
      }
    shape::SymbolGen syms;
    shape::InferContext ictx(n, type_ptrs, in, &syms);
    fn(ictx);
    std::vector<ir::TypeInfo> out_types = std::move(ictx.outputs());
    out.assign(n.outputs.size(), Value());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      const ir::TypeInfo& t = out_types[i];
      if (!t.is_tensor()) return false;
      if (!t.has_shape || !ir::shape_known(t.shape) || t.elem == DType::kUndefined)
        continue;  // kernel allocates
      const Dims d = ir::shape_dims(t.shape);
      const uint64_t bytes = static_cast<uint64_t>(dims_numel(d)) * dtype_size(t.elem);
      if (bytes > opts.fold_max_bytes) return false;
      out[i] = Value(Tensor(t.elem, d));
    }
    std::vector<Value> in_values;
    in_values.reserve(in.size());
    for (const Tensor* t : in) in_values.push_back(t ? Value(*t) : Value());
    std::vector<const Value*> in_ptrs;
    for (size_t i = 0; i < in.size(); ++i) in_ptrs.push_back(in[i] ? &in_values[i] : nullptr);
    kernels::KernelContext kctx(n, in_ptrs, &out, nullptr, nullptr, nullptr,
                                !opts.reference_kernels);
    kctx.set_output_types(&out_types);
    k->fn(kctx);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i].empty()) continue;
    if (!out[i].is_tensor() || out[i].tensor().nbytes() > opts.fold_max_bytes) return false;
  }
  return true;
}

/// Shape / Size of a statically shaped value: the kernel run on a data-less view.
bool fold_static_shape(PassContext& ctx, const ir::Node& n, std::vector<Value>& out) {
  if (n.inputs.empty() || n.inputs[0].empty()) return false;
  const ir::Shape* s = ctx.shape(n.inputs[0]);
  if (!s || !ir::shape_known(*s)) return false;
  DType dt = ctx.dtype(n.inputs[0]);
  if (dt == DType::kUndefined || dt == DType::kString) dt = DType::kFloat;
  Tensor fake = Tensor::view(dt, ir::shape_dims(*s), nullptr, nullptr);
  return evaluate(n, {&fake}, ctx.options(), ctx.fold_seconds_left(), out);
}

/// Gather(Shape(x), idx) where idx is constant and the dims it picks are known.
bool fold_shape_gather(PassContext& ctx, const ir::Node& n, std::vector<Value>& out) {
  if (n.inputs.size() < 2 || n.attr_i("axis", 0) != 0) return false;
  const int p = ctx.producer(n.inputs[0]);
  if (p < 0 || !is_op(ctx.node(static_cast<size_t>(p)), "Shape")) return false;
  const ir::Node& shape_node = ctx.node(static_cast<size_t>(p));
  const ir::Shape* s = ctx.shape(shape_node.inputs[0]);
  auto idx = const_ints(ctx, n.inputs[1]);
  if (!s || !idx) return false;
  int64_t r = static_cast<int64_t>(s->size());
  int64_t start = shape_node.opset >= 15 ? shape_node.attr_i("start", 0) : 0;
  int64_t end = shape_node.opset >= 15 ? shape_node.attr_i("end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t len = std::max<int64_t>(end - start, 0);
  for (int64_t i : *idx) {
    if (i < -len || i >= len) return false;
    const ir::Dim& d = (*s)[static_cast<size_t>(start + (i < 0 ? i + len : i))];
    if (!d.known()) return false;
  }
  // Shape's value with the unknown dims as 0: the gathered entries are all known ones.
  Tensor shape_value(DType::kInt64, {len});
  for (int64_t k = 0; k < len; ++k)
    shape_value.data<int64_t>()[k] = std::max<int64_t>((*s)[start + k].value, 0);
  const Tensor* ind = ctx.constant(n.inputs[1]);
  return evaluate(n, {&shape_value, ind}, ctx.options(), ctx.fold_seconds_left(), out);
}

}  // namespace

int64_t fold_constants(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& n = ctx.node(i);
    if (!foldable_op(n)) continue;
    bool pinned_output = false;
    for (const auto& o : n.outputs)
      if (!o.empty() && ctx.is_graph_output(o)) pinned_output = true;
    if (pinned_output) continue;
    if (n.op_type == "Constant" && n.attr("value") &&
        n.attr("value")->type == ir::Attribute::Type::kTensor && given_outputs(n) == 1) {
      // The attribute's tensor becomes the initializer as it is: no copy, no size limit.
      const Tensor t = n.attr("value")->t;
      const std::string out = n.outputs[0];
      ctx.remove(i);
      ctx.set_constant(out, t);
      ++rewrites;
      continue;
    }
    std::vector<Value> out;
    bool folded = false;
    if (n.op_type == "Shape" || n.op_type == "Size") {
      folded = fold_static_shape(ctx, n, out);
    } else if (n.op_type == "Gather" && fold_shape_gather(ctx, n, out)) {
      folded = true;
    }
    if (!folded) {
      std::vector<const Tensor*> in;
      bool all_const = true;
      for (const auto& name : n.inputs) {
        if (name.empty()) {
          in.push_back(nullptr);
          continue;
        }
        const Tensor* t = ctx.constant(name);
        if (!t) {
          all_const = false;
          break;
        }
        in.push_back(t);
      }
      if (!all_const) continue;
      folded = evaluate(n, in, ctx.options(), ctx.fold_seconds_left(), out);
    }
    if (!folded) continue;
    const std::vector<std::string> outputs = n.outputs;
    ctx.remove(i);
    for (size_t k = 0; k < outputs.size(); ++k)
      if (!outputs[k].empty()) ctx.set_constant(outputs[k], out[k].tensor());
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
