// Static validation of a model file, as `onyx check --strict` does it: the checks of
// onnx.checker and strict shape inference, and the nodes a provider has no kernel for.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace onyx {

/// One thing wrong with a model (an error), or something the check could not verify (a warning).
struct CheckProblem {
  bool is_error = true;
  std::string where;    ///< "" for the main graph, else the subgraph / function path
  std::string node;     ///< node name ("" for graph-level problems or unnamed nodes)
  std::string op_type;  ///< "" for graph-level problems
  std::string domain;
  int opset = 0;
  std::string message;  ///< a sentence naming the node and the fault
};

/// A node a provider cannot run.
struct CheckUnsupported {
  std::string provider;  ///< "cpu", "wasm"
  std::string where;
  std::string node;
  std::string op_type;
  std::string domain;
  int opset = 0;
  std::vector<std::string> input_types;  ///< as inferred ("float[1, 3]", "?" unknown)
  std::string reason;
};

/// What check_model_file found.
struct CheckReport {
  std::vector<CheckProblem> problems;
  std::vector<CheckUnsupported> unsupported;
  std::vector<std::string> providers;  ///< the providers looked at
  size_t nodes = 0;                    ///< nodes looked at, subgraphs included
  size_t errors() const;
  size_t warnings() const;
  /// `onyx check` passes: no error. `onyx check --strict` also needs no unsupported node.
  bool valid() const { return errors() == 0; }
  bool strict_ok() const { return valid() && unsupported.empty(); }
};

/// Loads and validates the model file at `path` and lists, for each of `providers`
/// ("cpu", the native build; "wasm", the WebAssembly build), the nodes it cannot run.
/// Throws onyx::Error when the file cannot be read or parsed as a model; every other
/// fault becomes a CheckProblem.
CheckReport check_model_file(const std::string& path, const std::vector<std::string>& providers = {"cpu"});

}  // namespace onyx
