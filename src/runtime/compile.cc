// Planning: name resolution, topological order, kernel choice, static shape
// inference with constant folding, and value lifetimes.
#include <algorithm>
#include <queue>
#include <set>

#include "base/cancel.h"
#include "base/error.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace onyx::runtime {

bool never_fold(const ir::Node& n) {
  static const std::set<std::string, std::less<>> kRandom = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Bernoulli", "Multinomial", "Dropout"};
  return !n.domain.empty() || kRandom.count(n.op_type) > 0;
}

namespace {

struct Scope {
  CompiledGraph* cg = nullptr;
  Scope* parent = nullptr;
  std::vector<int>* implicit_uses = nullptr;  ///< slots a nested graph captured
};

int add_slot(CompiledGraph& cg, const std::string& name, ir::TypeInfo type) {
  if (cg.by_name.count(name))
    fail_model("graph '{}': value '{}' is defined more than once (the graph must be in SSA form)",
               cg.graph->name, name);
  int id = static_cast<int>(cg.slots.size());
  cg.slots.push_back(Slot{name, std::move(type), Value(), false});
  cg.by_name[name] = id;
  return id;
}

/// Finds `name` in this scope or, as a capture, in an enclosing one. -1 if undefined.
int resolve(Scope& s, const std::string& name) {
  auto it = s.cg->by_name.find(name);
  if (it != s.cg->by_name.end()) return it->second;
  if (!s.parent) return -1;
  int p = resolve(*s.parent, name);
  if (p < 0) return -1;
  if (s.parent->implicit_uses) s.parent->implicit_uses->push_back(p);
  const Slot& outer = s.parent->cg->slots[p];
  int id = add_slot(*s.cg, name, outer.type);
  s.cg->captures.emplace_back(id, name);
  s.cg->capture_outer.push_back(p);
  return id;
}

/// Refuses a name that a node output defines again (after a graph input, an initializer or
/// another output). Runs before topo_order: a node redefining a consumed input would
/// otherwise link that input's consumers to it and show up as a cycle.
void check_outputs_defined_once(const ir::Graph& g) {
  std::map<std::string, std::string> definer;  // name -> what defines it
  for (const auto& vi : g.inputs) definer.emplace(vi.name, "a graph input");
  for (const auto& [name, t] : g.initializers) definer.emplace(name, "an initializer");
  for (const auto& node : g.nodes)
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const std::string& o = node.outputs[k];
      if (o.empty()) continue;
      std::string what = fmt::format("output {} of {}", k, node.describe());
      auto [it, fresh] = definer.emplace(o, what);
      if (!fresh)
        fail_model("graph '{}': value '{}' is defined more than once (the graph must be in SSA "
                   "form): it is {} and {}",
                   g.name, o, it->second, what);
    }
}

std::vector<size_t> topo_order(const ir::Graph& g) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<size_t>> users(g.nodes.size());
  std::vector<int> pending(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<std::string> deps(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
    for (const auto& a : g.nodes[i].attrs) {
      if (a.g) deps.merge(ir::free_names(*a.g));
      for (const auto& sg : a.graphs) deps.merge(ir::free_names(*sg));
    }
    std::set<size_t> preds;
    for (const auto& d : deps) {
      auto it = producer.find(d);
      if (!d.empty() && it != producer.end()) preds.insert(it->second);
    }
    for (size_t p : preds) {
      if (p == i)
        fail_model("{}: uses its own output (a cycle in the graph)", g.nodes[i].describe());
      users[p].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i] > 0)
        fail_model("graph '{}' has a cycle: {} depends (indirectly) on its own output", g.name,
                   g.nodes[i].describe());
  }
  return order;
}

void check_opset_supported(const ir::Node& node) {
  const auto& reg = kernels::default_registry();
  if (node.opset == 0)
    fail_unsupported("{}: its domain '{}' is not imported by the model (no opset_import entry)",
                     node.describe(), node.domain);
  if (!reg.knows(node.domain, node.op_type))
    fail_unsupported("{}: onyx has no kernel for op '{}'{}", node.describe(), node.op_type,
                     node.domain.empty() ? std::string() : " of domain '" + node.domain + "'");
  int lo = 1000, hi = 0;
  for (const auto& d : reg.all()) {
    if (d.optimized || d.op != node.op_type || d.domain != node.domain) continue;
    if (node.opset >= d.since && node.opset <= d.until) return;
    lo = std::min(lo, d.since);
    hi = std::max(hi, d.until);
  }
  fail_unsupported("{}: onyx supports this op at opset {}..{}, the model imports opset {}",
                   node.describe(), lo, hi, node.opset);
}

