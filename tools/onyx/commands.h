// The onyx CLI: one subcommand per file, registered with CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

#include "onyx/session.h"

namespace onyx::cli {

/// Each subcommand adds itself to `app` and returns the action to run when chosen.
using Action = std::function<int()>;
Action add_run(CLI::App& app);
Action add_inspect(CLI::App& app);
Action add_check(CLI::App& app);
Action add_graph(CLI::App& app);
Action add_parity(CLI::App& app);
Action add_card(CLI::App& app);
Action add_ocr(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_optimize(CLI::App& app);

/// The values of --optimize / --level: none, basic, all.
inline const std::map<std::string, GraphOptimization>& optimize_levels() {
  static const std::map<std::string, GraphOptimization> m = {
      {"none", GraphOptimization::kNone}, {"basic", GraphOptimization::kBasic}, {"all", GraphOptimization::kAll}};
  return m;
}

/// Prints an error the way every subcommand does ("onyx: error: ...").
void print_error(const std::string& msg);

}  // namespace onyx::cli
