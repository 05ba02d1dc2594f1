// What one Session::run shares across its frames (the main graph and every subgraph it
// runs): the resource limits, the bytes its tensors hold, and the terminate flag.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "onyx/session.h"
#include "onyx/tensor.h"

namespace onyx::runtime {

class RunContext {
 public:
  /// `options` may be null (no terminate flag). Both must outlive the run.
  RunContext(const SessionOptions& limits, const RunOptions* options);

  /// A zero-filled tensor for output `output` of `node`, counted against
  /// max_tensor_bytes and max_run_bytes; throws Error(kLimit) naming the node, the
  /// shape, the size and the option before allocating anything that would pass a limit.
  /// The count drops when the buffer is freed (also after the run, for outputs).
  Tensor allocate(const ir::Node& node, size_t output, DType dt, const Dims& dims);

  /// Throws Error(kCancelled) naming `node` when RunOptions::terminate is set.
  void check_terminate(const ir::Node& node) const {
    if (terminate_ && terminate_->load(std::memory_order_relaxed)) cancelled(node);
  }
  /// Throws Error(kLimit) when `iterations` passes max_loop_iterations.
  void check_iterations(const ir::Node& node, int64_t iterations) const;

  uint64_t live_bytes() const { return budget_->live.load(std::memory_order_relaxed); }
  uint64_t peak_bytes() const { return budget_->peak.load(std::memory_order_relaxed); }
  const SessionOptions& limits() const { return limits_; }

 private:
  struct Budget {
    std::atomic<uint64_t> live{0};
    std::atomic<uint64_t> peak{0};
  };
  [[noreturn]] void cancelled(const ir::Node& node) const;

  SessionOptions limits_;
  const std::atomic<bool>* terminate_ = nullptr;
  std::shared_ptr<Budget> budget_;  ///< shared with the buffers, which may outlive the run
};

/// "1.5 GiB": a byte count in the units the limits are given in.
std::string format_bytes(uint64_t bytes);

}  // namespace onyx::runtime
