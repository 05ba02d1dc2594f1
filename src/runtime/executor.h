// Running compiled graphs: frames of slot values, one step after another.
#pragma once
#include <vector>

#include "runtime/plan.h"
#include "runtime/run_context.h"
#include "runtime/thread_pool.h"

namespace onyx::runtime {

/// The live values of one run of a CompiledGraph.
struct Frame {
  const CompiledGraph* graph = nullptr;
  std::vector<Value> values;
  RunContext* run = nullptr;  ///< the run this frame belongs to (limits, terminate)
  bool is_main = false;       ///< the main graph's frame (its steps may use the run's arena)
};

/// The value of `slot` in `f`: constants are read from the plan, the rest from the frame.
const Value& frame_value(const Frame& f, int slot);

/// Fills constants and captured outer values (looked up by name in `parent`); a
/// subgraph's frame joins its parent's run.
void init_frame(Frame& f, const CompiledGraph& g, const Frame* parent, RunContext* run);

/// Runs every step of f.graph in order, checking the terminate flag before each.
void run_frame(Frame& f, ThreadPool* pool);

/// What run_step reports to the first run of a signature (see StepMemo).
struct StepTrace {
  bool inferred = false;     ///< the shape function ran
  uint64_t values_read = 0;  ///< then: shape::InferContext::values_read()
  std::vector<ir::TypeInfo> types;             ///< then: what it inferred
  const kernels::KernelDef* kernel = nullptr;  ///< the kernel picked by dtype at run time
};

/// Runs one step: infers output shapes (unless static or given by `memo`), allocates,
/// calls the kernel. `frame` is the frame the step belongs to (for subgraphs); may be
/// null when folding. `trace`, when given, is filled for the signature's memo.
void run_step(const CompiledGraph& g, const Step& step, const std::vector<const Value*>& in,
              std::vector<Value>& out, Frame* frame, ThreadPool* pool, RunContext& run,
              const StepMemo* memo = nullptr, StepTrace* trace = nullptr);

/// The TypeInfo describing a concrete value.
ir::TypeInfo type_of_value(const Value& v, const ir::TypeInfo* declared);

}  // namespace onyx::runtime
