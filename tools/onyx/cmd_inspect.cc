// onyx inspect MODEL: what a model file holds, without running it.
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>

#include "format/loader.h"
#include "ir/graph.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/util.h"

namespace onyx::cli {
namespace {

struct InspectArgs {
  std::string model;
  bool json = false;
};

void count_ops(const ir::Graph& g, std::map<std::string, int>& ops, size_t& nodes) {
  for (const auto& n : g.nodes) {
    ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type]++;
    ++nodes;
    for (const auto& a : n.attrs) {
      if (a.g) count_ops(*a.g, ops, nodes);
      for (const auto& sg : a.graphs) count_ops(*sg, ops, nodes);
    }
  }
}

int run_inspect(const InspectArgs& a) {
  auto m = format::load_model(a.model);
  const ir::Graph& g = *m->graph;
  std::map<std::string, int> ops;
  size_t nodes = 0;
  count_ops(g, ops, nodes);
  uint64_t init_bytes = 0;
  for (const auto& [n, t] : g.initializers) init_bytes += t.nbytes();
  std::map<std::string, bool> inits;
  for (const auto& [n, t] : g.initializers) inits[n] = true;

  nlohmann::json j;
  j["file"] = a.model;
  j["file_bytes"] = m->file_bytes;
  j["producer"] = m->producer_name;
  j["producer_version"] = m->producer_version;
  j["ir_version"] = m->ir_version;
  j["model_version"] = m->model_version;
  j["graph_name"] = g.name;
  nlohmann::json opsets = nlohmann::json::object();
  for (const auto& [d, v] : m->opset_imports) opsets[d.empty() ? "ai.onnx" : d] = v;
  j["opset_imports"] = opsets;
  j["inputs"] = nlohmann::json::array();
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) j["inputs"].push_back(value_info_json(v));
  j["outputs"] = nlohmann::json::array();
  for (const auto& v : g.outputs) j["outputs"].push_back(value_info_json(v));
  j["initializers"] = {{"count", g.initializers.size()}, {"bytes", init_bytes}};
  j["external_data"] = nlohmann::json::array();
  for (const auto& f : m->external_files) j["external_data"].push_back({{"location", f.location}, {"bytes", f.bytes_used}});
  j["node_count"] = nodes;
  j["ops"] = ops;
  j["functions"] = nlohmann::json::array();
  for (const auto& f : m->functions) j["functions"].push_back(f.domain.empty() ? f.name : f.domain + "." + f.name);
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : m->metadata) meta[k] = v;
  j["metadata"] = meta;

  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << a.model << " (" << human_bytes(m->file_bytes) << ")\n";
  std::cout << "  producer      " << (m->producer_name.empty() ? "(none)" : m->producer_name)
            << (m->producer_version.empty() ? "" : " " + m->producer_version) << "\n";
  std::cout << "  ir version    " << m->ir_version << "\n";
  std::cout << "  opsets        ";
  bool first = true;
  for (const auto& [d, v] : m->opset_imports) {
    std::cout << (first ? "" : ", ") << (d.empty() ? "ai.onnx" : d) << " " << v;
    first = false;
  }
  std::cout << "\n  inputs\n";
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) std::cout << "    " << v.name << ": " << v.type.str() << "\n";
  std::cout << "  outputs\n";
  for (const auto& v : g.outputs) std::cout << "    " << v.name << ": " << v.type.str() << "\n";
  std::cout << "  initializers  " << g.initializers.size() << " (" << human_bytes(init_bytes) << ")\n";
  if (!m->external_files.empty()) {
    std::cout << "  external data\n";
    for (const auto& f : m->external_files) std::cout << "    " << f.location << " (" << human_bytes(f.bytes_used) << " used)\n";
  }
  if (!m->functions.empty()) std::cout << "  functions     " << m->functions.size() << "\n";
  std::cout << "  nodes         " << nodes << "\n";
  for (const auto& [op, n] : ops) std::cout << "    " << n << " x " << op << "\n";
  if (!m->metadata.empty()) {
    std::cout << "  metadata\n";
    for (const auto& [k, v] : m->metadata) std::cout << "    " << k << " = " << v << "\n";
  }
  return 0;
}

}  // namespace

Action add_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* sub = app.add_subcommand("inspect",
                                 "Show what a model holds: producer, IR version, opset imports, inputs "
                                 "and outputs with dtypes and shapes (symbolic dims by name), "
                                 "initializers, external-data files, and nodes by op type.");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_flag("--json", args->json, "print a JSON object instead of text");
  return [args] { return run_inspect(*args); };
}

}  // namespace onyx::cli
