// Session: load a model once, run it many times. This header, with dtype.h, error.h and
// tensor.h beside it, is onyx's public C++ API; it includes nothing of src/.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/error.h"
#include "onyx/tensor.h"

namespace onyx {

/// A graph input or output as declared by the model.
struct IoInfo {
  std::string name;
  std::string type;                  ///< "float[N, 3, 224, 224]"
  /// The type as onnxruntime spells it: "tensor(float)", "seq(tensor(int64))",
  /// "optional(tensor(float))", "map(string,tensor(float))".
  std::string onnx_type;
  DType dtype = DType::kUndefined;   ///< element type (tensors) or element of a sequence
  bool is_tensor = true;
  bool has_shape = false;
  std::vector<int64_t> dims;         ///< -1 where symbolic or unknown
  std::vector<std::string> dim_names;  ///< symbol name where symbolic, else ""
  bool has_default = false;          ///< an initializer gives a default value
};

/// What the model file says about itself (ModelProto and its main GraphProto).
struct ModelMetadata {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;        ///< the model's doc string
  std::string graph_name;
  std::string graph_doc_string;  ///< the graph's doc string: empty today (the loader drops it)
  std::map<std::string, int64_t> opset_imports;  ///< domain ("" is the default) -> version
  /// metadata_props in file order (keys may repeat in a malformed file).
  std::vector<std::pair<std::string, std::string>> metadata_props;
};

/// How much the graph is rewritten before it is planned (src/opt/).
enum class GraphOptimization {
  kNone,   ///< the graph as the file has it
  kBasic,  ///< standard-op rewrites: folding, dead nodes, BatchNormalization folding, ...
  kAll,    ///< basic, plus fusions into onyx's own fused kernels
};

/// How a session is planned and what its runs may use. The limits protect a process from
/// a model (or inputs) that asks for more than it should: a run that would pass one ends
/// with an onyx::Error of code kLimit naming the node, before the memory is taken.
/// 0 turns a limit off.
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

/// The wall time of one node in a run (RunOptions::profile).
struct NodeTime {
  std::string node;     ///< the node's name ("" when the model gave none)
  std::string op_type;  ///< as planned: a fused node shows its ai.onyx type (FusedConv, ...)
  int index = 0;        ///< the node's place in the planned order
  double ms = 0;
};

/// Per-call options of Session::run.
struct RunOptions {
  // Declared so RunOptions is not an aggregate: `run(feeds, {"name"})` then picks the
  // output-names overload instead of turning "name" into the terminate flag.
  RunOptions() = default;
  /// Set from any thread to stop the run: it stops before its next node (or the next
  /// iteration of a Loop/Scan body) and run() throws onyx::Error with code kCancelled.
  std::atomic<bool> terminate{false};
  /// When set, run() appends the wall time of each main-graph node it executes, in the
  /// order run (nodes folded at planning or whose result this input signature memoized
  /// are not run and not listed; a Loop/If/Scan counts its subgraphs in its own time).
  /// Timing costs a clock read per node, nothing when null.
  std::vector<NodeTime>* profile = nullptr;
};

/// A loaded, checked and planned model.
///
/// Thread safety: every const member and run() may be called from any number of threads
/// at once on one session, whatever SessionOptions::threads is; the calls share the
/// session's plan, weights and thread pool, and each run keeps its own values. The
/// session must outlive the calls.
class Session {
 public:
  /// Loads, checks and plans a model file (external data is read from its folder).
  /// Throws onyx::Error naming the file and the fault.
  static std::unique_ptr<Session> open(const std::string& path, const SessionOptions& opts = {});
  /// Loads, checks and plans a serialized ModelProto held in memory; the bytes are copied,
  /// so they need not outlive the call. `base_dir` is the folder external data is read
  /// from ("": a model that refers to external data is refused).
  static std::unique_ptr<Session> open_bytes(const void* data, size_t size,
                                             const SessionOptions& opts = {},
                                             const std::string& base_dir = "");
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const ModelMetadata& metadata() const;
  const SessionOptions& options() const;

  /// Position of the output called `name` in outputs(); throws onyx::Error
  /// (kInvalidArgument) listing the model's outputs when there is none.
  size_t output_index(const std::string& name) const;

  /// Runs the model. `feeds` names every required input; returns the outputs in the
  /// order of outputs(). Throws onyx::Error on a missing/unknown input, a wrong dtype,
  /// rank or fixed dim (naming the input and both shapes), a failing node, a limit of
  /// SessionOptions reached (kLimit), or `options.terminate` set (kCancelled).
  ///
  /// May be called from any number of threads at once (see the class comment).
  ///
  /// The returned values belong to the caller: none of them shares memory with the
  /// session (weights, constants), with a feed, or with another returned value, so they
  /// may be written to and kept after the session is gone.
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& feeds,
                         const RunOptions& options = {});

  /// As run(feeds, options), but returns only the outputs named in `output_names`, in
  /// that order (a name may repeat; an empty list means all outputs). Today the whole
  /// graph still runs; the others are dropped. Throws kInvalidArgument on an unknown name.
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& feeds,
                         const std::vector<std::string>& output_names, const RunOptions& options = {});

  struct Impl;

 private:
  friend struct SessionAccess;  // onyx's own tools (src/runtime/session_internal.h)
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
