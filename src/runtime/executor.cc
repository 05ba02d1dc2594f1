#include "runtime/executor.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>

#include "base/error.h"

namespace onyx::runtime {

ir::TypeInfo type_of_value(const Value& v, const ir::TypeInfo* declared) {
  switch (v.kind()) {
    case Value::Kind::kTensor: return ir::TypeInfo::tensor(v.tensor().dtype(), ir::shape_of(v.tensor().dims()));
    case Value::Kind::kSequence: {
      ir::TypeInfo elem = ir::TypeInfo::tensor_unranked(v.seq_dtype());
      ir::TypeInfo t = ir::TypeInfo::sequence_of(elem);
      if (declared && declared->kind == ir::TypeInfo::Kind::kOptional)
        return ir::TypeInfo::optional_of(t);
      return t;
    }
    case Value::Kind::kNone:
    default:
      if (declared && declared->kind == ir::TypeInfo::Kind::kOptional) return *declared;
      return ir::TypeInfo::optional_of(declared ? *declared : ir::TypeInfo{});
  }
}

const Value& frame_value(const Frame& f, int slot) {
  const Slot& s = f.graph->slots[static_cast<size_t>(slot)];
  return s.is_const ? s.constant : f.values[static_cast<size_t>(slot)];
}

void init_frame(Frame& f, const CompiledGraph& g, const Frame* parent, RunContext* run) {
  f.graph = &g;
  f.run = run;
  f.values.assign(g.slots.size(), Value());
  // Constants are read from the plan (frame_value); only inputs with a default start set.
  for (int s : g.inputs)
    if (!g.slots[static_cast<size_t>(s)].constant.is_none()) f.values[static_cast<size_t>(s)] = g.slots[static_cast<size_t>(s)].constant;
  for (size_t c = 0; c < g.captures.size(); ++c) {
    if (!parent) fail_runtime("subgraph value '{}' has no enclosing graph", g.captures[c].second);
    f.values[static_cast<size_t>(g.captures[c].first)] = frame_value(*parent, g.capture_outer[c]);
  }
}

namespace {

class FrameSubgraphRunner : public kernels::SubgraphRunner {
 public:
  FrameSubgraphRunner(const Step& step, const Frame* frame, ThreadPool* pool, RunContext& run)
      : step_(step), frame_(frame), pool_(pool), run_(run) {}
  std::vector<Value> run(const std::string& attr, std::vector<Value> inputs) override {
    // Every body run of a Loop/Scan/SequenceMap counts as one iteration.
    run_.check_iterations(*step_.node, ++calls_);
    run_.check_terminate(*step_.node);
    auto it = step_.subgraphs.find(attr);
    if (it == step_.subgraphs.end())
      fail_runtime("{}: has no graph attribute '{}'", step_.node->describe(), attr);
    const CompiledGraph& g = *it->second;
    if (inputs.size() != g.inputs.size())
      fail_runtime("{}: subgraph '{}' takes {} inputs, {} given", step_.node->describe(), attr,
                   g.inputs.size(), inputs.size());
    Frame f;
    init_frame(f, g, frame_, &run_);
    for (size_t i = 0; i < inputs.size(); ++i) f.values[static_cast<size_t>(g.inputs[i])] = std::move(inputs[i]);
    run_.enter_subgraph();
    try {
      run_frame(f, pool_);
    } catch (...) {
      run_.leave_subgraph();
      throw;
    }
    run_.leave_subgraph();
    std::vector<Value> outs;
    outs.reserve(g.outputs.size());
    for (int s : g.outputs) outs.push_back(frame_value(f, s));
    return outs;
  }

