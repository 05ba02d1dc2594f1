// Static validation: structure (SSA, order, names), schemas (counts, attributes, type
// constraints), shape inference against declared types, and kernel support per provider.
#include "check/validate.h"

#include <algorithm>
#include <cctype>
#include <queue>
#include <set>

#include "base/checked.h"
#include "base/error.h"
#include "check/schema.h"
#include "kernels/registry.h"
#include "shape/infer.h"

namespace onyx::check {
namespace {

using Kind = ir::TypeInfo::Kind;

/// What is known about a value while walking a graph.
struct ValueState {
  ir::TypeInfo type;
  Value value;  ///< its content, when computable before running (initializer, constant)
  bool is_const = false;
};

struct Scope {
  std::map<std::string, ValueState> vals;
  Scope* parent = nullptr;
  const ValueState* find(const std::string& n) const {
    auto it = vals.find(n);
    if (it != vals.end()) return &it->second;
    return parent ? parent->find(n) : nullptr;
  }
  bool outer_has(const std::string& n) const { return parent && parent->find(n); }
};

/// Ops whose output must not be computed ahead of running.
bool never_fold(const ir::Node& n) {
  static const std::set<std::string, std::less<>> kRandom = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Bernoulli", "Multinomial", "Dropout"};
  return !n.domain.empty() || kRandom.count(n.op_type) > 0;
}

bool has_subgraphs(const ir::Node& n) {
  for (const auto& a : n.attrs)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

std::string domain_label(const std::string& d) { return d.empty() ? "ai.onnx" : d; }

bool provides(const kernels::KernelDef& d, const std::string& provider) {
  if (provider == "wasm") return d.provider == "cpu" && d.wasm;
  return d.provider == provider;
}

/// True when two types cannot both describe one value (kinds, dtypes, ranks or known dims differ).
bool types_conflict(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (a.kind == Kind::kUnknown || b.kind == Kind::kUnknown) return false;
  if (a.kind != b.kind) return true;
  if (a.kind == Kind::kSequence || a.kind == Kind::kOptional) {
    if (!a.inner || !b.inner) return false;
    return types_conflict(*a.inner, *b.inner);
  }
  if (a.kind != Kind::kTensor && a.kind != Kind::kSparseTensor) return false;
  if (a.elem != DType::kUndefined && b.elem != DType::kUndefined && a.elem != b.elem) return true;
  if (!a.has_shape || !b.has_shape) return false;
  if (a.shape.size() != b.shape.size()) return true;
  for (size_t k = 0; k < a.shape.size(); ++k)
    if (a.shape[k].known() && b.shape[k].known() && a.shape[k].value != b.shape[k].value) return true;
  return false;
}

bool is_fresh_symbol(const ir::Dim& d) { return !d.known() && (d.param.empty() || d.param.rfind("unk__", 0) == 0); }

/// The inferred type, completed by what the declaration knows.
ir::TypeInfo merge_types(const ir::TypeInfo& inferred, const ir::TypeInfo& declared) {
  if (inferred.kind == Kind::kUnknown) return declared;
  if (declared.kind == Kind::kUnknown || declared.kind != inferred.kind) return inferred;
  ir::TypeInfo r = inferred;
  if ((r.kind == Kind::kSequence || r.kind == Kind::kOptional) && declared.inner) {
    r.inner = std::make_shared<ir::TypeInfo>(
        r.inner ? merge_types(*r.inner, *declared.inner) : *declared.inner);
    return r;
  }
  if (r.elem == DType::kUndefined) r.elem = declared.elem;
  if (!r.has_shape && declared.has_shape) {
    r.has_shape = true;
    r.shape = declared.shape;
  } else if (r.has_shape && declared.has_shape && r.shape.size() == declared.shape.size()) {
    for (size_t k = 0; k < r.shape.size(); ++k)
      if (is_fresh_symbol(r.shape[k]) && !is_fresh_symbol(declared.shape[k])) r.shape[k] = declared.shape[k];
  }
  return r;
}

/// `t` as users read it: the placeholder dims of inference ("unk__3") shown as "?".
std::string shown(const ir::TypeInfo& t) {
  const std::string s = t.str();
  std::string out;
  for (size_t p = 0; p < s.size();) {
    if (s.compare(p, 5, "unk__") == 0) {
      p += 5;
      while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
      out += '?';
    } else {
      out += s[p++];
    }
  }
  return out;
}

std::string type_text(const ir::TypeInfo* t) {
  if (!t || t->kind == Kind::kUnknown) return "?";
  return shown(*t);
}

/// "tensor(float)" as the ONNX type strings read.
std::string onnx_type_name(const ir::TypeInfo& t) {
  switch (t.kind) {
    case Kind::kTensor:
      return "tensor(" + std::string(t.elem == DType::kUndefined ? "?" : dtype_name(t.elem)) + ")";
    case Kind::kSparseTensor: return "sparse_tensor(" + std::string(dtype_name(t.elem)) + ")";
    case Kind::kSequence: return "seq(" + (t.inner ? onnx_type_name(*t.inner) : "?") + ")";
    case Kind::kOptional: return "optional(" + (t.inner ? onnx_type_name(*t.inner) : "?") + ")";
    case Kind::kMap: return "map(" + std::string(dtype_name(t.key)) + ", ...)";
    case Kind::kUnknown: return "?";
  }
  return "?";
}

bool same_type_binding(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (a.kind == Kind::kUnknown || b.kind == Kind::kUnknown) return true;
  if (a.kind != b.kind) return false;
  if (a.kind == Kind::kTensor)
    return a.elem == DType::kUndefined || b.elem == DType::kUndefined || a.elem == b.elem;
  if ((a.kind == Kind::kSequence || a.kind == Kind::kOptional) && a.inner && b.inner)
    return same_type_binding(*a.inner, *b.inner);
  return true;
}

class Checker {
 public:
  Checker(const ir::Model& m, const Options& o, Report& r) : model_(m), opts_(o), report_(r) {
    for (const std::string& p : opts_.providers) report_.providers.push_back(ProviderReport{p, 0, {}});
  }

  void run() {
    if (model_.ir_version <= 0)
      model_error("the model has no ir_version (ModelProto.ir_version must be set, e.g. 8)");
    if (!model_.graph) {
      model_error("the model holds no graph");
      return;
    }
    check_graph(*model_.graph, nullptr, "", /*main=*/true, /*in_function=*/false);
    for (const ir::Function& f : model_.functions) check_function(f);
    for (const auto& [domain, max] : above_table_)
      warning("", nullptr,
              fmt::format("nodes of {} opset {} are validated by onyx's shape functions only: the "
                          "operator schema table ({}) ends at opset {}",
                          domain_label(domain), max, schema_source(), schema_max_opset(domain)));
  }

 private:
  using Declared = std::map<std::string, std::pair<const ir::TypeInfo*, const char*>>;

  // ---- reporting ----
  void add(Problem::Severity sev, const std::string& where, const ir::Node* n, std::string msg) {
    Problem p;
    p.severity = sev;
    p.where = where;
    if (n) {
      p.node = n->name;
      p.op_type = n->op_type;
      p.domain = n->domain;
      p.opset = n->opset;
    }
    p.message = std::move(msg);
    report_.problems.push_back(std::move(p));
  }
  void error(const std::string& where, const ir::Node* n, std::string msg) {
    add(Problem::Severity::kError, where, n, std::move(msg));
  }
  void warning(const std::string& where, const ir::Node* n, std::string msg) {
    add(Problem::Severity::kWarning, where, n, std::move(msg));
  }
  void node_error(const std::string& where, const ir::Node& n, const std::string& fault) {
    error(where, &n, n.describe() + ": " + fault);
  }
  void model_error(std::string msg) { error("", nullptr, std::move(msg)); }

  static std::string graph_label(const ir::Graph& g, bool main) {
    if (main) return g.name.empty() ? "the main graph" : "graph '" + g.name + "'";
    return g.name.empty() ? "the subgraph" : "subgraph '" + g.name + "'";
  }

  // ---- graphs ----
  void check_declared_type(const std::string& where, const std::string& what, const ir::TypeInfo& t) {
    if (t.kind == Kind::kUnknown) {
      error(where, nullptr, fmt::format("{} has no type (a main-graph input or output must declare "
                                        "its type)", what));
      return;
    }
    if (t.kind == Kind::kTensor) {
      if (t.elem == DType::kUndefined)
        error(where, nullptr, fmt::format("{} declares a tensor without an element type", what));
      if (!t.has_shape)
        error(where, nullptr,
              fmt::format("{} declares no shape (ONNX requires one on main-graph inputs and "
                          "outputs; use named dims such as 'batch' for sizes not fixed)", what));
    }
  }

  void check_graph(const ir::Graph& g, Scope* parent, const std::string& where, bool main,
                   bool in_function) {
    Scope scope;
    scope.parent = parent;
    const std::string gl = graph_label(g, main);
    std::set<std::string> defined_here;

    size_t k = 0;
    for (const ir::ValueInfo& vi : g.inputs) {
      ++k;
      if (vi.name.empty()) {
        error(where, nullptr, fmt::format("{}: input #{} has no name", gl, k));
        continue;
      }
      if (!defined_here.insert(vi.name).second) {
        error(where, nullptr,
              fmt::format("{}: input '{}' is listed more than once (the graph must be in SSA form)",
                          gl, vi.name));
        continue;
      }
      if (scope.outer_has(vi.name))
        error(where, nullptr,
              fmt::format("{}: input '{}' has the name of a value of the enclosing graph (the "
                          "graph must be in SSA form)", gl, vi.name));
      if (main && !in_function) check_declared_type(where, fmt::format("graph input '{}'", vi.name), vi.type);
      scope.vals[vi.name].type = vi.type;
    }

    std::set<std::string> init_names;
    for (const auto& [name, t] : g.initializers) {
      if (!init_names.insert(name).second) {
        error(where, nullptr,
              fmt::format("{}: initializer '{}' is given more than once", gl, name));
        continue;
      }
      ir::TypeInfo ttype = ir::TypeInfo::tensor(t.dtype(), ir::shape_of(t.dims()));
      auto it = scope.vals.find(name);
      if (it != scope.vals.end()) {
        const ir::TypeInfo& d = it->second.type;
        if (d.kind != Kind::kUnknown && d.kind != Kind::kTensor)
          error(where, nullptr,
                fmt::format("{}: initializer '{}' is a tensor {}, but the graph input of that "
                            "name is declared {}", gl, name, ttype.str(), d.str()));
        else if (types_conflict(d, ttype))
          error(where, nullptr,
                fmt::format("{}: initializer '{}' is {}, but the graph input of that name is "
                            "declared {}", gl, name, ttype.str(), d.str()));
        it->second.type = merge_types(ttype, d);
        continue;  // an input with a default: overridable, so not a constant
      }
      if (main && !in_function && model_.ir_version > 0 && model_.ir_version < 4)
        error(where, nullptr,
              fmt::format("{}: initializer '{}' is not a graph input; IR version {} (< 4) "
                          "requires every initializer to be listed as an input",
                          gl, name, model_.ir_version));
      if (scope.outer_has(name))
        error(where, nullptr,
              fmt::format("{}: initializer '{}' has the name of a value of the enclosing graph "
                          "(the graph must be in SSA form)", gl, name));
      defined_here.insert(name);
      ValueState& v = scope.vals[name];
      v.type = ttype;
      v.value = Value(t);
      v.is_const = true;
    }

    // Who produces each name; SSA violations.
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      for (const std::string& o : n.outputs) {
        if (o.empty()) continue;
        if (defined_here.count(o)) {
          bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(),
                                      [&](const ir::ValueInfo& vi) { return vi.name == o; });
          node_error(where, n, fmt::format("output '{}' is also {} (the graph must be in SSA form)",
                                           o, is_input ? "a graph input" : "an initializer"));
        } else if (auto p = producer.find(o); p != producer.end()) {
          node_error(where, n, p->second == i
                                   ? fmt::format("lists output '{}' twice (the graph must be in "
                                                 "SSA form)", o)
                                   : fmt::format("output '{}' is also produced by {} (the graph "
                                                 "must be in SSA form)", o,
                                                 g.nodes[p->second].describe()));
        } else {
          producer[o] = i;
          if (scope.outer_has(o))
            node_error(where, n, fmt::format("output '{}' has the name of a value of the enclosing "
                                             "graph (the graph must be in SSA form)", o));
        }
      }
    }

    // File order: every input defined before use.
    std::set<std::string> avail = defined_here;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const std::string& in = n.inputs[j];
        if (in.empty() || avail.count(in) || scope.outer_has(in)) continue;
        auto p = producer.find(in);
        if (p == producer.end())
          node_error(where, n,
                     fmt::format("input {} '{}' is not defined: no graph input, initializer or "
                                 "node output has that name", j, in));
        else if (p->second == i)
          node_error(where, n, fmt::format("input {} '{}' is its own output (a cycle)", j, in));
        else
          node_error(where, n,
                     fmt::format("input {} '{}' is produced by {}, which comes later: nodes must "
                                 "be in topological order", j, in, g.nodes[p->second].describe()));
      }
      for (const std::string& o : n.outputs)
        if (!o.empty()) avail.insert(o);
    }

