#include "opt/pass.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "base/error.h"
#include "base/half.h"
#include "check/schema.h"
#include "kernels/reference/fused.h"
#include "shape/infer.h"

namespace onyx::opt {

PassContext::PassContext(ir::Graph& g, const OptimizeOptions& opts,
                         std::unordered_map<std::string, ir::TypeInfo>& types)
    : g_(g), opts_(opts), removed_(g.nodes.size(), false), types_(types) {
  for (const auto& v : g.inputs) {
    graph_inputs_.insert(v.name);
    names_.insert(v.name);
  }
  for (const auto& v : g.outputs) {
    outputs_.insert(v.name);
    names_.insert(v.name);
  }
  for (const auto& v : g.value_info) names_.insert(v.name);
  for (size_t i = 0; i < g.initializers.size(); ++i) {
    inits_[g.initializers[i].first] = i;
    names_.insert(g.initializers[i].first);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    index_node(i);
    for (const auto& a : g.nodes[i].attrs) {
      if (a.g) captured_.merge(ir::free_names(*a.g));
      for (const auto& sg : a.graphs) captured_.merge(ir::free_names(*sg));
    }
  }
}

void PassContext::index_node(size_t i) {
  const ir::Node& n = g_.nodes[i];
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) continue;
    uses_[n.inputs[k]].push_back({i, k});
    names_.insert(n.inputs[k]);
  }
  for (const auto& o : n.outputs) {
    if (o.empty()) continue;
    producer_.emplace(o, static_cast<int>(i));
    names_.insert(o);
  }
}

void PassContext::unindex_input(size_t n, size_t slot) {
  const std::string& v = g_.nodes[n].inputs[slot];
  if (v.empty()) return;
  auto it = uses_.find(v);
  if (it == uses_.end()) return;
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const Use& u) { return u.node == n && u.slot == slot; }),
             list.end());
}

