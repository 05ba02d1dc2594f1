#include "onyx/session.h"

#include <algorithm>
#include <array>
#include <set>
#include <unordered_set>

#include "base/cancel.h"
#include "base/error.h"
#include "format/loader.h"
#include "opt/optimize.h"
#include "runtime/executor.h"
#include "runtime/plan.h"
#include "runtime/session_internal.h"

namespace onyx {

/// Newest version of the default domain whose semantics onyx knows.
constexpr int64_t kMaxDefaultOpset = 27;  // ONNX 1.22

struct Session::Impl {
  std::shared_ptr<ir::Model> model;
  std::shared_ptr<ir::Graph> graph;  // main graph with functions inlined
  std::unique_ptr<runtime::CompiledGraph> plan;
  std::vector<IoInfo> inputs, outputs;
  ModelMetadata metadata;
  std::unique_ptr<ThreadPool> pool;
  SessionOptions options;
  /// Buffers the session holds (initializers, folded constants, in every subgraph): an
  /// output found in one of them is copied before it is handed out.
  std::unordered_set<const void*> own_storage;
  /// Arena plans per input signature (src/runtime/memory.h).
  std::unique_ptr<runtime::MemoryPlanner> planner = std::make_unique<runtime::MemoryPlanner>();
};

namespace {

std::string onnx_type_name(const ir::TypeInfo& t) {
  auto inner = [&] { return t.inner ? onnx_type_name(*t.inner) : std::string("unknown"); };
  switch (t.kind) {
    case ir::TypeInfo::Kind::kTensor: return "tensor(" + std::string(dtype_name(t.elem)) + ")";
    case ir::TypeInfo::Kind::kSparseTensor: return "sparse_tensor(" + std::string(dtype_name(t.elem)) + ")";
    case ir::TypeInfo::Kind::kSequence: return "seq(" + inner() + ")";
    case ir::TypeInfo::Kind::kOptional: return "optional(" + inner() + ")";
    case ir::TypeInfo::Kind::kMap: return "map(" + std::string(dtype_name(t.key)) + "," + inner() + ")";
    case ir::TypeInfo::Kind::kUnknown: break;
  }
  return "unknown";
}

IoInfo io_info(const ir::ValueInfo& v, bool has_default) {
  IoInfo io;
  io.name = v.name;
  io.type = v.type.str();
  io.onnx_type = onnx_type_name(v.type);
  io.has_default = has_default;
  const ir::TypeInfo* t = &v.type;
  io.is_tensor = t->kind == ir::TypeInfo::Kind::kTensor;
  while ((t->kind == ir::TypeInfo::Kind::kSequence || t->kind == ir::TypeInfo::Kind::kOptional) && t->inner)
    t = t->inner.get();
  io.dtype = t->elem;
  io.has_shape = v.type.is_tensor() && v.type.has_shape;
  if (io.has_shape)
    for (const auto& d : v.type.shape) {
      io.dims.push_back(d.value);
      io.dim_names.push_back(d.param);
    }
  return io;
}

/// "NHWC given where NCHW is expected" (or the reverse) when the shapes say so.
std::string layout_hint(const ir::Shape& want, const Dims& got) {
  if (want.size() != 4 || got.size() != 4) return "";
  auto fits = [&](const std::array<int, 4>& perm) {
    for (int i = 0; i < 4; ++i) {
      const ir::Dim& w = want[i];
      if (w.known() && w.value != got[perm[i]]) return false;
    }
    return true;
  };
  // want NCHW, got NHWC: want[1] (C) = got[3], want[2] = got[1], want[3] = got[2]
  if (want[1].known() && fits({0, 3, 1, 2}) && !fits({0, 1, 2, 3}))
    return " The given tensor looks like NHWC (channels last) while the model expects NCHW "
           "(channels first): transpose it with axes (0, 3, 1, 2).";
  if (want[3].known() && fits({0, 2, 3, 1}) && !fits({0, 1, 2, 3}))
    return " The given tensor looks like NCHW (channels first) while the model expects NHWC "
           "(channels last): transpose it with axes (0, 2, 3, 1).";
  return "";
}

void check_feed(const ir::ValueInfo& vi, const Value& v) {
  const ir::TypeInfo& want = vi.type;
  if (want.kind == ir::TypeInfo::Kind::kTensor) {
    if (!v.is_tensor())
      fail_arg("input '{}': expected a tensor {}, got a {}", vi.name, want.str(),
               v.is_sequence() ? "sequence" : "missing value");
    const Tensor& t = v.tensor();
    auto got = [&] { return std::string(dtype_name(t.dtype())) + dims_str(t.dims()); };  // for messages only
    if (want.elem != DType::kUndefined && t.dtype() != want.elem)
      fail_arg("input '{}': expected dtype {}, got {} (expected {}, given {})", vi.name,
               dtype_name(want.elem), dtype_name(t.dtype()), want.str(), got());
    if (!want.has_shape) return;
    if (want.shape.size() != t.rank())
      fail_arg("input '{}': expected rank {}, got rank {} (expected {}, given {}).{}", vi.name,
               want.shape.size(), t.rank(), want.str(), got(), layout_hint(want.shape, t.dims()));
    for (size_t i = 0; i < t.rank(); ++i)
      if (want.shape[i].known() && want.shape[i].value != t.dim(i))
        fail_arg("input '{}': dim {} must be {}, got {} (expected {}, given {}).{}", vi.name, i,
                 want.shape[i].value, t.dim(i), want.str(), got(), layout_hint(want.shape, t.dims()));
  } else if (want.kind == ir::TypeInfo::Kind::kSequence) {
    if (!v.is_sequence()) fail_arg("input '{}': expected {}, got a non-sequence value", vi.name, want.str());
  }
}

void collect_storage(const runtime::CompiledGraph& g, std::unordered_set<const void*>& out) {
  auto add = [&](const Value& v) {
    if (v.is_tensor() && v.tensor().storage()) out.insert(v.tensor().storage());
    if (v.is_sequence())
      for (const Tensor& t : v.seq())
        if (t.storage()) out.insert(t.storage());
  };
  for (const auto& slot : g.slots) add(slot.constant);
  for (const auto& step : g.steps)
    for (const auto& [name, sub] : step.subgraphs) collect_storage(*sub, out);
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::open(const std::string& path, const SessionOptions& opts) {
  auto model = format::load_model(path);
  try {
    return SessionAccess::create(model, opts);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

std::unique_ptr<Session> Session::open_bytes(const void* data, size_t size, const SessionOptions& opts,
                                             const std::string& base_dir) {
  return SessionAccess::create(format::load_model_from_bytes(data, size, base_dir), opts);
}

const ir::Model& SessionAccess::model(const Session& s) { return *s.impl_->model; }

std::unique_ptr<Session> SessionAccess::create(std::shared_ptr<ir::Model> model, const SessionOptions& opts) {
  using Impl = Session::Impl;
  auto impl = std::make_unique<Impl>();
  impl->model = model;
  ModelMetadata& md = impl->metadata;
  md.ir_version = model->ir_version;
  md.producer_name = model->producer_name;
  md.producer_version = model->producer_version;
  md.domain = model->domain;
  md.model_version = model->model_version;
  md.doc_string = model->doc_string;
  if (model->graph) md.graph_name = model->graph->name;
  md.opset_imports = model->opset_imports;
  md.metadata_props = model->metadata;
  for (const auto& [domain, version] : model->opset_imports)
    if (domain.empty() && version > kMaxDefaultOpset)
      fail_unsupported("the model imports opset {} of the default domain; onyx knows opsets 1..{}",
                       version, kMaxDefaultOpset);
  impl->graph = opt::optimize_for_session(*model, runtime::inline_functions(*model), opts);
  impl->pool = std::make_unique<ThreadPool>(opts.threads);
  runtime::PlanOptions po;
  po.reference_kernels = opts.reference_kernels;
  po.pool = impl->pool.get();
  // Folded constants may take 256 MiB, or four times the weights where they are larger
  // (dequantized int8 weights are four times their size).
  uint64_t weights = model->file_bytes;
  for (const auto& f : model->external_files) weights += f.bytes_used;
  po.fold_total_bytes = std::max(po.fold_total_bytes, weights * 4);
  impl->plan = runtime::compile_graph(*impl->graph, po);
  std::set<std::string> inits;
  for (const auto& [n, t] : impl->graph->initializers) inits.insert(n);
  for (const auto& v : impl->graph->inputs) impl->inputs.push_back(io_info(v, inits.count(v.name) > 0));
  for (size_t i = 0; i < impl->graph->outputs.size(); ++i) {
    ir::ValueInfo v = impl->graph->outputs[i];
    if (v.type.kind == ir::TypeInfo::Kind::kUnknown) v.type = impl->plan->slots[impl->plan->outputs[i]].type;
    impl->outputs.push_back(io_info(v, false));
  }
  impl->options = opts;
  collect_storage(*impl->plan, impl->own_storage);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const ModelMetadata& Session::metadata() const { return impl_->metadata; }
const SessionOptions& Session::options() const { return impl_->options; }

size_t Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < impl_->outputs.size(); ++i)
    if (impl_->outputs[i].name == name) return i;
  std::string names;
  for (const auto& o : impl_->outputs) names += (names.empty() ? "" : ", ") + o.name;
  fail_arg("unknown output '{}'; the model's outputs are: {}", name, names);
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& feeds,
                                const std::vector<std::string>& output_names, const RunOptions& options) {
  if (output_names.empty()) return run(feeds, options);
  std::vector<size_t> pick;
  pick.reserve(output_names.size());
  for (const auto& n : output_names) pick.push_back(output_index(n));  // fails before running
  std::vector<Value> all = run(feeds, options);
  std::vector<Value> out;
  out.reserve(pick.size());
  std::vector<bool> taken(all.size(), false);
  for (size_t i : pick) {
    // A repeated name gets its own copy: returned values never share memory.
    if (taken[i]) {
      const Value& v = all[i];
      if (v.is_tensor()) {
        out.emplace_back(v.tensor().clone());
      } else if (v.is_sequence()) {
        std::vector<Tensor> items;
        for (const Tensor& t : v.seq()) items.push_back(t.clone());
        out.push_back(Value::sequence(v.seq_dtype(), std::move(items)));
      } else {
        out.push_back(v);
      }
    } else {
      out.push_back(all[i]);
      taken[i] = true;
    }
  }
  return out;
}

std::vector<Value> Session::run(const std::vector<std::pair<std::string, Value>>& feeds,
                                const RunOptions& options) {
  const runtime::CompiledGraph& g = *impl_->plan;
  std::vector<const Value*> fed(g.inputs.size(), nullptr);
  for (const auto& [name, value] : feeds) {
    size_t k = 0;
    while (k < g.inputs.size() && impl_->graph->inputs[k].name != name) ++k;
    if (k == g.inputs.size()) {
      std::string names;
      for (const auto& v : impl_->graph->inputs) names += (names.empty() ? "" : ", ") + v.name;
      fail_arg("unknown input '{}'; the model's inputs are: {}", name, names);
    }
    if (fed[k]) fail_arg("input '{}' is given twice", name);
    check_feed(impl_->graph->inputs[k], value);
    fed[k] = &value;
  }
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (!fed[k] && !impl_->inputs[k].has_default &&
        impl_->graph->inputs[k].type.kind != ir::TypeInfo::Kind::kOptional)
      fail_arg("missing input '{}' ({})", impl_->graph->inputs[k].name,
               impl_->graph->inputs[k].type.str());
  // The input signature picks the arena plan: dtype, rank and dims of each tensor input.
  runtime::Signature sig;
  for (const Value* v : fed) {
    if (!v || !v->is_tensor()) {
      sig.push_back(v ? -2 : -1);
      continue;
    }
    sig.push_back(static_cast<int64_t>(v->tensor().dtype()));
    sig.push_back(static_cast<int64_t>(v->tensor().rank()));
    sig.insert(sig.end(), v->tensor().dims().begin(), v->tensor().dims().end());
  }
  runtime::RunContext run(impl_->options, &options, impl_->planner.get(), std::move(sig));
  // The kernels poll the terminate flag inside long nodes too (base/cancel.h); the pool
  // carries it into its workers.
  CancelToken cancel;
  cancel.flag = &options.terminate;
  cancel.what = "run terminated (RunOptions::terminate)";
  CancelScope cancel_scope(&cancel);
  std::vector<Value> result;
  {
    runtime::Frame f;
    runtime::init_frame(f, g, nullptr, &run);
    f.is_main = true;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (fed[k]) f.values[static_cast<size_t>(g.inputs[k])] = *fed[k];
    runtime::run_frame(f, impl_->pool.get());
    for (int s : g.outputs) result.push_back(runtime::frame_value(f, s));
  }
  // Outputs belong to the caller: copy any that shares memory with the session (its
  // constants, the values memoized for this signature), a feed or an output before it.
  // Few feeds and outputs: plain vectors, searched linearly.
  std::vector<const void*> feed_storage;
  for (const auto& [name, value] : feeds) {
    if (value.is_tensor() && value.tensor().storage()) feed_storage.push_back(value.tensor().storage());
    if (value.is_sequence())
      for (const Tensor& t : value.seq())
        if (t.storage()) feed_storage.push_back(t.storage());
  }
  auto has = [](const std::vector<const void*>& v, const void* s) { return std::find(v.begin(), v.end(), s) != v.end(); };
  auto foreign_or_handed = [&](const void* s, const std::vector<const void*>& handed) {
    return s && (impl_->own_storage.count(s) || has(feed_storage, s) || has(handed, s) || run.memo_holds(s));
  };
  std::vector<const void*> handed;
  std::vector<Value> out;
  out.reserve(g.outputs.size());
  for (Value& v : result) {
    if (v.is_tensor()) {
      const Tensor& t = v.tensor();
      if (foreign_or_handed(t.storage(), handed)) {
        out.emplace_back(t.clone());
      } else {
        out.push_back(v);
      }
      if (out.back().tensor().storage()) handed.push_back(out.back().tensor().storage());
    } else if (v.is_sequence()) {
      std::vector<Tensor> items;
      items.reserve(v.seq().size());
      for (const Tensor& t : v.seq()) {
        items.push_back(foreign_or_handed(t.storage(), handed) ? t.clone() : t);
        if (items.back().storage()) handed.push_back(items.back().storage());
      }
      out.push_back(Value::sequence(v.seq_dtype(), std::move(items)));
    } else {
      out.push_back(v);
    }
  }
  run.finish();
  return out;
}

}  // namespace onyx
