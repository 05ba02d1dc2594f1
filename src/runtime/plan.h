// The executable form of a graph: values become numbered slots, nodes become steps
// with their kernel, shape function and the slots to release after them.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/registry.h"
#include "runtime/thread_pool.h"
#include "shape/infer.h"

namespace onyx::runtime {

struct CompiledGraph;

struct Slot {
  std::string name;
  ir::TypeInfo type;   ///< statically inferred (possibly symbolic) type
  Value constant;      ///< initializer, folded constant, or default of an input
  bool is_const = false;
};

struct Step {
  const ir::Node* node = nullptr;
  std::vector<int> in;   ///< -1: omitted optional input
  std::vector<int> out;  ///< -1: output not requested
  const kernels::KernelDef* kernel = nullptr;  ///< reference kernel; null: chosen at run time by dtype
  std::unique_ptr<kernels::Kernel> impl;       ///< the kernel object run (optimized or reference)
  shape::ShapeFn shape = nullptr;
  bool static_shapes = false;  ///< all output shapes known statically: skip run-time inference
  std::vector<ir::TypeInfo> static_types;  ///< with static_shapes: the output types (per output)
  std::vector<Dims> static_dims;           ///< with static_shapes: their dims
  bool folded = false;         ///< outputs computed at plan time
  std::vector<int> release;    ///< slots whose last use is this step
  /// Concat in place (compile.cc, plan_concat_in_place): output i may be written straight
  /// into its slice of the output of the Concat at step concat_targets[i] (-1: none).
  /// Where the slice starts, and whether the shapes allow it at all, each signature's
  /// StepMemo says. Empty: no output of this step may.
  std::vector<int> concat_targets;
  /// A Concat whose inputs may already lie in its output (written there by their
  /// producers, or adjacent slices of one buffer): run_step looks for that first.
  bool concat_in_place = false;
  /// With concat_in_place, per input: the value whose producer may write it in place (the
  /// input, or the value a view-making input is made from) and that producer's step and
  /// output; slot -1: none.
  struct ConcatSource {
    int slot = -1, step = -1, output = -1;
  };
  std::vector<ConcatSource> concat_sources;
  int index = 0;               ///< position in CompiledGraph::steps
  std::map<std::string, std::unique_ptr<CompiledGraph>> subgraphs;
};

struct CompiledGraph {
  const ir::Graph* graph = nullptr;
  std::vector<Slot> slots;
  std::map<std::string, int, std::less<>> by_name;
  std::vector<Step> steps;
  std::vector<int> inputs;   ///< formal inputs in order
  std::vector<int> outputs;  ///< graph outputs in order
  std::vector<std::pair<int, std::string>> captures;  ///< slot <- outer value of that name
  std::vector<int> capture_outer;  ///< per capture: the slot of the value in the enclosing graph
  /// The value a frame reads for `slot`: a constant's from the plan, others from the frame.
  bool frame_holds(int slot) const {
    const Slot& s = slots[static_cast<size_t>(slot)];
    return !s.is_const;
  }
};

/// Options for planning.
struct PlanOptions {
  bool fold_constants = true;
  /// Reference kernels only (no optimized kernel objects, no fast paths).
  bool reference_kernels = false;
  ThreadPool* pool = nullptr;  ///< the session's pool, for kernels that prepack in parallel
  /// Largest output a folded node may make at planning; a bigger one is computed by each
  /// run instead (so the session does not hold it, and the run's limits apply to it).
  uint64_t fold_max_bytes = uint64_t{64} << 20;
  /// Bytes the folded constants of all the graph's nodes may hold together (0: no limit);
  /// once they are spent, later nodes are computed by each run instead. Without it a
  /// chain of 40 nodes, each folding to 64 MiB, would keep 2.5 GiB in the session.
  uint64_t fold_total_bytes = uint64_t{256} << 20;
  /// Seconds that folding may take in all (0: no limit). The kernels poll the deadline
  /// (base/cancel.h); a node still computing when it passes stays in the graph and runs
  /// each time, under the run's RunOptions::terminate. Without it a 16 KiB model of a
  /// few constant nodes (a 2896^2 double MatMul, a convolution with a 1024x1024 kernel)
  /// kept session creation busy for minutes.
  double fold_max_seconds = 2.0;
};

/// Ops whose outputs are not a function of their inputs alone (random ops) or whose
/// semantics the planner does not know (other domains): never folded or memoized.
bool never_fold(const ir::Node& n);

/// Compiles the main graph. Throws onyx::Error naming the node at fault.
std::unique_ptr<CompiledGraph> compile_graph(const ir::Graph& g, const PlanOptions& opts);

/// Inlines calls of model-local functions (recursively) into a copy of the graph.
std::shared_ptr<ir::Graph> inline_functions(const ir::Model& model);

}  // namespace onyx::runtime
