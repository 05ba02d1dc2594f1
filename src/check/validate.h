// Static validation of a model, as onnx.checker and strict shape inference do it, plus a
// per-provider table of the nodes onyx cannot run. Used by `onyx check` and `onyx graph`.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onyx::check {

/// One thing wrong with a model (or, as a warning, something `check` could not verify).
struct Problem {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string where;    ///< "" for the main graph, else the subgraph / function path
  std::string node;     ///< node name ("" for graph-level problems or unnamed nodes)
  std::string op_type;  ///< "" for graph-level problems
  std::string domain;
  int opset = 0;
  std::string message;  ///< full sentence naming the node and the fault
};

/// A node a provider cannot run.
struct Unsupported {
  std::string where;
  std::string node;
  std::string op_type;
  std::string domain;
  int opset = 0;
  std::vector<std::string> input_types;  ///< as inferred ("float[1, 3]", "?" unknown)
  std::string reason;
};

struct ProviderReport {
  std::string provider;  ///< "cpu", "wasm"
  size_t nodes = 0;      ///< nodes looked at (incl. subgraphs)
  std::vector<Unsupported> unsupported;
};

struct Options {
  std::vector<std::string> providers = {"cpu"};
  /// Constant subexpressions are evaluated (so Reshape etc. get exact shapes) when every
  /// input and output holds at most this many elements.
  int64_t fold_limit = 4096;
};

struct Report {
  std::vector<Problem> problems;
  std::vector<ProviderReport> providers;
  size_t nodes = 0;
  /// Inferred (merged with declared) types of every value, per graph.
  std::map<const ir::Graph*, std::map<std::string, ir::TypeInfo>> types;
  size_t errors() const;
  size_t warnings() const;
};

/// The providers `check` knows ("cpu", "wasm").
const std::vector<std::string>& known_providers();

/// Validates `model` and, for each provider in `opts`, lists the nodes it cannot run.
/// Never throws for a loaded model: every fault becomes a Problem.
Report check_model(const ir::Model& model, const Options& opts = {});

}  // namespace onyx::check
