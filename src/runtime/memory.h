// Arena memory for the tensors the executor allocates in the main graph of a run.
//
// The first run with a given input signature (the dtypes and dims of the graph inputs)
// allocates from the heap and records, for every output the executor allocated, its size
// and the steps between its allocation and the moment its buffer was freed (through the
// buffer's deleter, so views that keep a buffer alive are accounted for). Buffers that
// outlive the run (graph outputs) are left out. The recording becomes a plan: offsets in
// one arena (src/plan/arena.h), cached per signature (a plan is only offsets: cheap to
// keep many). Later runs with that signature take an arena buffer from the session's one
// pool of raw buffers (one per concurrent run, grown to the largest plan asked for), so
// memory is bounded by (concurrent runs) x (largest arena), whatever the number of shapes.
//
// The same first run also notes, per step of the main graph, what the signature alone
// fixes (a StepMemo): the output types it inferred, the kernel it picked by dtype, and the
// outputs themselves when they are computed from shapes and constants only (Shape ->
// Gather -> Concat feeding a Reshape). Later runs with that signature skip the shape
// functions of those steps and do not run the steps whose outputs are memoized.
//
// Safety does not rest on the plan being right: a planned region is handed out only when
// it is at least as large as asked and every buffer sharing its bytes (earlier in the
// plan) has been freed; otherwise that one tensor comes from the heap. An arena goes back
// to its pool only when every view into it is gone.
#pragma once
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "ir/graph.h"
#include "onyx/tensor.h"
#include "plan/arena.h"

namespace onyx::kernels {
struct KernelDef;
}

namespace onyx::runtime {

/// The input signature of a run: dtype and dims of every graph input, flattened.
using Signature = std::vector<int64_t>;

class ArenaPlan;

/// The session's raw arena buffers not in use, shared by every plan.
class BufferPool {
 public:
  ~BufferPool();
  /// A buffer of at least `bytes` (64-byte aligned), with its capacity; null on failure.
  void* take(uint64_t bytes, uint64_t* capacity);
  void give(void* data, uint64_t capacity);

 private:
  std::mutex mu_;
  std::vector<std::pair<void*, uint64_t>> free_;
};

/// One arena buffer in use by a run (or by tensors that outlived it).
struct ArenaBuffer {
  std::shared_ptr<ArenaPlan> plan;
  std::shared_ptr<BufferPool> pool;
  void* data = nullptr;
  uint64_t capacity = 0;
  std::vector<std::atomic<bool>> alive;  ///< per planned buffer: a view into it exists
  ~ArenaBuffer();
};

/// The plan of one signature and its pool of arena buffers.
class ArenaPlan : public std::enable_shared_from_this<ArenaPlan> {
 public:
  struct Entry {
    int step = 0;
    int output = 0;
    uint64_t bytes = 0;
    uint64_t offset = 0;
    std::vector<int> shares_with;
  };
  ArenaPlan(std::vector<Entry> entries, uint64_t total);

  /// An arena buffer for one run, its bytes from `pool`; null if memory is short.
  std::shared_ptr<ArenaBuffer> acquire(const std::shared_ptr<BufferPool>& pool);
  /// The entry for output `output` of step `step`, or -1.
  int find(int step, int output) const;
  const Entry& entry(int i) const { return entries_[static_cast<size_t>(i)]; }
  uint64_t total() const { return total_; }

 private:
  std::vector<Entry> entries_;
  std::vector<std::vector<int>> by_step_;  ///< step -> entries (by output index)
  uint64_t total_ = 0;
};

/// What the first run with a signature learned about one main-graph step.
struct StepMemo {
  /// The output types inferred at run time; empty: infer them on every run (they depend
  /// on more than the signature, or were static already).
  std::vector<ir::TypeInfo> types;
  std::vector<Dims> dims;  ///< with `types`: their dims
  /// The kernel picked by the inputs' dtypes, for a step planned without one (or null).
  const kernels::KernelDef* kernel = nullptr;
  /// With `skip`: the outputs, fixed by the signature alone; the step is not run.
  std::vector<Value> values;
  bool skip = false;
  /// Concat in place (plan.h's Step::concat_targets), as this signature's shapes allow it:
  /// output i is written into the output of the Concat at step concat_slices[i].first,
  /// from element concat_slices[i].second (first -1: not).
  std::vector<std::pair<int, int64_t>> concat_slices;
  /// For a Concat some of whose inputs are written in place: its output's dtype and dims
  /// (made when the first of those producers runs). Empty dims: none is.
  DType concat_dtype = DType::kUndefined;
  Dims concat_dims;
};

/// What the runs of one input signature reuse; read-only once in the MemoryPlanner.
struct SignaturePlan {
  std::shared_ptr<ArenaPlan> arena;  ///< null: no arena (nothing to place)
  std::vector<StepMemo> steps;       ///< per main-graph step; empty: nothing learned
  /// The first run found Concat outputs to write in place (StepMemo::concat_slices), which
  /// it could not do itself (their shapes were not known yet when their producers ran):
  /// the next run does, from the heap, and records the arena plan that places them.
  bool rerecord = false;
};

/// What one run recorded: per executor-allocated output, its size and lifetime.
class Recording {
 public:
  /// The main graph of the run is at `step`.
  void set_step(int step) { step_.store(step, std::memory_order_relaxed); }
  /// Notes an allocation for output `output` of the current step and returns its id.
  int allocated(int output, uint64_t bytes);
  /// The buffer of allocation `id` was freed (at the current step, or after the run).
  void freed(int id);
  /// The run ended: buffers not freed by now escaped (graph outputs) and are left out.
  std::shared_ptr<ArenaPlan> finish();

 private:
  struct Item {
    int step, output;
    uint64_t bytes;
    int freed_at = -1;
  };
  std::mutex mu_;
  std::vector<Item> items_;
  bool finished_ = false;
  std::atomic<int> step_{-1};
};

/// Per session: the plans of recent signatures (least recently used dropped first).
class MemoryPlanner {
 public:
  explicit MemoryPlanner(size_t capacity = 256) : capacity_(capacity) {}
  std::shared_ptr<const SignaturePlan> find(const Signature& sig);
  void insert(const Signature& sig, std::shared_ptr<const SignaturePlan> plan);
  const std::shared_ptr<BufferPool>& pool() const { return pool_; }
  size_t size();

 private:
  std::mutex mu_;
  size_t capacity_;
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
  /// Most recent first.
  std::list<std::pair<Signature, std::shared_ptr<const SignaturePlan>>> plans_;
};

}  // namespace onyx::runtime