    Declared declared;
    for (const ir::ValueInfo& v : g.value_info) declared[v.name] = {&v.type, "value_info"};
    for (const ir::ValueInfo& v : g.outputs) declared[v.name] = {&v.type, "graph output"};

    for (size_t ni : topo_order(g, producer, where)) check_node(g.nodes[ni], scope, where, in_function, declared);

    k = 0;
    std::set<std::string> out_names;
    for (const ir::ValueInfo& o : g.outputs) {
      ++k;
      if (o.name.empty()) {
        error(where, nullptr, fmt::format("{}: output #{} has no name", gl, k));
        continue;
      }
      if (main && !in_function) check_declared_type(where, fmt::format("graph output '{}'", o.name), o.type);
      if (!scope.find(o.name))
        error(where, nullptr,
              fmt::format("{}: output '{}' is not produced by any node, nor is it an input or "
                          "initializer", gl, o.name));
      else if (const ValueState* v = scope.find(o.name); v && !producer.count(o.name) &&
                                                         types_conflict(o.type, v->type))
        error(where, nullptr,
              fmt::format("{}: output '{}' is declared {} but is {}", gl, o.name, shown(o.type),
                          shown(v->type)));
    }

    auto& types = report_.types[&g];
    for (const auto& [name, v] : scope.vals) types[name] = v.type;
  }

  /// Nodes in an order where producers come first (stable: file order where possible).
  /// Nodes on a cycle are reported and come last.
  std::vector<size_t> topo_order(const ir::Graph& g, const std::map<std::string, size_t>& producer,
                                 const std::string& where) {
    std::vector<std::vector<size_t>> users(g.nodes.size());
    std::vector<int> pending(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      std::set<std::string> deps(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
      for (const auto& a : g.nodes[i].attrs) {
        if (a.g) deps.merge(ir::free_names(*a.g));
        for (const auto& sg : a.graphs) deps.merge(ir::free_names(*sg));
      }
      std::set<size_t> preds;
      for (const std::string& d : deps) {
        auto it = producer.find(d);
        if (!d.empty() && it != producer.end() && it->second != i) preds.insert(it->second);
      }
      for (size_t p : preds) {
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
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i] > 0) {
        node_error(where, g.nodes[i], "is on a cycle: it depends, through other nodes, on its own output");
        order.push_back(i);  // still checked, with what is known of its inputs
      }
    return order;
  }

  void check_function(const ir::Function& f) {
    ir::Graph g;
    g.name = f.name;
    for (const std::string& i : f.inputs) g.inputs.push_back(ir::ValueInfo{i, {}});
    for (const std::string& o : f.outputs) g.outputs.push_back(ir::ValueInfo{o, {}});
    g.nodes = f.nodes;
    std::string where = "function " + (f.domain.empty() ? f.name : f.domain + "." + f.name);
    if (f.domain.empty())
      error(where, nullptr, fmt::format("{}: a model-local function needs a domain", where));
    check_graph(g, nullptr, where, false, /*in_function=*/true);
    report_.types.erase(&g);
  }

  const ir::Function* local_function(const ir::Node& n) const {
    for (const ir::Function& f : model_.functions)
      if (f.name == n.op_type && ir::normalize_domain(f.domain) == n.domain) return &f;
    return nullptr;
  }

  // ---- nodes ----
  /// Validates `n` against its schema; returns false when it found a fault.
  bool check_schema(const ir::Node& n, const std::string& where, const OpSchema*& schema) {
    schema = nullptr;
    int max = schema_max_opset(n.domain);
    if (max == 0) return true;  // a domain the table does not cover
    if (n.opset > max) {
      int& seen = above_table_[n.domain];
      seen = std::max(seen, n.opset);
      return true;
    }
    schema = find_schema(n.domain, n.op_type, n.opset);
    if (!schema) {
      auto versions = schema_versions(n.domain, n.op_type);
      if (versions.empty())
        node_error(where, n, fmt::format("there is no operator '{}' in domain {} (up to opset {})",
                                         n.op_type, domain_label(n.domain), max));
      else
        node_error(where, n, fmt::format("operator '{}' first appears in {} opset {}; the model "
                                         "imports opset {}", n.op_type, domain_label(n.domain),
                                         versions.front()->since, n.opset));
      return false;
    }
    bool ok = true;
    const std::string sname = fmt::format("{}-{}", n.op_type, schema->since);
    if (schema->deprecated) {
      node_error(where, n, fmt::format("operator '{}' is deprecated since opset {}; export with "
                                       "the operator that replaces it", n.op_type, schema->since));
      schema = nullptr;  // the spec gives a deprecated version no signature to check against
      return false;
    }
    auto count_text = [](int lo, int hi) {
      if (lo == hi) return std::to_string(lo);
      if (hi >= 2147483647) return fmt::format("at least {}", lo);
      return fmt::format("{} to {}", lo, hi);
    };
    int nin = static_cast<int>(n.inputs.size()), nout = static_cast<int>(n.outputs.size());
    if (nin < schema->min_inputs || nin > schema->max_inputs) {
      node_error(where, n, fmt::format("has {} input{}; {} takes {}", nin, nin == 1 ? "" : "s", sname,
                                       count_text(schema->min_inputs, schema->max_inputs)));
      ok = false;
    }
    if (nout < schema->min_outputs || nout > schema->max_outputs) {
      node_error(where, n, fmt::format("has {} output{}; {} produces {}", nout, nout == 1 ? "" : "s",
                                       sname, count_text(schema->min_outputs, schema->max_outputs)));
      ok = false;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const FormalParam* p = schema->input_param(i);
      if (n.inputs[i].empty() && p && p->option == ' ') {
        node_error(where, n, fmt::format("input {} ('{}') is required but given as \"\"", i, p->name));
        ok = false;
      }
    }
    for (const ir::Attribute& a : n.attrs) {
      const AttrSchema* sa = schema->attr(a.name);
      if (!sa) {
        std::string names;
        for (const AttrSchema& x : schema->attrs) names += (names.empty() ? "" : ", ") + x.name;
        node_error(where, n, fmt::format("unknown attribute '{}' ({} has {})", a.name, sname,
                                         names.empty() ? "no attributes" : "attributes " + names));
        ok = false;
      } else if (a.ref_attr_name.empty() && a.type != sa->type) {
        node_error(where, n, fmt::format("attribute '{}' is of type {}, but {} expects {}", a.name,
                                         ir::attribute_type_name(a.type), sname,
                                         ir::attribute_type_name(sa->type)));
        ok = false;
      }
    }
    for (const AttrSchema& sa : schema->attrs)
      if (sa.required && !n.has_attr(sa.name)) {
        node_error(where, n, fmt::format("required attribute '{}' ({}) is missing", sa.name,
                                         ir::attribute_type_name(sa.type)));
        ok = false;
      }
    return ok;
  }

  /// Input types against the schema's type constraints. False on a fault.
  bool check_input_types(const ir::Node& n, const OpSchema& s, const std::string& where,
                         const std::vector<const ir::TypeInfo*>& types) {
    bool ok = true;
    const std::string sname = fmt::format("{}-{}", n.op_type, s.since);
    std::map<std::string, std::pair<const ir::TypeInfo*, size_t>> bound;
    for (size_t i = 0; i < types.size(); ++i) {
      const ir::TypeInfo* t = types[i];
      const FormalParam* p = s.input_param(i);
      if (!t || t->kind == Kind::kUnknown || !p || !p->types) continue;
      if (!p->types->allows(*t)) {
        node_error(where, n, fmt::format("input {} ('{}') is {}, which {} does not accept for {} "
                                         "(allowed: {})", i, n.inputs[i], onnx_type_name(*t), sname,
                                         p->name, p->types->str(t)));
        ok = false;
        continue;
      }
      if (!p->homogeneous || p->type_str.find('(') != std::string::npos) continue;
      auto [it, fresh] = bound.emplace(p->type_str, std::make_pair(t, i));
      if (!fresh && !same_type_binding(*it->second.first, *t)) {
        node_error(where, n, fmt::format("input {} ('{}') is {} but input {} ('{}') is {}; {} needs "
                                         "both to be the same type {}", i, n.inputs[i],
                                         onnx_type_name(*t), it->second.second,
                                         n.inputs[it->second.second],
                                         onnx_type_name(*it->second.first), sname, p->type_str));
        ok = false;
      }
    }
    return ok;
  }

  /// Loop: each loop-carried initial value must fit the body input it binds to.
  bool check_loop_carried(const ir::Node& n, const std::string& where,
                          const std::vector<const ir::TypeInfo*>& types) {
    const ir::Attribute* a = n.attr("body");
    if (!a || !a->g) return true;
    const ir::Graph& body = *a->g;
    bool ok = true;
    for (size_t k = 2; k < types.size() && k < body.inputs.size(); ++k) {
      if (!types[k] || !types_conflict(*types[k], body.inputs[k].type)) continue;
      node_error(where, n, fmt::format("loop-carried input {} '{}' is {}, but the body input it binds "
                                       "to, '{}', is declared {}", k, n.inputs[k], shown(*types[k]),
                                       body.inputs[k].name, shown(body.inputs[k].type)));
      ok = false;
    }
    return ok;
  }

  void check_node(const ir::Node& n, Scope& scope, const std::string& where, bool in_function,
                  const Declared& declared) {
    ++report_.nodes;
    bool ok = true;
    std::set<std::string> seen;
    for (const ir::Attribute& a : n.attrs) {
      if (!seen.insert(a.name).second) {
        node_error(where, n, fmt::format("attribute '{}' is given more than once", a.name));
        ok = false;
      }
      if (!a.ref_attr_name.empty() && !in_function) {
        node_error(where, n, fmt::format("attribute '{}' refers to a function attribute ('{}') "
                                         "outside a function body", a.name, a.ref_attr_name));
        ok = false;
      }
    }

    const ir::Function* fn = local_function(n);
    const OpSchema* schema = nullptr;
    if (n.opset == 0) {
      node_error(where, n, fmt::format("its domain '{}' is not imported by the model (add an "
                                       "opset_import entry for it)", n.domain));
      ok = false;
    } else if (!fn) {
      ok = check_schema(n, where, schema) && ok;
    }

    // Subgraphs see every value defined so far.
    for (const ir::Attribute& a : n.attrs) {
      std::string sub_where = (where.empty() ? "" : where + " > ") + n.describe() + " attribute '" + a.name + "'";
      if (a.g) check_graph(*a.g, &scope, sub_where, false, in_function);
      for (size_t k = 0; k < a.graphs.size(); ++k)
        check_graph(*a.graphs[k], &scope, fmt::format("{}[{}]", sub_where, k), false, in_function);
    }

    std::vector<const ir::TypeInfo*> types;
    std::vector<const Tensor*> values;
    std::vector<const Value*> const_values;
    bool inputs_known = true, all_const = true;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        types.push_back(nullptr);
        values.push_back(nullptr);
        const_values.push_back(nullptr);
        continue;
      }
      const ValueState* v = scope.find(in);
      if (!v || v->type.kind == Kind::kUnknown) inputs_known = false;
      if (!v || !v->is_const) all_const = false;
      static const ir::TypeInfo kUnknownType;
      types.push_back(v ? &v->type : &kUnknownType);
      values.push_back(v && v->is_const && v->value.is_tensor() ? &v->value.tensor() : nullptr);
      const_values.push_back(v && v->is_const ? &v->value : nullptr);
    }
    if (ok && schema) ok = check_input_types(n, *schema, where, types);
    if (ok && n.domain.empty() && n.op_type == "Loop") ok = check_loop_carried(n, where, types);

    std::vector<ir::TypeInfo> out_types(n.outputs.size());
    shape::ShapeFn sfn = fn ? nullptr : shape::shape_registry().find(n.domain, n.op_type);
    if (ok && sfn && inputs_known) {
      try {
        shape::InferContext ictx(n, types, values, &symbols_);
        sfn(ictx);
        out_types = std::move(ictx.outputs());
        out_types.resize(n.outputs.size());
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.find(n.op_type) == std::string::npos) msg = n.describe() + ": " + msg;
        error(where, &n, msg);
        ok = false;
      } catch (const std::exception& e) {
        node_error(where, n, fmt::format("type inference failed: {}", e.what()));
        ok = false;
      }
    }

    bool redefines = false;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const std::string& o = n.outputs[i];
      if (o.empty()) continue;
      ir::TypeInfo t = out_types[i];
      auto d = declared.find(o);
      if (d != declared.end()) {
        if (types_conflict(*d->second.first, t)) {
          node_error(where, n, fmt::format("output {} '{}' is declared {} ({}), but its inputs make "
                                           "it {}", i, o, shown(*d->second.first), d->second.second,
                                           shown(t)));
          ok = false;
        }
        t = merge_types(t, *d->second.first);
      }
      if (scope.vals.count(o)) redefines = true;  // an SSA violation, reported above
      else scope.vals[o].type = std::move(t);
    }

    // Folding runs the kernel on outputs shaped by this node's own inference (what the
    // runtime allocates), never by a declaration or by another node of the same name.
    if (ok && !redefines) fold(n, scope, const_values, all_const, out_types);

    for (ProviderReport& pr : report_.providers) {
      ++pr.nodes;
      std::string why = unsupported_reason(n, pr.provider, types, 0);
      if (why.empty()) continue;
      Unsupported u;
      u.where = where;
      u.node = n.name;
      u.op_type = n.op_type;
      u.domain = n.domain;
      u.opset = n.opset;
      for (const ir::TypeInfo* t : types) u.input_types.push_back(t ? type_text(t) : "(none)");
      u.reason = std::move(why);
      pr.unsupported.push_back(std::move(u));
    }
  }

  /// Evaluates a node whose inputs are all known now (small tensors only), so that the
  /// shapes downstream (Reshape, Expand, ...) are exact.
  void fold(const ir::Node& n, Scope& scope, const std::vector<const Value*>& in, bool all_const,
            const std::vector<ir::TypeInfo>& out_types) {
    if (!all_const || never_fold(n) || has_subgraphs(n)) return;
    for (const Value* v : in)
      if (v && (!v->is_tensor() || v->tensor().numel() > opts_.fold_limit)) return;
    std::vector<Value> out(n.outputs.size());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      const ir::TypeInfo& t = out_types[i];
      if (!(t.kind == Kind::kTensor && t.has_shape && ir::shape_known(t.shape) &&
            t.elem != DType::kUndefined))
        return;
      Dims dims = ir::shape_dims(t.shape);
      int64_t numel = 1;
      for (int64_t d : dims)
        if (!mul_fits(numel, d, numel)) return;  // far past fold_limit
      if (numel > opts_.fold_limit) return;
      out[i] = Value(Tensor(t.elem, dims));
    }
    const auto& reg = kernels::default_registry();
    const kernels::KernelDef* any = reg.find(n.domain, n.op_type, n.opset, DType::kUndefined);
    if (!any) return;
    DType dt = DType::kUndefined;
    if (any->type_input >= 0 && static_cast<size_t>(any->type_input) < in.size() && in[any->type_input])
      dt = in[any->type_input]->tensor().dtype();
    const kernels::KernelDef* k = reg.find(n.domain, n.op_type, n.opset, dt);
    if (!k || !k->fn) return;
    // Small tensors can still hold long work (an Einsum of three 4096-element vectors
    // into a scalar walks 6.9e10 positions): the check's folds share one second, and a
    // node still computing when it is spent stays unknown.
    if (fold_seconds_left_ <= 0) return;
    const auto start = std::chrono::steady_clock::now();
    CancelToken deadline;
    deadline.has_deadline = true;
    deadline.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(fold_seconds_left_));
    CancelScope scope_guard(&deadline);
    struct Spend {
      double& left;
      std::chrono::steady_clock::time_point start;
      ~Spend() { left -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
    } spend{fold_seconds_left_, start};
    try {
      kernels::KernelContext ctx(n, in, &out, nullptr, nullptr);
      k->fn(ctx);
    } catch (const std::exception&) {
      return;  // the run will report it; the static check only loses precision
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty() || !out[i].is_tensor()) continue;
      ValueState& v = scope.vals[n.outputs[i]];
      v.value = out[i];
      v.is_const = true;
    }
  }

  /// Why `provider` cannot run `n` ("" when it can).
  std::string unsupported_reason(const ir::Node& n, const std::string& provider,
                                 const std::vector<const ir::TypeInfo*>& types, int depth) {
    if (n.opset == 0) return fmt::format("domain '{}' is not imported", n.domain);
    if (const ir::Function* f = local_function(n)) {
      if (depth > 8) return "";
      for (const ir::Node& b : f->nodes) {
        std::string why = unsupported_reason(b, provider, {}, depth + 1);
        if (!why.empty()) return fmt::format("model-local function body: {}: {}", b.describe(), why);
      }
      return "";
    }
    const auto& reg = kernels::default_registry();
    std::vector<const kernels::KernelDef*> defs, mine, in_range;
    for (const auto& d : reg.all())
      if (!d.optimized && d.op == n.op_type && d.domain == n.domain) defs.push_back(&d);
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    if (defs.empty()) return fmt::format("onyx has no kernel for {}", op);
    for (const auto* d : defs)
      if (provides(*d, provider)) mine.push_back(d);
    if (mine.empty()) {
      for (const auto* d : defs)
        if (provider == "wasm" && !d->wasm)
          return fmt::format("left out of the WebAssembly build: {}",
                             d->wasm_reason.empty() ? std::string("native-only kernel") : d->wasm_reason);
      return fmt::format("no {} kernel for {}", provider, op);
    }
    int lo = 1 << 30, hi = 0;
    for (const auto* d : mine) {
      if (n.opset >= d->since && n.opset <= d->until) in_range.push_back(d);
      lo = std::min(lo, d->since);
      hi = std::max(hi, d->until);
    }
    if (in_range.empty())
      return fmt::format("kernels cover opset {}..{}; the model imports opset {}", lo, hi, n.opset);
    if (!shape::shape_registry().find(n.domain, n.op_type))
      return "onyx has no shape function for this op";
    int ti = in_range.front()->type_input;
    if (ti < 0 || static_cast<size_t>(ti) >= types.size() || !types[ti]) return "";
    const ir::TypeInfo& t = *types[ti];
    if (t.kind != Kind::kTensor || t.elem == DType::kUndefined) return "";
    std::set<std::string> supported;
    for (const auto* d : in_range) {
      if (d->dtypes.empty() || std::find(d->dtypes.begin(), d->dtypes.end(), t.elem) != d->dtypes.end())
        return "";
      for (DType x : d->dtypes) supported.insert(std::string(dtype_name(x)));
    }
    std::string list;
    for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
    return fmt::format("no kernel for input {} of dtype {} (kernels take: {})", ti,
                       dtype_name(t.elem), list);
  }

  const ir::Model& model_;
  const Options& opts_;
  double fold_seconds_left_ = 1.0;  ///< what fold() may still spend (see there)
  Report& report_;
  shape::SymbolGen symbols_;
  std::map<std::string, int> above_table_;  ///< domain -> highest opset beyond the table
};

}  // namespace

size_t Report::errors() const {
  return static_cast<size_t>(std::count_if(problems.begin(), problems.end(), [](const Problem& p) {
    return p.severity == Problem::Severity::kError;
  }));
}

size_t Report::warnings() const { return problems.size() - errors(); }

const std::vector<std::string>& known_providers() {
  static const std::vector<std::string> p = {"cpu", "wasm"};
  return p;
}

Report check_model(const ir::Model& model, const Options& opts) {
  Report r;
  Checker c(model, opts, r);
  try {
    c.run();
  } catch (const std::exception& e) {
    Problem p;
    p.message = std::string("the check stopped early: ") + e.what();
    r.problems.push_back(std::move(p));
  }
  return r;
}

}  // namespace onyx::check
