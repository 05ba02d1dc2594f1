// Session: load a model once, run it many times.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/error.h"
#include "onyx/tensor.h"

namespace onyx {

namespace ir {
struct Model;
}

/// A graph input or output as declared by the model.
struct IoInfo {
  std::string name;
  std::string type;                  ///< "float[N, 3, 224, 224]"
  DType dtype = DType::kUndefined;   ///< element type (tensors) or element of a sequence
  bool is_tensor = true;
  bool has_shape = false;
  std::vector<int64_t> dims;         ///< -1 where symbolic or unknown
  std::vector<std::string> dim_names;  ///< symbol name where symbolic, else ""
  bool has_default = false;          ///< an initializer gives a default value
};

/// How a session is planned and what its runs may use. The limits protect a process from
/// a model (or inputs) that asks for more than it should: a run that would pass one ends
/// with an onyx::Error of code kLimit naming the node, before the memory is taken.
/// 0 turns a limit off.
/// How much the graph is rewritten before it is planned (src/opt/).
enum class GraphOptimization {
  kNone,   ///< the graph as the file has it
  kBasic,  ///< standard-op rewrites: folding, dead nodes, BatchNormalization folding, ...
  kAll,    ///< basic, plus fusions into onyx's own fused kernels
};

struct SessionOptions {
  /// Threads of the session's intra-op pool (the calling thread counts as one).
  int threads = 1;
  GraphOptimization optimize = GraphOptimization::kAll;
  /// Run every node on its reference kernel (the spec-complete oracle the optimized
  /// kernels are tested against) instead of the optimized ones.
  bool reference_kernels = false;
  /// Largest single tensor a node may create, in bytes (strings count 32 bytes each).
  uint64_t max_tensor_bytes = uint64_t{2} << 30;  // 2 GiB
  /// Most bytes the tensors created by one run may hold at once.
  uint64_t max_run_bytes = uint64_t{8} << 30;  // 8 GiB
  /// Most iterations one Loop, Scan or SequenceMap node may run per execution.
  int64_t max_loop_iterations = 1000000;
};

/// Per-call options of Session::run.
struct RunOptions {
  /// Set from any thread to stop the run: it stops before its next node (or the next
  /// iteration of a Loop/Scan body) and run() throws onyx::Error with code kCancelled.
  std::atomic<bool> terminate{false};
};

class Session {
 public:
  /// Loads, checks and plans a model file. Throws onyx::Error naming the fault.
  static std::unique_ptr<Session> open(const std::string& path, const SessionOptions& opts = {});
  /// Plans an already loaded model.
  static std::unique_ptr<Session> create(std::shared_ptr<ir::Model> model,
                                         const SessionOptions& opts = {});
  ~Session();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const ir::Model& model() const;

  /// Runs the model. `feeds` names every required input; returns the outputs in the
  /// order of outputs(). Throws onyx::Error on a missing/unknown input, a wrong dtype,
  /// rank or fixed dim (naming the input and both shapes), a failing node, a limit of
  /// SessionOptions reached (kLimit), or `options.terminate` set (kCancelled).
  ///
  /// Thread safety: run() may be called from any number of threads at once on one
  /// session, whatever SessionOptions::threads is; the calls share the session's plan,
  /// weights and thread pool, and each keeps its own values. The session must outlive
  /// the calls.
  ///
  /// The returned values belong to the caller: none of them shares memory with the
  /// session (weights, constants), with a feed, or with another returned value, so they
  /// may be written to and kept after the session is gone.
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& feeds,
                         const RunOptions& options = {});

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
