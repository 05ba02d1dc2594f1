// onyx optimize MODEL -o OUT: run the graph optimizer (src/opt/) and write the result
// as an .onnx file.
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/loader.h"
#include "format/model_writer.h"
#include "opt/optimize.h"
#include "runtime/plan.h"
#include "tools/onyx/commands.h"
#include "runtime/session_internal.h"

namespace onyx::cli {
namespace {

struct OptimizeArgs {
  std::string model;
  std::string output;
  GraphOptimization level = GraphOptimization::kAll;
  bool fused = false;
  bool json = false;
};

int run_optimize(const OptimizeArgs& a) {
  auto model = format::load_model(a.model);
  auto graph = std::make_shared<ir::Graph>(*runtime::inline_functions(*model));
  opt::OptimizeOptions oo;
  oo.level = a.level;
  oo.fused_ops = a.fused;
  auto def = model->opset_imports.find("");
  oo.default_opset = def == model->opset_imports.end() ? 0 : def->second;
  opt::OptimizeReport r;
  try {
    r = opt::optimize_graph(*graph, oo);
  } catch (const Error& e) {
    throw Error(e.code(), a.model + ": " + e.what());
  }
  const std::string bytes = format::write_model(*model, *graph);
  // What is written must load and plan again, unoptimized (a check of the writer too).
  {
    SessionOptions so;
    so.optimize = GraphOptimization::kNone;
    try {
      session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), so);
    } catch (const Error& e) {
      fail_runtime("the optimized model does not plan (a bug in onyx optimize): {}", e.what());
    }
  }
  format::write_model_file(a.output, *model, *graph);
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["output"] = a.output;
    j["nodes_before"] = r.nodes_before;
    j["nodes_after"] = r.nodes_after;
    j["rounds"] = r.rounds;
    j["bytes"] = bytes.size();
    j["passes"] = nlohmann::json::array();
    for (const auto& s : r.passes)
      j["passes"].push_back(
          {{"pass", s.pass}, {"runs", s.runs}, {"rewrites", s.rewrites}, {"nodes_delta", s.delta}});
    j["created"] = nlohmann::json::object();
    for (const auto& [op, n] : r.created) j["created"][op] = n;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << a.model << " -> " << a.output << "\n" << opt::report_text(r);
  return 0;
}

}  // namespace

Action add_optimize(CLI::App& app) {
  auto args = std::make_shared<OptimizeArgs>();
  auto* sub = app.add_subcommand(
      "optimize",
      "Rewrite a model's graph the way a session does before planning it, and write it as an .onnx "
      "file.\n\n"
      "The passes (listed in docs/ARCHITECTURE.md) fold constants and BatchNormalization, remove\n"
      "dead and no-op nodes, cancel Transpose/Reshape pairs, turn MatMul + Add into Gemm and\n"
      "decomposed LayerNormalization/GELU into the ops (when the model's opset has them); each\n"
      "line printed says what one pass did. --level basic keeps to standard ONNX ops, so the\n"
      "file runs anywhere; --level all (default) also fuses activations, residual Adds and\n"
      "attention into onyx's own ops of domain ai.onyx, which only onyx runs, and runs the\n"
      "depthwise-separable layers of small images channels last (for this machine's SIMD\n"
      "width, so the file suits this kind of CPU best): those are written\n"
      "only with --fused (without it, all writes what basic does). Function calls are inlined.\n"
      "The written model is loaded and planned again before it is saved.");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_option("--output,-o", args->output, "the .onnx file to write")->required();
  sub->add_option("--level", args->level, "basic or all (default all)")
      ->transform(CLI::CheckedTransformer(optimize_levels()));
  sub->add_flag("--fused", args->fused,
                "allow the ai.onyx fused ops in the output (with --level all)");
  sub->add_flag("--json", args->json, "print what each pass did as JSON");
  return [args] { return run_optimize(*args); };
}

}  // namespace onyx::cli