 private:
  const Step& step_;
  const Frame* frame_;
  ThreadPool* pool_;
  RunContext& run_;
  int64_t calls_ = 0;
};

bool fully_known(const ir::TypeInfo& t) {
  return t.kind == ir::TypeInfo::Kind::kTensor && t.has_shape && ir::shape_known(t.shape) &&
         t.elem != DType::kUndefined;
}

/// Output 0 may take the buffer of input `k` when the frame is its only holder, the value
/// dies at this step, and dtype and size match.
bool can_take_buffer(const Step& step, int k, const std::vector<const Value*>& in, Frame* frame,
                     const ir::TypeInfo& out0, const Dims& dims0) {
  if (!frame || k < 0 || static_cast<size_t>(k) >= in.size() || !in[static_cast<size_t>(k)]) return false;
  const int slot = step.in[static_cast<size_t>(k)];
  if (slot < 0 || frame->graph->slots[static_cast<size_t>(slot)].is_const) return false;
  bool dies = false;
  for (int r : step.release) dies |= r == slot;
  if (!dies) return false;
  for (size_t i = 0; i < step.in.size(); ++i)
    if (static_cast<int>(i) != k && step.in[i] == slot) return false;  // read twice by this node
  const Value& v = *in[static_cast<size_t>(k)];
  if (!v.is_tensor()) return false;
  const Tensor& t = v.tensor();
  if (t.dtype() != out0.elem || t.dtype() == DType::kString || t.storage_users() != 1) return false;
  return t.numel() == dims_numel(dims0);
}

/// The output buffer of the Concat at step `ci` (StepMemo::concat_dims), made now if its
/// frame slot does not hold it yet: a slice of a later Concat's when it is one of that
/// Concat's inputs in place, else allocated, keyed in the arena plan by `key` at the
/// current step (an output index past the running step's own). Undefined when the
/// signature's memo has no such buffer for it.
Tensor concat_buffer(const CompiledGraph& g, const SignaturePlan& plan, int ci, Frame& f, RunContext& run,
                     int key) {
  const StepMemo& cm = plan.steps[static_cast<size_t>(ci)];
  if (cm.concat_dims.empty()) return {};
  const Step& c = g.steps[static_cast<size_t>(ci)];
  const DType dt = cm.concat_dtype;
  const Dims& dims = cm.concat_dims;
  Value& v = f.values[static_cast<size_t>(c.out[0])];
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    return t.dtype() == dt && t.dims() == dims ? t : Tensor();
  }
  Tensor t;
  if (!cm.concat_slices.empty() && cm.concat_slices[0].first >= 0) {
    Tensor outer = concat_buffer(g, plan, cm.concat_slices[0].first, f, run, key);
    if (outer.defined() && cm.concat_slices[0].second + dims_numel(dims) <= outer.numel())
      t = outer.view_inside(dt, dims, static_cast<char*>(outer.raw()) +
                                          static_cast<size_t>(cm.concat_slices[0].second) * dtype_size(dt));
  }
  if (!t.defined()) t = run.allocate_output(*c.node, 0, dt, dims, false, key);
  v = Value(t);
  return t;
}

/// A Concat's inputs that already lie one after the other in one buffer (each a slice
/// another Concat's producers wrote in place): its output is a view of them.
Tensor adjacent_inputs(const std::vector<const Value*>& in, DType dt, const Dims& dims) {
  if (in.empty()) return {};
  const Tensor* first = nullptr;
  const char* next = nullptr;
  int64_t total = 0;
  for (const Value* v : in) {
    if (!v || !v->is_tensor()) return {};
    const Tensor& t = v->tensor();
    if (t.dtype() != dt) return {};
    if (!first) {
      first = &t;
    } else if (t.storage() != first->storage() || static_cast<const char*>(t.raw()) != next) {
      return {};
    }
    next = static_cast<const char*>(t.raw()) + t.nbytes();
    total += t.numel();
  }
  if (total != dims_numel(dims) || !first->storage()) return {};
  return first->view_inside(dt, dims, const_cast<void*>(first->raw()));
}

}  // namespace

