// onyx check MODEL: is the model valid, and can each provider run every node of it?
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

#include "check/schema.h"
#include "check/validate.h"
#include "format/loader.h"
#include "onyx/error.h"
#include "tools/onyx/commands.h"

namespace onyx::cli {
namespace {

constexpr int kExitOk = 0, kExitInvalid = 1, kExitUnsupported = 3;

struct CheckArgs {
  std::string model;
  std::string provider = "cpu";
  bool strict = false;
  bool json = false;
};

std::string located(const std::string& where, const std::string& msg) {
  return where.empty() ? msg : "in " + where + ": " + msg;
}

std::string count(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string node_label(const check::Unsupported& u) {
  std::string s = u.domain.empty() ? u.op_type : u.domain + "." + u.op_type;
  if (!u.node.empty()) s += " '" + u.node + "'";
  return s + " (opset " + std::to_string(u.opset) + ")";
}

int run_check(const CheckArgs& a) {
  check::Options opts;
  opts.providers = a.provider == "all" ? check::known_providers() : std::vector<std::string>{a.provider};

  std::shared_ptr<ir::Model> model;
  try {
    model = format::load_model(a.model);
  } catch (const Error& e) {
    if (a.json) {
      nlohmann::json j = {{"model", a.model}, {"valid", false}, {"load_error", e.what()},
                          {"exit_code", kExitInvalid}};
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      print_error(std::string("cannot load the model: ") + e.what());
    }
    return kExitInvalid;
  }

  const check::Report r = check::check_model(*model, opts);
  size_t unsupported = 0;
  for (const auto& p : r.providers) unsupported += p.unsupported.size();
  const int rc = r.errors() ? kExitInvalid : (a.strict && unsupported ? kExitUnsupported : kExitOk);

  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["valid"] = r.errors() == 0;
    j["errors"] = r.errors();
    j["warnings"] = r.warnings();
    j["nodes"] = r.nodes;
    j["schema"] = check::schema_source();
    j["problems"] = nlohmann::json::array();
    for (const auto& p : r.problems)
      j["problems"].push_back({{"severity", p.severity == check::Problem::Severity::kError ? "error" : "warning"},
                               {"where", p.where},
                               {"node", p.node},
                               {"op_type", p.op_type},
                               {"domain", p.domain},
                               {"opset", p.opset},
                               {"message", p.message}});
    j["providers"] = nlohmann::json::array();
    for (const auto& pr : r.providers) {
      nlohmann::json pj = {{"provider", pr.provider},
                           {"nodes", pr.nodes},
                           {"supported", pr.unsupported.empty()},
                           {"unsupported", nlohmann::json::array()}};
      for (const auto& u : pr.unsupported)
        pj["unsupported"].push_back({{"where", u.where},
                                     {"node", u.node},
                                     {"op_type", u.op_type},
                                     {"domain", u.domain},
                                     {"opset", u.opset},
                                     {"input_types", u.input_types},
                                     {"reason", u.reason}});
      j["providers"].push_back(pj);
    }
    j["exit_code"] = rc;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return rc;
  }

  std::string opsets;
  for (const auto& [d, v] : model->opset_imports)
    opsets += (opsets.empty() ? "" : ", ") + (d.empty() ? std::string("ai.onnx") : d) + " " + std::to_string(v);
  if (r.errors() == 0)
    std::cout << a.model << ": valid (" << count(r.nodes, "node") << "; " << opsets << ")\n";
  else
    std::cout << a.model << ": INVALID: " << count(r.errors(), "error") << " ("
              << count(r.nodes, "node") << "; " << opsets << ")\n";
  for (const auto& p : r.problems)
    if (p.severity == check::Problem::Severity::kError) std::cout << "  error: " << located(p.where, p.message) << "\n";
  for (const auto& p : r.problems)
    if (p.severity == check::Problem::Severity::kWarning) std::cout << "  warning: " << located(p.where, p.message) << "\n";
  for (const auto& pr : r.providers) {
    if (pr.unsupported.empty()) {
      std::cout << pr.provider << ": can run " << (pr.nodes == 1 ? "the 1 node" : "all " + count(pr.nodes, "node")) << "\n";
      continue;
    }
    std::cout << pr.provider << ": cannot run " << pr.unsupported.size() << " of " << count(pr.nodes, "node") << "\n";
    for (const auto& u : pr.unsupported) {
      std::string ins;
      for (const auto& t : u.input_types) ins += (ins.empty() ? "" : ", ") + t;
      std::cout << "  " << located(u.where, node_label(u)) << " [" << ins << "]: " << u.reason << "\n";
    }
  }
  if (rc == kExitUnsupported)
    std::cout << "strict: failing because some nodes cannot run on the chosen provider"
              << (opts.providers.size() > 1 ? "s" : "") << "\n";
  return rc;
}

}  // namespace

Action add_check(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  const std::string schemas = fmt::format(
      "operator schemas of the {}: ai.onnx opsets <= {}, ai.onnx.ml <= {}", check::schema_source(),
      check::schema_max_opset(""), check::schema_max_opset("ai.onnx.ml"));
  auto* sub = app.add_subcommand(
      "check",
      "Validate a model the way onnx.checker and strict shape inference do, and list every node "
      "a provider cannot run.\n"
      "Reports all problems, not just the first, each naming the node (name, op type, opset): "
      "SSA form and topological order, undefined inputs, domains and opsets not imported, "
      "input/output counts, unknown, missing or mistyped attributes, input types outside the "
      "operator's type constraints (" +
          schemas +
          "; newer nodes are checked by onyx's shape functions), initializers that disagree with "
          "the graph input of their name, and inferred types that disagree with declared "
          "value_info and outputs. Then, per provider, each node onyx has no kernel for (op, "
          "opset, input dtypes, and why).");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_option("--provider", args->provider,
                  "which provider's support to report: cpu (native build), wasm (the WebAssembly "
                  "build, which leaves a few native-only kernels out) or all")
      ->check(CLI::IsMember({"cpu", "wasm", "all"}))
      ->capture_default_str();
  sub->add_flag("--strict", args->strict, "fail (exit 3) when a provider cannot run some node");
  sub->add_flag("--json", args->json, "print a JSON report instead of text");
  sub->footer(
      "Exit codes: 0 valid (and, with --strict, every node supported); 1 invalid model or "
      "unreadable file; 2 usage error; 3 valid but some node unsupported (only with --strict).");
  return [args] { return run_check(*args); };
}

}  // namespace onyx::cli