int PassContext::producer(const std::string& v) const {
  auto it = producer_.find(v);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<Use>& PassContext::uses(const std::string& v) const {
  static const std::vector<Use> kNone;
  auto it = uses_.find(v);
  return it == uses_.end() ? kNone : it->second;
}

bool PassContext::only_used_by(const std::string& v, size_t n) const {
  if (pinned(v)) return false;
  const auto& u = uses(v);
  if (u.empty()) return false;
  for (const Use& x : u)
    if (x.node != n) return false;
  return true;
}

const Tensor* PassContext::constant(const std::string& v) const {
  if (v.empty() || graph_inputs_.count(v)) return nullptr;
  auto it = inits_.find(v);
  return it == inits_.end() ? nullptr : &g_.initializers[it->second].second;
}

std::optional<double> PassContext::scalar(const std::string& v) const {
  const Tensor* t = constant(v);
  if (!t || t->numel() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DType::kFloat:
      return *t->data<float>();
    case DType::kDouble:
      return *t->data<double>();
    case DType::kFloat16:
      return static_cast<float>(*t->data<Float16>());
    case DType::kBFloat16:
      return static_cast<float>(*t->data<BFloat16>());
    case DType::kInt64:
      return static_cast<double>(*t->data<int64_t>());
    case DType::kInt32:
      return *t->data<int32_t>();
    case DType::kInt16:
      return *t->data<int16_t>();
    case DType::kInt8:
      return *t->data<int8_t>();
    case DType::kUint8:
      return *t->data<uint8_t>();
    default:
      return std::nullopt;
  }
}

const ir::TypeInfo* PassContext::type(const std::string& v) const {
  auto it = types_.find(v);
  return it == types_.end() ? nullptr : &it->second;
}

const ir::Shape* PassContext::shape(const std::string& v) const {
  const ir::TypeInfo* t = type(v);
  return t && t->is_tensor() && t->has_shape ? &t->shape : nullptr;
}

DType PassContext::dtype(const std::string& v) const {
  const ir::TypeInfo* t = type(v);
  return t && t->is_tensor() ? t->elem : DType::kUndefined;
}

int64_t PassContext::rank(const std::string& v) const {
  const ir::Shape* s = shape(v);
  return s ? static_cast<int64_t>(s->size()) : -1;
}

void PassContext::set_input(size_t n, size_t slot, const std::string& v) {
  edited_ = true;
  ir::Node& node = g_.nodes[n];
  if (slot >= node.inputs.size()) node.inputs.resize(slot + 1);
  unindex_input(n, slot);
  node.inputs[slot] = v;
  if (!v.empty()) {
    uses_[v].push_back({n, slot});
    names_.insert(v);
  }
}

void PassContext::replace_uses(const std::string& from, const std::string& to) {
  edited_ = true;
  if (pinned(from))
    fail_runtime(
        "graph optimizer: value '{}' is a graph output or read by a subgraph and cannot be "
        "replaced",
        from);
  std::vector<Use> list = uses(from);
  for (const Use& u : list) set_input(u.node, u.slot, to);
}

void PassContext::remove(size_t n) {
  edited_ = true;
  if (removed_[n]) return;
  ir::Node& node = g_.nodes[n];
  for (size_t k = 0; k < node.inputs.size(); ++k) unindex_input(n, k);
  for (const auto& o : node.outputs) {
    auto it = producer_.find(o);
    if (it != producer_.end() && it->second == static_cast<int>(n)) producer_.erase(it);
  }
  removed_[n] = true;
}

size_t PassContext::add(ir::Node n) {
  edited_ = true;
  g_.nodes.push_back(std::move(n));
  removed_.push_back(false);
  const size_t i = g_.nodes.size() - 1;
  index_node(i);
  count_created(g_.nodes[i]);
  return i;
}

void PassContext::replace(size_t i, ir::Node n) {
  edited_ = true;
  ir::Node& old = g_.nodes[i];
  for (size_t k = 0; k < old.inputs.size(); ++k) unindex_input(i, k);
  for (const auto& o : old.outputs) {
    auto it = producer_.find(o);
    if (it != producer_.end() && it->second == static_cast<int>(i)) producer_.erase(it);
  }
  g_.nodes[i] = std::move(n);
  index_node(i);
  count_created(g_.nodes[i]);
}

void PassContext::set_output(size_t n, size_t k, const std::string& v) {
  edited_ = true;
  ir::Node& node = g_.nodes[n];
  auto it = producer_.find(node.outputs[k]);
  if (it != producer_.end() && it->second == static_cast<int>(n)) producer_.erase(it);
  node.outputs[k] = v;
  if (!v.empty()) {
    producer_[v] = static_cast<int>(n);
    names_.insert(v);
  }
}

std::string PassContext::add_constant(const std::string& hint, Tensor t) {
  std::string name = fresh_name(hint);
  set_constant(name, std::move(t));
  return name;
}

void PassContext::set_constant(const std::string& v, Tensor t) {
  edited_ = true;
  types_[v] = ir::TypeInfo::tensor(t.dtype(), ir::shape_of(t.dims()));
  names_.insert(v);
  auto it = inits_.find(v);
  if (it != inits_.end()) {
    g_.initializers[it->second].second = std::move(t);
    return;
  }
  inits_[v] = g_.initializers.size();
  g_.initializers.emplace_back(v, std::move(t));
}

std::string PassContext::fresh_name(const std::string& hint) {
  std::string base = hint.empty() ? std::string("opt") : hint;
  std::string name;
  do {
    name = base + "__opt" + std::to_string(fresh_++);
  } while (names_.count(name));
  names_.insert(name);
  return name;
}

size_t PassContext::drop_unused_initializers() {
  auto unused = [&](const std::string& name) {
    return !graph_inputs_.count(name) && !pinned(name) && uses(name).empty();
  };
  size_t dropped = 0;
  for (const auto& [name, t] : g_.initializers) dropped += unused(name);
  if (!dropped) return 0;
  edited_ = true;
  std::vector<std::pair<std::string, Tensor>> kept;
  for (auto& [name, t] : g_.initializers) {
    if (unused(name)) {
      types_.erase(name);
      continue;
    }
    kept.emplace_back(std::move(name), std::move(t));
  }
  g_.initializers = std::move(kept);
  inits_.clear();
  for (size_t i = 0; i < g_.initializers.size(); ++i) inits_[g_.initializers[i].first] = i;
  return dropped;
}

void PassContext::count_created(const ir::Node& n) {
  ++created_[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
}

std::map<std::string, int64_t> PassContext::commit() {
  std::vector<ir::Node> kept;
  kept.reserve(g_.nodes.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    if (!removed_[i]) kept.push_back(std::move(g_.nodes[i]));
  g_.nodes = std::move(kept);
  removed_.assign(g_.nodes.size(), false);
  if (!sort_topologically(g_))
    fail_runtime("graph optimizer: a pass made a cycle in graph '{}'", g_.name);
  std::set<std::string> defined(graph_inputs_.begin(), graph_inputs_.end());
  for (const auto& [n, t] : g_.initializers) defined.insert(n);
  for (const auto& node : g_.nodes)
    for (const auto& o : node.outputs)
      if (!o.empty()) defined.insert(o);
  auto& vi = g_.value_info;
  vi.erase(std::remove_if(vi.begin(), vi.end(),
                          [&](const ir::ValueInfo& v) { return !defined.count(v.name); }),
           vi.end());
  for (auto it = types_.begin(); it != types_.end();)
    it = defined.count(it->first) ? std::next(it) : types_.erase(it);
  return created_;
}

std::unordered_map<std::string, ir::TypeInfo> infer_types(const ir::Graph& g) {
  std::unordered_map<std::string, ir::TypeInfo> types;
  std::set<std::string> inputs;
  for (const auto& v : g.inputs) {
    inputs.insert(v.name);
    ir::TypeInfo t = v.type;
    if (t.kind == ir::TypeInfo::Kind::kUnknown)
      if (const Tensor* init = g.initializer(v.name))
        t = ir::TypeInfo::tensor(init->dtype(), ir::shape_of(init->dims()));
    types[v.name] = t;
  }
  std::unordered_map<std::string, const Tensor*> values;
  for (const auto& [name, t] : g.initializers) {
    if (inputs.count(name)) continue;
    types[name] = ir::TypeInfo::tensor(t.dtype(), ir::shape_of(t.dims()));
    values[name] = &t;
  }
  const shape::ShapeRegistry& reg = shape::shape_registry();
  shape::SymbolGen syms;
  for (const ir::Node& node : g.nodes) {
    std::vector<const ir::TypeInfo*> in_types;
    std::vector<const Tensor*> in_values;
    bool known = true;
    for (const auto& i : node.inputs) {
      if (i.empty()) {
        in_types.push_back(nullptr);
        in_values.push_back(nullptr);
        continue;
      }
      auto it = types.find(i);
      if (it == types.end() || it->second.kind == ir::TypeInfo::Kind::kUnknown) {
        known = false;
        break;
      }
      in_types.push_back(&it->second);
      auto vt = values.find(i);
      in_values.push_back(vt == values.end() ? nullptr : vt->second);
    }
    std::vector<ir::TypeInfo> outs(node.outputs.size());
    shape::ShapeFn fn = reg.find(node.domain, node.op_type);
    if (known && fn && node.opset > 0) {
      try {
        shape::InferContext ictx(node, in_types, in_values, &syms);
        fn(ictx);
        outs = std::move(ictx.outputs());
      } catch (const Error&) {
        outs.assign(node.outputs.size(), ir::TypeInfo{});
      }
    }
    for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
      const std::string& o = node.outputs[k];
      if (o.empty()) continue;
      ir::TypeInfo t = std::move(outs[k]);
      if (t.kind != ir::TypeInfo::Kind::kUnknown) types[o] = std::move(t);
    }
  }
  return types;
}

bool sort_topologically(ir::Graph& g) {
  const size_t n = g.nodes.size();
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> pending(n, 0);
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    std::set<std::string> deps(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
    for (const auto& a : g.nodes[i].attrs) {
      if (a.g) deps.merge(ir::free_names(*a.g));
      for (const auto& sg : a.graphs) deps.merge(ir::free_names(*sg));
    }
    std::set<size_t> preds;
    for (const auto& d : deps) {
      auto it = d.empty() ? producer.end() : producer.find(d);
      if (it != producer.end() && it->second != i) preds.insert(it->second);
    }
    for (size_t p : preds) {
      users[p].push_back(i);
      ++pending[i];
      if (p > i) sorted = false;
    }
  }
  if (sorted) return true;
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != n) return false;
  std::vector<ir::Node> nodes;
  nodes.reserve(n);
  for (size_t i : order) nodes.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(nodes);
  return true;
}

bool well_formed(const ir::Graph& g) {
  std::set<std::string> defined;
  for (const auto& v : g.inputs)
    if (v.name.empty() || !defined.insert(v.name).second) return false;
  const std::set<std::string> inputs = defined;
  for (const auto& [name, t] : g.initializers)
    if (!inputs.count(name) && !defined.insert(name).second) return false;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty() && !defined.insert(o).second) return false;
  for (const auto& n : g.nodes) {
    // The passes index a node's inputs and outputs by the op's signature (Sqrt's input 0,
    // Add's inputs 0 and 1): a node with fewer or more than its schema allows is left to
    // the planner, which names it.
    if (const check::OpSchema* sc = check::find_schema(n.domain, n.op_type, n.opset)) {
      const int nin = static_cast<int>(n.inputs.size()), nout = static_cast<int>(n.outputs.size());
      if (nin < sc->min_inputs || nin > sc->max_inputs || nout < sc->min_outputs || nout > sc->max_outputs)
        return false;
    }
    for (const auto& i : n.inputs)
      if (!i.empty() && !defined.count(i)) return false;
    for (const auto& a : n.attrs) {
      std::set<std::string> free;
      if (a.g) free.merge(ir::free_names(*a.g));
      for (const auto& sg : a.graphs) free.merge(ir::free_names(*sg));
      for (const auto& f : free)
        if (!defined.count(f)) return false;
    }
  }
  for (const auto& v : g.outputs)
    if (!defined.count(v.name)) return false;
  return true;
}