void run_step(const CompiledGraph& g, const Step& step, const std::vector<const Value*>& in,
              std::vector<Value>& out, Frame* frame, ThreadPool* pool, RunContext& run,
              const StepMemo* memo, StepTrace* trace) {
  const ir::Node& node = *step.node;
  out.assign(node.outputs.size(), Value());
  try {
    // 1. Output shapes: static, or inferred from the concrete inputs.
    std::vector<ir::TypeInfo> inferred;
    const std::vector<ir::TypeInfo>* out_types = nullptr;
    const std::vector<Dims>* out_dims = nullptr;  // of out_types, when known already
    if (step.static_shapes) {
      out_types = &step.static_types;
      out_dims = &step.static_dims;
    } else if (memo && !memo->types.empty()) {
      out_types = &memo->types;
      out_dims = &memo->dims;
    } else {
      std::vector<ir::TypeInfo> in_types(in.size());
      std::vector<const ir::TypeInfo*> type_ptrs(in.size(), nullptr);
      std::vector<const Tensor*> values(in.size(), nullptr);
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i]) continue;
        const ir::TypeInfo* declared = step.in[i] >= 0 ? &g.slots[static_cast<size_t>(step.in[i])].type : nullptr;
        in_types[i] = type_of_value(*in[i], declared);
        type_ptrs[i] = &in_types[i];
        if (in[i]->is_tensor()) values[i] = &in[i]->tensor();
      }
      shape::SymbolGen syms;
      shape::InferContext ictx(node, type_ptrs, values, &syms);
      step.shape(ictx);
      inferred = std::move(ictx.outputs());
      out_types = &inferred;
      if (trace) {
        trace->inferred = true;
        trace->values_read = ictx.values_read();
        trace->types = inferred;
      }
    }
    // 2. Allocate outputs whose shape is fully known (unless the kernel makes its own):
    //    in the input that dies here when the kernel works in place, else from the run.
    const kernels::Kernel* impl = step.impl.get();
    const bool own_outputs = impl && impl->makes_own_outputs();
    const bool zero = !(impl && impl->overwrites_outputs());
    for (size_t i = 0; !own_outputs && i < out.size() && i < out_types->size(); ++i) {
      if (node.outputs[i].empty()) continue;
      const ir::TypeInfo& t = (*out_types)[i];
      if (!fully_known(t)) continue;
      Dims computed;
      if (!out_dims) computed = ir::shape_dims(t.shape);
      const Dims& dims = out_dims ? (*out_dims)[i] : computed;
      // Concat in place (plan.h): the Concat's output made early by a producer, or its
      // inputs already side by side; a producer's output as its slice of a Concat's.
      if (frame && frame->is_main && step.concat_in_place && i == 0) {
        Value& pre = frame->values[static_cast<size_t>(step.out[0])];
        if (pre.is_tensor()) {
          if (pre.tensor().dtype() == t.elem && pre.tensor().dims() == dims) {
            out[0] = std::move(pre);
            pre = Value();
            continue;
          }
          pre = Value();
        }
        Tensor view = adjacent_inputs(in, t.elem, dims);
        if (view.defined()) {
          out[0] = Value(std::move(view));
          continue;
        }
      }
      const SignaturePlan* plan = frame && frame->is_main && memo ? frame->run->memo() : nullptr;
      if (plan && plan->steps.size() == g.steps.size() && i < memo->concat_slices.size() &&
          memo->concat_slices[i].first >= 0) {
        const auto [ci, offset] = memo->concat_slices[i];
        Tensor whole = concat_buffer(g, *plan, ci, *frame, run, static_cast<int>(node.outputs.size() + i));
        const int64_t n = dims_numel(dims);
        if (whole.defined() && whole.dtype() == t.elem && offset + n <= whole.numel()) {
          const size_t es = dtype_size(t.elem);
          void* p = static_cast<char*>(whole.raw()) + static_cast<size_t>(offset) * es;
          if (zero) std::memset(p, 0, static_cast<size_t>(n) * es);
          out[i] = Value(whole.view_inside(t.elem, dims, p));
          continue;
        }
      }
      if (i == 0 && impl && can_take_buffer(step, impl->inplace_input(), in, frame, t, dims)) {
        out[0] = Value(in[static_cast<size_t>(impl->inplace_input())]->tensor().reshaped(dims));
        continue;
      }
      out[i] = Value(run.allocate_output(node, i, t.elem, dims, zero));
    }
    // 3. Kernel.
    const kernels::KernelDef* k = step.kernel;
    if (!k && memo) k = memo->kernel;
    if (!k) {
      DType dt = DType::kUndefined;
      const kernels::KernelDef* any = kernels::default_registry().find(node.domain, node.op_type, node.opset, DType::kUndefined);
      int ti = any ? any->type_input : 0;
      if (ti >= 0 && static_cast<size_t>(ti) < in.size() && in[ti] && in[ti]->is_tensor())
        dt = in[ti]->tensor().dtype();
      k = kernels::default_registry().find(node.domain, node.op_type, node.opset, dt);
      if (!k)
        fail_unsupported("{}: no kernel for input dtype {}", node.describe(), dtype_name(dt));
      if (trace) trace->kernel = k;
    }
    FrameSubgraphRunner sub(step, frame, pool, run);
    kernels::KernelContext kctx(node, in, &out, &sub, pool, &run, !run.limits().reference_kernels);
    kctx.set_output_types(out_types);
    if (impl && k == step.kernel)
      impl->run(kctx);
    else
      k->fn(kctx);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find(node.op_type) == std::string::npos) msg = node.describe() + ": " + msg;
    throw Error(e.code(), msg);
  } catch (const std::bad_alloc&) {
    fail_runtime("{}: out of memory", node.describe());
  } catch (const std::exception& e) {
    fail_runtime("{}: {}", node.describe(), e.what());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (node.outputs[i].empty() || !out[i].is_none()) continue;
    int s = i < step.out.size() ? step.out[i] : -1;
    if (s >= 0 && g.slots[static_cast<size_t>(s)].type.kind == ir::TypeInfo::Kind::kOptional) continue;
    fail_runtime("{}: kernel did not produce output {} ('{}')", node.describe(), i, node.outputs[i]);
  }
}

