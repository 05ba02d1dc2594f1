// Inlining of model-local functions (FunctionProto) into the graphs that call them.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "base/error.h"
#include "runtime/plan.h"

namespace onyx::runtime {
namespace {

constexpr int kMaxInlineDepth = 32;
/// Most nodes the graph may have once every call is inlined: a function calling another
/// twice, 30 levels deep, is a 3 KB file asking for 2^30 nodes.
constexpr uint64_t kMaxInlinedNodes = 1'000'000;

struct Inliner {
  const ir::Model& model;
  int counter = 0;

  const ir::Function* find(const ir::Node& n) const {
    for (const auto& f : model.functions)
      if (f.name == n.op_type && f.domain == n.domain) return &f;
    return nullptr;
  }

  /// Nodes that expanding `node` makes, its subgraphs included, counted without expanding
  /// anything (each function once), and at most kMaxInlinedNodes + 1. A call of a function
  /// already being counted is a recursion, which expand() refuses: it counts as one node.
  uint64_t expanded_size(const ir::Node& node, std::map<const ir::Function*, uint64_t>& memo) const {
    uint64_t n = 0;
    for (const auto& a : node.attrs)
      if (a.g)
        for (const auto& sub : a.g->nodes) n = std::min(n + expanded_size(sub, memo), kMaxInlinedNodes + 1);
    const ir::Function* f = find(node);
    if (!f) return std::min<uint64_t>(n + 1, kMaxInlinedNodes + 1);
    auto [it, fresh] = memo.try_emplace(f, 1);
    if (fresh) {
      uint64_t body = 0;
      for (const auto& b : f->nodes) body = std::min(body + expanded_size(b, memo), kMaxInlinedNodes + 1);
      it->second = body;
    }
    return std::min(n + it->second, kMaxInlinedNodes + 1);
  }

  /// Refuses, before anything is copied, a graph that inlines to more than kMaxInlinedNodes.
  void check_size(const std::vector<ir::Node>& nodes) const {
    std::map<const ir::Function*, uint64_t> memo;
    uint64_t total = 0;
    for (const auto& node : nodes) {
      total += expanded_size(node, memo);
      if (total > kMaxInlinedNodes)
        fail_model("{}: inlining the model's functions makes more than {} nodes (functions that "
                   "call each other many times over)",
                   node.describe(), kMaxInlinedNodes);
    }
  }

  /// Renames every value name in a subgraph that refers to the function scope.
  void rename_in_graph(ir::Graph& g, const std::map<std::string, std::string>& names) {
    for (auto& node : g.nodes) {
      for (auto& i : node.inputs) {
        auto it = names.find(i);
        if (it != names.end()) i = it->second;
      }
      for (auto& a : node.attrs)
        if (a.g) rename_in_graph(*a.g, names);
    }
    for (auto& o : g.outputs) {
      auto it = names.find(o.name);
      if (it != names.end()) o.name = it->second;
    }
  }

  /// Replaces attributes that reference the caller's (ref_attr_name), in subgraphs too.
  void bind_attrs(std::vector<ir::Attribute>& attrs, const ir::Node& call, const ir::Function& f) {
    std::vector<ir::Attribute> out;
    for (auto& a : attrs) {
      if (a.g) {
        a.g = std::make_shared<ir::Graph>(*a.g);
        for (auto& n : a.g->nodes) bind_attrs(n.attrs, call, f);
      }
      if (a.ref_attr_name.empty()) {
        out.push_back(a);
        continue;
      }
      const ir::Attribute* src = call.attr(a.ref_attr_name);
      if (!src)
        for (const auto& d : f.attribute_defaults)
          if (d.name == a.ref_attr_name) src = &d;
      if (!src) continue;  // not given, no default: the attribute is absent
      ir::Attribute b = *src;
      b.name = a.name;
      b.ref_attr_name.clear();
      out.push_back(std::move(b));
    }
    attrs = std::move(out);
  }

  void expand(std::vector<ir::Node>& nodes, int depth) {
    std::vector<ir::Node> result;
    for (auto& node : nodes) {
      for (auto& a : node.attrs)
        if (a.g) {
          a.g = std::make_shared<ir::Graph>(*a.g);
          expand(a.g->nodes, depth);
        }
      const ir::Function* f = find(node);
      if (!f) {
        result.push_back(std::move(node));
        continue;
      }
      if (depth >= kMaxInlineDepth)
        fail_model("{}: functions call each other more than {} levels deep (recursion?)",
                   node.describe(), kMaxInlineDepth);
      std::string prefix = "__" + f->name + "_" + std::to_string(counter++) + "__";
      std::map<std::string, std::string> names;
      for (size_t i = 0; i < f->inputs.size(); ++i)
        names[f->inputs[i]] = i < node.inputs.size() ? node.inputs[i] : std::string();
      for (size_t i = 0; i < f->outputs.size(); ++i)
        names[f->outputs[i]] = i < node.outputs.size() ? node.outputs[i] : prefix + f->outputs[i];
      std::vector<ir::Node> body = f->nodes;
      for (auto& b : body)
        for (auto& o : b.outputs)
          if (!o.empty() && !names.count(o)) names[o] = prefix + o;
      for (auto& b : body) {
        for (auto& i : b.inputs)
          if (!i.empty()) {
            auto it = names.find(i);
            i = it != names.end() ? it->second : i;
          }
        for (auto& o : b.outputs)
          if (!o.empty()) o = names[o];
        bind_attrs(b.attrs, node, *f);
        for (auto& a : b.attrs)
          if (a.g) rename_in_graph(*a.g, names);
        if (!b.name.empty()) b.name = prefix + b.name;
      }
      expand(body, depth + 1);
      for (auto& b : body) result.push_back(std::move(b));
    }
    nodes = std::move(result);
  }
};

}  // namespace

std::shared_ptr<ir::Graph> inline_functions(const ir::Model& model) {
  if (model.functions.empty()) return model.graph;
  auto g = std::make_shared<ir::Graph>(*model.graph);
  Inliner inl{model};
  inl.check_size(g->nodes);
  inl.expand(g->nodes, 0);
  return g;
}

}  // namespace onyx::runtime
