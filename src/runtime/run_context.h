// What one Session::run shares across its frames (the main graph and every subgraph it
// runs): the resource limits, the bytes its tensors hold, the terminate flag, and the
// arena memory plan of its input signature (src/runtime/memory.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "onyx/session.h"
#include "onyx/tensor.h"
#include "runtime/memory.h"

namespace onyx::runtime {

class RunContext {
 public:
  /// `options` may be null (no terminate flag); `planner` null: no arena (every tensor
  /// from the heap). All must outlive the run.
  RunContext(const SessionOptions& limits, const RunOptions* options, MemoryPlanner* planner = nullptr,
             Signature signature = {});
  ~RunContext();

  /// Output `output` of the main-graph step being run (see begin_step), allocated by the
  /// executor: from the run's arena where the plan has room for it, else from the heap.
  /// Zero-filled when `zero`. Counted against the limits like allocate().
  /// `plan_output`: the output index the arena plan keys it by when not `output` (a
  /// Concat's output allocated early, at the step of one of its producers: see executor.cc).
  Tensor allocate_output(const ir::Node& node, size_t output, DType dt, const Dims& dims, bool zero,
                         int plan_output = -1);

  /// A zero-filled heap tensor for output `output` of `node`, counted against
  /// max_tensor_bytes and max_run_bytes; throws Error(kLimit) naming the node, the shape,
  /// the size and the option before allocating anything that would pass a limit. The
  /// count drops when the buffer is freed (also after the run, for outputs).
  Tensor allocate(const ir::Node& node, size_t output, DType dt, const Dims& dims);

  /// The main graph is at step `step` (subgraph frames do not call this).
  void begin_step(int step) {
    step_ = step;
    if (recording_) recording_->set_step(step);
  }
  /// Subgraph frames nest inside the current step; their tensors never use the arena.
  void enter_subgraph() { ++depth_; }
  void leave_subgraph() { --depth_; }
  /// The run ended normally: a recording becomes the plan of its signature.
  void finish();

  /// What earlier runs with this signature learned about the main graph's steps, or null.
  const SignaturePlan* memo() const { return sig_plan_.get(); }
  /// While this run is the first with its signature: where the executor notes what it
  /// learns (SignaturePlan::steps), kept by finish(); else null.
  SignaturePlan* memo_to_record() { return building_.get(); }
  /// True when a memoized value (StepMemo::values) of this run's signature holds
  /// `storage`: an output that views it must be copied before it is handed out.
  bool memo_holds(const void* storage) const;

  /// Throws Error(kCancelled) naming `node` when RunOptions::terminate is set.
  void check_terminate(const ir::Node& node) const {
    if (terminate_ && terminate_->load(std::memory_order_relaxed)) cancelled(node);
  }
  /// Throws Error(kLimit) when `iterations` passes max_loop_iterations.
  void check_iterations(const ir::Node& node, int64_t iterations) const;

  /// Where the main graph's node times go (RunOptions::profile), or null.
  std::vector<NodeTime>* profile() const { return profile_; }

  uint64_t live_bytes() const { return budget_->live.load(std::memory_order_relaxed); }
  uint64_t peak_bytes() const { return budget_->peak.load(std::memory_order_relaxed); }
  const SessionOptions& limits() const { return limits_; }

 private:
  struct Budget {
    std::atomic<uint64_t> live{0};
    std::atomic<uint64_t> peak{0};
  };
  [[noreturn]] void cancelled(const ir::Node& node) const;
  /// Checks the limits and counts `bytes` as held; returns the budget to give back to.
  uint64_t charge(const ir::Node& node, size_t output, DType dt, const Dims& dims);
  Tensor heap_tensor(const ir::Node& node, size_t output, DType dt, const Dims& dims, uint64_t bytes,
                     bool zero, int record_id);

  SessionOptions limits_;
  const std::atomic<bool>* terminate_ = nullptr;
  std::vector<NodeTime>* profile_ = nullptr;
  std::shared_ptr<Budget> budget_;  ///< shared with the buffers, which may outlive the run
  MemoryPlanner* planner_ = nullptr;
  Signature signature_;
  std::shared_ptr<const SignaturePlan> sig_plan_;
  std::shared_ptr<SignaturePlan> building_;
  std::shared_ptr<ArenaPlan> plan_;
  std::shared_ptr<ArenaBuffer> arena_;
  std::shared_ptr<Recording> recording_;
  int step_ = -1;
  int depth_ = 0;
};

/// "1.5 GiB": a byte count in the units the limits are given in.
std::string format_bytes(uint64_t bytes);

}  // namespace onyx::runtime