std::string dtype_list(const kernels::Registry& reg, const ir::Node& node) {
  std::set<std::string> names;
  for (const auto& d : reg.all())
    if (!d.optimized && d.op == node.op_type && d.domain == node.domain && node.opset >= d.since &&
        node.opset <= d.until)
      for (DType t : d.dtypes) names.insert(std::string(dtype_name(t)));
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// The kernel object of a node: the first optimized kernel that takes it, else the
/// reference function.
std::unique_ptr<kernels::Kernel> make_kernel(const ir::Node& node, const kernels::KernelDef& ref, DType dt,
                                             const std::vector<const ir::TypeInfo*>& in_types,
                                             const std::vector<const ir::TypeInfo*>& out_types,
                                             const std::vector<const Tensor*>& constants,
                                             const PlanOptions& opts) {
  if (!opts.reference_kernels) {
    kernels::KernelInit init{node, in_types, out_types, constants, ref.fn, opts.pool};
    for (const kernels::KernelDef* d : kernels::default_registry().find_optimized(node.domain, node.op_type,
                                                                                  node.opset, dt))
      if (auto k = d->factory(init)) return k;
  }
  return std::make_unique<kernels::FnKernel>(ref.fn);
}

/// Concat in place, what the graph alone tells: the inputs of a Concat over an axis with
/// nothing but 1s before it are contiguous slabs of its output, so their producers can
/// write there directly and the Concat copies nothing (SqueezeNet's fire modules, a YOLO's
/// C3 blocks, a UNet's skip joins). A value qualifies when a step computes it each run with
/// a kernel object that allocates through the executor (not a view-making one), it is not
/// a graph output, and that Concat reads it once. A value several Concats read (DenseNet:
/// every layer concatenates all the features before it) goes to the last of them, the
/// block's widest, whose output then holds the whole block; the Concats before it find
/// their inputs adjacent in that buffer and take a view of them (executor.cc). A Concat's
/// output can itself be a slice of a later Concat's, and an input that is a view of a
/// value only it reads (Reshape and the like) has that value written in place. The shapes
/// (the axis' leading 1s, the offsets) are checked by the first run of each input
/// signature (executor.cc's MemoRecorder), which enables it for that signature's later
/// runs.
void plan_concat_in_place(CompiledGraph& cg) {
  const size_t ns = cg.slots.size();
  std::vector<std::pair<int, int>> producer(ns, {-1, -1});
  for (size_t si = 0; si < cg.steps.size(); ++si) {
    const Step& st = cg.steps[si];
    if (st.folded) continue;
    for (size_t j = 0; j < st.out.size(); ++j)
      if (st.out[j] >= 0) producer[static_cast<size_t>(st.out[j])] = {static_cast<int>(si), static_cast<int>(j)};
  }
  std::vector<bool> graph_output(ns, false);
  for (int s : cg.outputs) graph_output[static_cast<size_t>(s)] = true;
  std::vector<int> uses(ns, 0);
  for (const Step& st : cg.steps)
    for (int s : st.in)
      if (s >= 0) ++uses[static_cast<size_t>(s)];
  // A value `s` that is a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity: a kernel
  // that makes its output from its input's buffer) of a value only that view reads, and
  // whose buffer dies there: the value whose producer writes the slice (detection heads
  // concatenate Reshape(Transpose(...)) of each scale). Else `s` itself.
  auto source = [&](int s) {
    const int vi = producer[static_cast<size_t>(s)].first;
    if (vi < 0) return s;
    const Step& v = cg.steps[static_cast<size_t>(vi)];
    static const std::set<std::string, std::less<>> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                              "Identity"};
    if (!v.node->domain.empty() || !kViews.count(v.node->op_type) || !v.impl || !v.impl->makes_own_outputs() ||
        v.in.empty() || v.in[0] < 0 || v.out.size() != 1)
      return s;
    const int u = v.in[0];
    const auto uu = static_cast<size_t>(u);
    if (uses[uu] != 1 || graph_output[uu] || cg.slots[uu].is_const ||
        std::find(v.release.begin(), v.release.end(), u) == v.release.end())
      return s;
    return u;
  };
  std::vector<int> target(ns, -1);
  for (size_t ci = 0; ci < cg.steps.size(); ++ci) {
    Step& c = cg.steps[ci];
    const ir::Node& node = *c.node;
    if (c.folded || !node.domain.empty() || node.op_type != "Concat" || !node.has_attr("axis") ||
        c.out.size() != 1 || c.out[0] < 0 || c.in.empty() ||
        std::find(c.in.begin(), c.in.end(), -1) != c.in.end())
      continue;
    c.concat_in_place = true;
    c.concat_sources.assign(c.in.size(), Step::ConcatSource{});
    for (size_t i = 0; i < c.in.size(); ++i) {
      const int s = c.in[i];
      if (cg.slots[static_cast<size_t>(s)].is_const || graph_output[static_cast<size_t>(s)] ||
          std::count(c.in.begin(), c.in.end(), s) != 1)
        continue;
      const int src = source(s);
      const auto [pi, pj] = producer[static_cast<size_t>(src)];
      if (pi < 0) continue;
      const Step& p = cg.steps[static_cast<size_t>(pi)];
      if (!p.impl || p.impl->makes_own_outputs() || !p.subgraphs.empty()) continue;
      target[static_cast<size_t>(src)] = static_cast<int>(ci);  // a later Concat replaces it
      c.concat_sources[i] = {src, pi, pj};
    }
  }
  for (size_t s = 0; s < ns; ++s) {
    if (target[s] < 0) continue;
    Step& p = cg.steps[static_cast<size_t>(producer[s].first)];
    p.concat_targets.resize(p.out.size(), -1);
    p.concat_targets[static_cast<size_t>(producer[s].second)] = target[s];
  }
}