ir::Node make_node(std::string op, std::vector<std::string> inputs,
                   std::vector<std::string> outputs, std::string name, int64_t opset,
                   std::string domain) {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.name = std::move(name);
  n.domain = std::move(domain);
  n.opset = n.domain == kernels::kOnyxDomain ? 1 : static_cast<int>(opset);
  return n;
}

ir::Attribute make_attr_i(std::string name, int64_t v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::Attribute::Type::kInt;
  a.i = v;
  return a;
}

ir::Attribute make_attr_f(std::string name, float v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::Attribute::Type::kFloat;
  a.f = v;
  return a;
}

ir::Attribute make_attr_s(std::string name, std::string v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::Attribute::Type::kString;
  a.s = std::move(v);
  return a;
}

ir::Attribute make_attr_ints(std::string name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::Attribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}

ir::Attribute make_attr_floats(std::string name, std::vector<float> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::Attribute::Type::kFloats;
  a.floats = std::move(v);
  return a;
}

void set_attr(ir::Node& n, ir::Attribute a) {
  for (auto& x : n.attrs)
    if (x.name == a.name) {
      x = std::move(a);
      return;
    }
  n.attrs.push_back(std::move(a));
}

void erase_attr(ir::Node& n, std::string_view name) {
  n.attrs.erase(std::remove_if(n.attrs.begin(), n.attrs.end(),
                               [&](const ir::Attribute& a) { return a.name == name; }),
                n.attrs.end());
}

