#include "runtime/executor.h"

#include <exception>

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

void init_frame(Frame& f, const CompiledGraph& g, const Frame* parent, RunContext* run) {
  f.graph = &g;
  f.run = run;
  f.values.assign(g.slots.size(), Value());
  for (size_t i = 0; i < g.slots.size(); ++i)
    if (g.slots[i].is_const || !g.slots[i].constant.is_none()) f.values[i] = g.slots[i].constant;
  for (const auto& [slot, name] : g.captures) {
    if (!parent) fail_runtime("subgraph value '{}' has no enclosing graph", name);
    auto it = parent->graph->by_name.find(name);
    if (it == parent->graph->by_name.end())
      fail_runtime("subgraph uses outer value '{}' which the enclosing graph lacks", name);
    f.values[slot] = parent->values[it->second];
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
    for (size_t i = 0; i < inputs.size(); ++i) f.values[g.inputs[i]] = std::move(inputs[i]);
    run_frame(f, pool_);
    std::vector<Value> outs;
    outs.reserve(g.outputs.size());
    for (int s : g.outputs) outs.push_back(f.values[s]);
    return outs;
  }

 private:
  const Step& step_;
  const Frame* frame_;
  ThreadPool* pool_;
  RunContext& run_;
  int64_t calls_ = 0;
};

}  // namespace

void run_step(const CompiledGraph& g, const Step& step, const std::vector<const Value*>& in,
              std::vector<Value>& out, const Frame* frame, ThreadPool* pool, RunContext& run) {
  const ir::Node& node = *step.node;
  out.assign(node.outputs.size(), Value());
  try {
    // 1. Output shapes: static, or inferred from the concrete inputs.
    std::vector<ir::TypeInfo> inferred;
    const std::vector<ir::TypeInfo>* out_types = nullptr;
    std::vector<ir::TypeInfo> static_types;
    if (step.static_shapes) {
      static_types.reserve(step.out.size());
      for (int s : step.out) static_types.push_back(s >= 0 ? g.slots[s].type : ir::TypeInfo{});
      out_types = &static_types;
    } else {
      std::vector<ir::TypeInfo> in_types(in.size());
      std::vector<const ir::TypeInfo*> type_ptrs(in.size(), nullptr);
      std::vector<const Tensor*> values(in.size(), nullptr);
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i]) continue;
        const ir::TypeInfo* declared = step.in[i] >= 0 ? &g.slots[step.in[i]].type : nullptr;
        in_types[i] = type_of_value(*in[i], declared);
        type_ptrs[i] = &in_types[i];
        if (in[i]->is_tensor()) values[i] = &in[i]->tensor();
      }
      shape::SymbolGen syms;
      shape::InferContext ictx(node, type_ptrs, values, &syms);
      step.shape(ictx);
      inferred = std::move(ictx.outputs());
      out_types = &inferred;
    }
    // 2. Allocate outputs whose shape is fully known (unless the kernel makes its own).
    const bool own_outputs = step.impl && step.impl->makes_own_outputs();
    for (size_t i = 0; !own_outputs && i < out.size() && i < out_types->size(); ++i) {
      if (node.outputs[i].empty()) continue;
      const ir::TypeInfo& t = (*out_types)[i];
      if (t.kind == ir::TypeInfo::Kind::kTensor && t.has_shape && ir::shape_known(t.shape) &&
          t.elem != DType::kUndefined)
        out[i] = Value(run.allocate(node, i, t.elem, ir::shape_dims(t.shape)));
    }
    // 3. Kernel.
    const kernels::KernelDef* k = step.kernel;
    if (!k) {
      DType dt = DType::kUndefined;
      const kernels::KernelDef* any = kernels::default_registry().find(node.domain, node.op_type, node.opset, DType::kUndefined);
      int ti = any ? any->type_input : 0;
      if (ti >= 0 && static_cast<size_t>(ti) < in.size() && in[ti] && in[ti]->is_tensor())
        dt = in[ti]->tensor().dtype();
      k = kernels::default_registry().find(node.domain, node.op_type, node.opset, dt);
      if (!k)
        fail_unsupported("{}: no kernel for input dtype {}", node.describe(), dtype_name(dt));
    }
    FrameSubgraphRunner sub(step, frame, pool, run);
    kernels::KernelContext kctx(node, in, &out, &sub, pool, &run, !run.limits().reference_kernels);
    kctx.set_output_types(out_types);
    if (step.impl && k == step.kernel)
      step.impl->run(kctx);
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
    if (s >= 0 && g.slots[s].type.kind == ir::TypeInfo::Kind::kOptional) continue;
    fail_runtime("{}: kernel did not produce output {} ('{}')", node.describe(), i, node.outputs[i]);
  }
}

void run_frame(Frame& f, ThreadPool* pool) {
  const CompiledGraph& g = *f.graph;
  std::vector<const Value*> in;
  std::vector<Value> out;
  for (const Step& step : g.steps) {
    if (step.folded) continue;
    f.run->check_terminate(*step.node);
    in.assign(step.in.size(), nullptr);
    for (size_t i = 0; i < step.in.size(); ++i)
      if (step.in[i] >= 0) in[i] = &f.values[step.in[i]];
    run_step(g, step, in, out, &f, pool, *f.run);
    for (size_t i = 0; i < step.out.size(); ++i)
      if (step.out[i] >= 0) f.values[step.out[i]] = std::move(out[i]);
    for (int s : step.release) f.values[s] = Value();
  }
}

}  // namespace onyx::runtime