/// While a node is folded: its kernels see a deadline at the folding time still left
/// (PlanOptions::fold_max_seconds, spent by all the folds of the session together), and
/// the time taken is subtracted when it ends. Throws kCancelled at once when none is left.
class FoldClock {
 public:
  FoldClock(const PlanOptions& opts, double& left) : left_(left), scope_(opts.fold_max_seconds > 0 ? &token_ : nullptr) {
    token_.what = "constant folding took longer than PlanOptions::fold_max_seconds";
    token_.has_deadline = true;
    token_.deadline = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(std::max(0.0, left)));
    if (opts.fold_max_seconds > 0) poll_cancel();
  }
  ~FoldClock() { left_ -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  FoldClock(const FoldClock&) = delete;
  FoldClock& operator=(const FoldClock&) = delete;

 private:
  double& left_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  CancelToken token_;
  CancelScope scope_;
};

std::unique_ptr<CompiledGraph> compile(const ir::Graph& g, Scope* parent, const PlanOptions& opts,
                                       shape::SymbolGen& syms, uint64_t& folded_bytes,
                                       double& fold_seconds_left) {
  auto cg = std::make_unique<CompiledGraph>();
  cg->graph = &g;
  Scope scope{cg.get(), parent, nullptr};

  std::map<std::string, const ir::TypeInfo*> declared;
  for (const auto& v : g.value_info) declared[v.name] = &v.type;
  for (const auto& v : g.outputs) declared[v.name] = &v.type;

  for (const auto& vi : g.inputs) {
    if (vi.name.empty()) fail_model("graph '{}' has an input without a name", g.name);
    int id = add_slot(*cg, vi.name, vi.type);
    if (const Tensor* t = g.initializer(vi.name)) {
      cg->slots[id].constant = Value(*t);
      if (vi.type.kind == ir::TypeInfo::Kind::kUnknown)
        cg->slots[id].type = ir::TypeInfo::tensor(t->dtype(), ir::shape_of(t->dims()));
    }
    cg->inputs.push_back(id);
  }
  for (const auto& [name, t] : g.initializers) {
    if (cg->by_name.count(name)) continue;  // an input with a default
    int id = add_slot(*cg, name, ir::TypeInfo::tensor(t.dtype(), ir::shape_of(t.dims())));
    cg->slots[id].constant = Value(t);
    cg->slots[id].is_const = true;
  }

  check_outputs_defined_once(g);
  const auto& reg = kernels::default_registry();
  const auto& sreg = shape::shape_registry();
  for (size_t ni : topo_order(g)) {
    const ir::Node& node = g.nodes[ni];
    Step step;
    step.node = &node;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      if (name.empty()) {
        step.in.push_back(-1);
        continue;
      }
      int s = resolve(scope, name);
      if (s < 0)
        fail_model("{}: input {} '{}' is not a graph input, an initializer, or the output of "
                   "another node",
                   node.describe(), i, name);
      step.in.push_back(s);
    }
    check_opset_supported(node);
    step.shape = sreg.find(node.domain, node.op_type);
    if (!step.shape)
      fail_unsupported("{}: onyx has no shape function for this op", node.describe());

    std::vector<int> implicit;
    scope.implicit_uses = &implicit;
    for (const auto& a : node.attrs) {
      if (a.g) step.subgraphs[a.name] = compile(*a.g, &scope, opts, syms, folded_bytes, fold_seconds_left);
      if (!a.graphs.empty())
        fail_unsupported("{}: attribute '{}' holds a list of graphs, which no op of this "
                         "opset uses", node.describe(), a.name);
    }
    scope.implicit_uses = nullptr;

    for (const auto& o : node.outputs)
      step.out.push_back(o.empty() ? -1 : add_slot(*cg, o, ir::TypeInfo{}));

    // Static inference.
    std::vector<const ir::TypeInfo*> types;
    std::vector<const Tensor*> values;
    bool all_known = true, all_const = true;
    for (int s : step.in) {
      if (s < 0) {
        types.push_back(nullptr);
        values.push_back(nullptr);
        continue;
      }
      const Slot& sl = cg->slots[s];
      types.push_back(&sl.type);
      values.push_back(sl.is_const && sl.constant.is_tensor() ? &sl.constant.tensor() : nullptr);
      if (sl.type.kind == ir::TypeInfo::Kind::kUnknown) all_known = false;
      if (!sl.is_const) all_const = false;
    }
    std::vector<ir::TypeInfo> out_types(node.outputs.size());
    if (all_known) {
      shape::InferContext ictx(node, types, values, &syms);
      try {
        step.shape(ictx);
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.find(node.op_type) == std::string::npos) msg = node.describe() + ": " + msg;
        throw Error(e.code(), msg);
      }
      out_types = std::move(ictx.outputs());
    }
    step.static_shapes = !step.subgraphs.size();
    for (size_t i = 0; i < step.out.size(); ++i) {
      if (step.out[i] < 0) continue;
      ir::TypeInfo& t = out_types[i];
      auto d = declared.find(node.outputs[i]);
      if (t.kind == ir::TypeInfo::Kind::kUnknown && d != declared.end()) t = *d->second;
      if (!(t.kind == ir::TypeInfo::Kind::kTensor && t.has_shape && ir::shape_known(t.shape) &&
            t.elem != DType::kUndefined))
        step.static_shapes = false;
      cg->slots[step.out[i]].type = t;
    }
    if (step.static_shapes)
      for (int s : step.out) {
        step.static_types.push_back(s >= 0 ? cg->slots[s].type : ir::TypeInfo{});
        step.static_dims.push_back(s >= 0 ? ir::shape_dims(cg->slots[s].type.shape) : Dims{});
      }

    // Kernel by the dtype of its type-defining input, when known now.
    const kernels::KernelDef* any = reg.find(node.domain, node.op_type, node.opset, DType::kUndefined);
    int ti = any ? any->type_input : -1;
    if (ti >= 0 && static_cast<size_t>(ti) < types.size() && types[ti] &&
        types[ti]->kind == ir::TypeInfo::Kind::kTensor && types[ti]->elem != DType::kUndefined) {
      step.kernel = reg.find(node.domain, node.op_type, node.opset, types[ti]->elem);
      if (!step.kernel)
        fail_unsupported("{}: no kernel for input {} of dtype {} (supported: {})", node.describe(),
                         ti, dtype_name(types[ti]->elem), dtype_list(reg, node));
    } else if (ti < 0) {
      step.kernel = any;
    }

    const bool fold_budget = opts.fold_total_bytes == 0 || folded_bytes < opts.fold_total_bytes;
    if (opts.fold_constants && all_const && !never_fold(node) && step.subgraphs.empty() &&
        step.kernel && fold_budget) {
      std::vector<const Value*> in;
      for (int s : step.in) in.push_back(s >= 0 ? &cg->slots[s].constant : nullptr);
      std::vector<Value> out;
      SessionOptions fold_limits;
      fold_limits.max_tensor_bytes = opts.fold_max_bytes;
      fold_limits.max_run_bytes = opts.fold_total_bytes == 0 ? 0 : opts.fold_total_bytes - folded_bytes;
      fold_limits.reference_kernels = opts.reference_kernels;
      RunContext fold_run(fold_limits, nullptr);
      step.folded = true;
      try {
        // Folding shares one deadline (PlanOptions::fold_max_seconds): a node whose
        // computation passes it is stopped inside its kernel and left to the runs, where
        // RunOptions::terminate can end it. A hostile model cannot make creation hang.
        FoldClock clock(opts, fold_seconds_left);
        run_step(*cg, step, in, out, nullptr, nullptr, fold_run);
        folded_bytes += fold_run.live_bytes();  // what the outputs hold, kept by the session
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kLimit && e.code() != ErrorCode::kCancelled) throw;
        step.folded = false;  // too big or too long to compute now: every run computes it
      }
      for (size_t i = 0; step.folded && i < step.out.size(); ++i) {
        if (step.out[i] < 0) continue;
        Slot& sl = cg->slots[step.out[i]];
        sl.constant = out[i];
        sl.is_const = true;
        if (out[i].is_tensor())
          sl.type = ir::TypeInfo::tensor(out[i].tensor().dtype(), ir::shape_of(out[i].tensor().dims()));
      }
    }
    if (step.kernel && !step.folded) {
      std::vector<const ir::TypeInfo*> out_type_ptrs;
      for (int s : step.out) out_type_ptrs.push_back(s >= 0 ? &cg->slots[s].type : nullptr);
      DType dt = ti >= 0 && static_cast<size_t>(ti) < types.size() && types[ti] ? types[ti]->elem
                                                                              : DType::kUndefined;
      step.impl = make_kernel(node, *step.kernel, dt, types, out_type_ptrs, values, opts);
    }
    for (int s : implicit) step.release.push_back(-1 - s);  // marker: captured slot, fixed below
    step.index = static_cast<int>(cg->steps.size());
    cg->steps.push_back(std::move(step));
  }

  for (const auto& o : g.outputs) {
    int s = resolve(scope, o.name);
    if (s < 0) fail_model("graph '{}': output '{}' is not produced by any node", g.name, o.name);
    cg->outputs.push_back(s);
  }

  // Lifetimes: release each non-constant, non-output slot after its last use.
  std::vector<int> last(cg->slots.size(), -1);
  for (size_t si = 0; si < cg->steps.size(); ++si) {
    Step& st = cg->steps[si];
    for (int s : st.in)
      if (s >= 0) last[s] = static_cast<int>(si);
    for (int m : st.release) last[-1 - m] = static_cast<int>(si);  // captured by a subgraph
    st.release.clear();
    for (int s : st.out)
      if (s >= 0 && last[s] < static_cast<int>(si)) last[s] = static_cast<int>(si);
  }
  std::vector<bool> keep(cg->slots.size(), false);
  for (int s : cg->outputs) keep[s] = true;
  for (size_t s = 0; s < cg->slots.size(); ++s)
    if (cg->slots[s].is_const) keep[s] = true;
  for (size_t s = 0; s < cg->slots.size(); ++s)
    if (!keep[s] && last[s] >= 0) cg->steps[last[s]].release.push_back(static_cast<int>(s));
  // (The main graph's steps only: they alone allocate from the run's arena.)
  if (!parent && !opts.reference_kernels) plan_concat_in_place(*cg);
  return cg;
}

}  // namespace

std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& g, const PlanOptions& opts) {
  shape::SymbolGen syms;
  uint64_t folded_bytes = 0;
  double fold_seconds_left = opts.fold_max_seconds;
  return compile(g, nullptr, opts, syms, folded_bytes, fold_seconds_left);
}

}  // namespace onyx::runtime