namespace {

/// Outputs of one step whose values a signature may fix: at most this many bytes each
/// step, and a signature's memo at most kMemoBytes (the planner keeps 256 signatures).
constexpr uint64_t kMemoStepBytes = 4096;
constexpr uint64_t kMemoBytes = 64 * 1024;

/// The first run of a signature: follows which slots have a shape, and which a value,
/// fixed by the signature (dtypes and dims of the inputs) alone, and fills the memo.
class MemoRecorder {
 public:
  MemoRecorder(const CompiledGraph& g, const Frame& f, SignaturePlan& plan)
      : plan_(plan), shape_(g.slots.size(), 0), value_(g.slots.size(), 0), output_(g.slots.size(), 0),
        seen_(g.slots.size(), {DType::kUndefined, Dims{}}) {
    plan_.steps.assign(g.steps.size(), StepMemo());
    for (size_t s = 0; s < g.slots.size(); ++s)
      if (g.slots[s].is_const) shape_[s] = value_[s] = 1;
    for (int s : g.inputs) {
      const Value& v = f.values[static_cast<size_t>(s)];
      if (!v.is_tensor()) continue;
      shape_[static_cast<size_t>(s)] = 1;  // the signature holds its dtype and dims
      const Value& def = g.slots[static_cast<size_t>(s)].constant;
      if (def.is_tensor() && def.tensor().storage() == v.tensor().storage() && v.tensor().storage())
        value_[static_cast<size_t>(s)] = 1;  // not fed: its default
    }
    for (int s : g.outputs) output_[static_cast<size_t>(s)] = 1;
    for (size_t s = 0; s < g.slots.size(); ++s) {
      const Value& v = g.slots[s].is_const ? g.slots[s].constant : f.values[s];
      if (v.is_tensor()) seen_[s] = {v.tensor().dtype(), v.tensor().dims()};
    }
  }