bool has_subgraph(const ir::Node& n) {
  for (const auto& a : n.attrs)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

size_t given_inputs(const ir::Node& n) {
  size_t k = n.inputs.size();
  while (k > 0 && n.inputs[k - 1].empty()) --k;
  return k;
}

size_t given_outputs(const ir::Node& n) {
  size_t k = n.outputs.size();
  while (k > 0 && n.outputs[k - 1].empty()) --k;
  return k;
}

bool bypass(PassContext& ctx, size_t n, const std::string& in, const std::string& out) {
  if (in.empty() || out.empty() || in == out) return false;
  if (!ctx.pinned(out)) {
    ctx.replace_uses(out, in);
    ctx.remove(n);
    return true;
  }
  const int p = ctx.producer(in);
  if (p < 0 || ctx.pinned(in) || ctx.captured(out)) return false;
  ir::Node& prod = ctx.node(static_cast<size_t>(p));
  size_t k = 0;
  while (k < prod.outputs.size() && prod.outputs[k] != in) ++k;
  ctx.remove(n);
  ctx.set_output(static_cast<size_t>(p), k, out);
  ctx.replace_uses(in, out);
  return true;
}

int sole_user(const PassContext& ctx, const std::string& v) {
  if (ctx.pinned(v)) return -1;
  const auto& u = ctx.uses(v);
  return u.size() == 1 ? static_cast<int>(u[0].node) : -1;
}

int producer_of(const PassContext& ctx, const std::string& v, std::string_view op) {
  const int p = ctx.producer(v);
  if (p < 0) return -1;
  const ir::Node& n = ctx.node(static_cast<size_t>(p));
  return is_op(n, op) ? p : -1;
}

std::optional<std::vector<int64_t>> const_ints(const PassContext& ctx, const std::string& v) {
  const Tensor* t = ctx.constant(v);
  if (!t) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::kInt64)
    for (int64_t i = 0; i < t->numel(); ++i) out[i] = t->data<int64_t>()[i];
  else if (t->dtype() == DType::kInt32)
    for (int64_t i = 0; i < t->numel(); ++i) out[i] = t->data<int32_t>()[i];
  else
    return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> node_axes(const PassContext& ctx, const ir::Node& n,
                                              bool& present) {
  present = false;
  if (const ir::Attribute* a = n.attr("axes")) {
    present = true;
    if (a->type != ir::Attribute::Type::kInts) return std::nullopt;
    return a->ints;
  }
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    present = true;
    return const_ints(ctx, n.inputs[1]);
  }
  return std::vector<int64_t>{};
}

bool near(double v, double want, double rel) {
  return std::fabs(v - want) <= rel * std::fabs(want) + 1e-12;
}

}  // namespace onyx::opt