  /// After the run: the Concats whose inputs their producers may write in place for this
  /// signature (plan.h's Step::concat_targets), where the shapes are fixed by the signature
  /// and the Concat's axis has only 1s before it, so each input is one slab of its output.
  void finish_concats(const CompiledGraph& g) {
    for (const Step& c : g.steps) {
      if (!c.concat_in_place || c.folded) continue;
      StepMemo& cm = plan_.steps[static_cast<size_t>(c.index)];
      const auto y = static_cast<size_t>(c.out[0]);
      const DType dt = seen_[y].first;
      const Dims& yd = seen_[y].second;
      if (cm.skip || !shape_[y] || dt == DType::kUndefined || dt == DType::kString || yd.empty()) continue;
      const auto rank = static_cast<int64_t>(yd.size());
      int64_t axis = c.node->attr_i("axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      bool ok = true;
      for (int64_t k = 0; k < axis; ++k) ok = ok && yd[static_cast<size_t>(k)] == 1;
      std::vector<int64_t> offs;
      int64_t off = 0;
      for (int s : c.in) {
        const auto u = static_cast<size_t>(s);
        ok = ok && shape_[u] && seen_[u].first == dt && seen_[u].second.size() == yd.size();
        if (!ok) break;
        offs.push_back(off);
        off += dims_numel(seen_[u].second);
      }
      if (!ok || off != dims_numel(yd)) continue;
      for (size_t i = 0; i < c.in.size(); ++i) {
        const Step::ConcatSource& src = c.concat_sources[i];
        if (src.slot < 0) continue;
        const auto su = static_cast<size_t>(src.slot);
        if (!shape_[su] || seen_[su].first != dt ||
            dims_numel(seen_[su].second) != dims_numel(seen_[static_cast<size_t>(c.in[i])].second))
          continue;
        // (Another, later Concat may have taken the value: compile.cc gives it to the last.)
        const Step& p = g.steps[static_cast<size_t>(src.step)];
        StepMemo& pm = plan_.steps[static_cast<size_t>(src.step)];
        if (p.concat_targets[static_cast<size_t>(src.output)] != c.index || pm.skip) continue;
        pm.concat_slices.resize(p.out.size(), {-1, 0});
        pm.concat_slices[static_cast<size_t>(src.output)] = {c.index, offs[i]};
        cm.concat_dtype = dt;
        cm.concat_dims = yd;
        plan_.rerecord = true;
      }
    }
  }

  void note(const Step& step, const std::vector<Value>& out, const StepTrace& trace) {
    const ir::Node& node = *step.node;
    StepMemo& m = plan_.steps[static_cast<size_t>(step.index)];
    // A kernel that makes its own outputs (views, data-dependent shapes) counts when it
    // made exactly what was inferred (checked below).
    bool shapes = step.subgraphs.empty();
    bool values = shapes && !never_fold(node);
    for (int s : step.in) {
      if (s < 0) continue;
      shapes = shapes && shape_[static_cast<size_t>(s)];
      values = values && value_[static_cast<size_t>(s)];
    }
    // The dtypes of the inputs are fixed with their shapes: so is the kernel they pick.
    if (shapes) m.kernel = trace.kernel;
    // Shape and Size read only their input's shape.
    if (shapes && node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size")) values = true;
    if (trace.inferred)
      for (size_t i = 0; shapes && i < 64; ++i) {
        if (!(trace.values_read >> i & 1)) continue;
        const int s = i < 63 && i < step.in.size() ? step.in[i] : -2;
        shapes = s == -1 || (s >= 0 && value_[static_cast<size_t>(s)]);
      }
    const std::vector<ir::TypeInfo>* types = step.static_shapes ? &step.static_types : trace.inferred ? &trace.types : nullptr;
    uint64_t bytes = 0;
    bool skip = values;
    for (size_t i = 0; i < step.out.size(); ++i) {
      const int s = step.out[i];
      if (s < 0) continue;
      // The kernel made what was inferred: a tensor of exactly that shape.
      const bool as_inferred = types && i < types->size() && out[i].is_tensor() &&
                               (*types)[i].kind == ir::TypeInfo::Kind::kTensor && (*types)[i].has_shape &&
                               ir::shape_known((*types)[i].shape) && (*types)[i].elem == out[i].tensor().dtype() &&
                               ir::shape_dims((*types)[i].shape) == out[i].tensor().dims();
      shapes = shapes && as_inferred;
      if (out[i].is_tensor() && out[i].tensor().dtype() != DType::kString) bytes += out[i].tensor().nbytes();
      else skip = false;
      skip = skip && !output_[static_cast<size_t>(s)];
    }
    values = values && shapes;
    skip = skip && values && bytes <= kMemoStepBytes && memo_bytes_ + bytes <= kMemoBytes;
    for (size_t i = 0; i < step.out.size(); ++i) {
      const int s = step.out[i];
      if (s < 0) continue;
      shape_[static_cast<size_t>(s)] = shapes;
      value_[static_cast<size_t>(s)] = values;
      if (out[i].is_tensor()) seen_[static_cast<size_t>(s)] = {out[i].tensor().dtype(), out[i].tensor().dims()};
    }
    if (shapes && trace.inferred) {
      m.types = trace.types;
      for (const ir::TypeInfo& t : m.types) m.dims.push_back(t.has_shape ? ir::shape_dims(t.shape) : Dims{});
    }
    if (skip) {
      memo_bytes_ += bytes;
      m.values.resize(out.size());
      for (size_t i = 0; i < out.size(); ++i)
        if (step.out.size() > i && step.out[i] >= 0) m.values[i] = Value(out[i].tensor().clone());
      m.skip = true;
    }
  }

 private:
  SignaturePlan& plan_;
  std::vector<char> shape_, value_, output_;  ///< per slot
  std::vector<std::pair<DType, Dims>> seen_;  ///< per slot: a tensor's dtype and dims in this run
  uint64_t memo_bytes_ = 0;
};

}  // namespace

void run_frame(Frame& f, ThreadPool* pool) {
  const CompiledGraph& g = *f.graph;
  const bool main = f.is_main;
  const SignaturePlan* memo = main ? f.run->memo() : nullptr;
  if (memo && memo->steps.size() != g.steps.size()) memo = nullptr;
  SignaturePlan* to_record = main ? f.run->memo_to_record() : nullptr;
  std::unique_ptr<MemoRecorder> recorder;
  if (to_record) recorder = std::make_unique<MemoRecorder>(g, f, *to_record);
  std::vector<const Value*> in;
  std::vector<Value> out;
  StepTrace trace;
  std::vector<NodeTime>* profile = main ? f.run->profile() : nullptr;
  for (const Step& step : g.steps) {
    if (step.folded) continue;
    f.run->check_terminate(*step.node);
    if (main) f.run->begin_step(step.index);
    const StepMemo* sm = memo ? &memo->steps[static_cast<size_t>(step.index)] : nullptr;
    if (sm && sm->skip) {
      for (size_t i = 0; i < step.out.size(); ++i)
        if (step.out[i] >= 0) f.values[static_cast<size_t>(step.out[i])] = sm->values[i];
    } else {
      in.assign(step.in.size(), nullptr);
      for (size_t i = 0; i < step.in.size(); ++i)
        if (step.in[i] >= 0) in[i] = &frame_value(f, step.in[i]);
      if (recorder) trace = StepTrace();
      const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      run_step(g, step, in, out, &f, pool, *f.run, sm, recorder ? &trace : nullptr);
      if (profile)
        profile->push_back({step.node->name, step.node->op_type, step.index,
                            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
      if (recorder) recorder->note(step, out, trace);
      for (size_t i = 0; i < step.out.size(); ++i)
        if (step.out[i] >= 0) f.values[static_cast<size_t>(step.out[i])] = std::move(out[i]);
    }
    for (int s : step.release) f.values[static_cast<size_t>(s)] = Value();
  }
  if (recorder) recorder->finish_concats(g);
  // Releases after the last step are attributed to it, not to "after the run".
  if (main) f.run->begin_step(static_cast<int>(g.steps.size()));
}

}  // namespace onyx::runtime
