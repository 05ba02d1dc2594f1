#include "runtime/run_context.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/big_alloc.h"
#include "base/error.h"

namespace onyx::runtime {

namespace {
constexpr size_t kAlign = 64;
}

std::string format_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", b);
  return fmt::format("{:.1f} {}", v, units[u]);
}

RunContext::RunContext(const SessionOptions& limits, const RunOptions* options, MemoryPlanner* planner,
                       Signature signature)
    : limits_(limits),
      terminate_(options ? &options->terminate : nullptr),
      profile_(options ? options->profile : nullptr),
      budget_(std::make_shared<Budget>()),
      planner_(planner),
      signature_(std::move(signature)) {
  if (!planner_) return;
  sig_plan_ = planner_->find(signature_);
  if (sig_plan_) {
    if (sig_plan_->rerecord) {  // the second run of the signature: see SignaturePlan
      recording_ = std::make_shared<Recording>();
      return;
    }
    plan_ = sig_plan_->arena;
    // Memory short: this run takes its tensors from the heap.
    if (plan_) arena_ = plan_->acquire(planner_->pool());
    return;
  }
  recording_ = std::make_shared<Recording>();
  building_ = std::make_shared<SignaturePlan>();
}

RunContext::~RunContext() = default;

void RunContext::finish() {
  if (!recording_) return;
  if (!building_) {  // a second recording (SignaturePlan::rerecord): the same memo, a new arena
    auto again = std::make_shared<SignaturePlan>(*sig_plan_);
    again->rerecord = false;
    again->arena = recording_->finish();
    recording_.reset();
    planner_->insert(signature_, std::move(again));
    return;
  }
  building_->arena = recording_->finish();
  recording_.reset();
  planner_->insert(signature_, std::move(building_));
}

bool RunContext::memo_holds(const void* storage) const {
  for (const SignaturePlan* p : {sig_plan_.get(), static_cast<const SignaturePlan*>(building_.get())}) {
    if (!p) continue;
    for (const StepMemo& m : p->steps)
      for (const Value& v : m.values)
        if (v.is_tensor() && v.tensor().storage() == storage) return true;
  }
  return false;
}

void RunContext::cancelled(const ir::Node& node) const {
  fail(ErrorCode::kCancelled, "run terminated (RunOptions::terminate) before {}", node.describe());
}

void RunContext::check_iterations(const ir::Node& node, int64_t iterations) const {
  if (limits_.max_loop_iterations > 0 && iterations > limits_.max_loop_iterations)
    fail(ErrorCode::kLimit,
         "{}: more than {} iterations, the most one Loop/Scan node may run "
         "(SessionOptions::max_loop_iterations; onyx: --max-loop-iterations)",
         node.describe(), limits_.max_loop_iterations);
}

uint64_t RunContext::charge(const ir::Node& node, size_t output, DType dt, const Dims& dims) {
  size_t es = dtype_size(dt);
  if (es == 0) fail_runtime("{}: cannot allocate a tensor of dtype {}", node.describe(), dtype_name(dt));
  int64_t numel = dims_numel(dims);
  auto out_name = [&] {
    std::string n = output < node.outputs.size() ? node.outputs[output] : std::string();
    return fmt::format("output {} ('{}')", output, n);
  };
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(es), &bytes))
    bytes = UINT64_MAX;
  if (limits_.max_tensor_bytes && bytes > limits_.max_tensor_bytes)
    fail(ErrorCode::kLimit,
         "{}: {} would be {}{} ({}), more than the largest tensor a run may create ({}; "
         "SessionOptions::max_tensor_bytes, onyx: --max-tensor-bytes)",
         node.describe(), out_name(), dtype_name(dt), dims_str(dims), format_bytes(bytes),
         format_bytes(limits_.max_tensor_bytes));
  uint64_t live = budget_->live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (limits_.max_run_bytes && live > limits_.max_run_bytes) {
    budget_->live.fetch_sub(bytes, std::memory_order_relaxed);
    fail(ErrorCode::kLimit,
         "{}: {} would be {}{} ({}), and the run already holds {}: more than a run may hold "
         "at once ({}; SessionOptions::max_run_bytes, onyx: --max-run-bytes)",
         node.describe(), out_name(), dtype_name(dt), dims_str(dims), format_bytes(bytes),
         format_bytes(live - bytes), format_bytes(limits_.max_run_bytes));
  }
  uint64_t peak = budget_->peak.load(std::memory_order_relaxed);
  while (live > peak && !budget_->peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return bytes;
}

Tensor RunContext::heap_tensor(const ir::Node& node, size_t output, DType dt, const Dims& dims, uint64_t bytes,
                               bool zero, int record_id) {
  std::shared_ptr<Budget> budget = budget_;
  std::shared_ptr<Recording> rec = record_id >= 0 ? recording_ : nullptr;
  void* p = nullptr;
  std::shared_ptr<void> holder;
  bool handed = false;  // once the deleter owns p, it also gives the bytes back
  try {
    if (dt == DType::kString) {
      int64_t n = dims_numel(dims);
      auto* arr = new std::string[n > 0 ? n : 1];
      p = arr;
      handed = true;
      holder = std::shared_ptr<void>(arr, [budget, bytes](void* q) {
        delete[] static_cast<std::string*>(q);
        budget->live.fetch_sub(bytes, std::memory_order_relaxed);
      });
    } else {
      size_t alloc = (bytes + kAlign - 1) / kAlign * kAlign;
      if (alloc == 0) alloc = kAlign;
      p = alloc_aligned(alloc);
      if (!p) throw std::bad_alloc();
      if (zero) std::memset(p, 0, alloc);
      handed = true;
      holder = std::shared_ptr<void>(p, [budget, bytes, rec, record_id](void* q) {
        std::free(q);
        budget->live.fetch_sub(bytes, std::memory_order_relaxed);
        if (rec) rec->freed(record_id);
      });
    }
  } catch (const std::bad_alloc&) {
    if (!handed) budget_->live.fetch_sub(bytes, std::memory_order_relaxed);
    std::string n = output < node.outputs.size() ? node.outputs[output] : std::string();
    fail_runtime("{}: out of memory allocating {} for output {} ('{}') {}{}", node.describe(),
                 format_bytes(bytes), output, n, dtype_name(dt), dims_str(dims));
  }
  return Tensor::view(dt, dims, p, std::move(holder));
}

Tensor RunContext::allocate(const ir::Node& node, size_t output, DType dt, const Dims& dims) {
  uint64_t bytes = charge(node, output, dt, dims);
  return heap_tensor(node, output, dt, dims, bytes, true, -1);
}

Tensor RunContext::allocate_output(const ir::Node& node, size_t output, DType dt, const Dims& dims, bool zero,
                                   int plan_output) {
  const int key = plan_output >= 0 ? plan_output : static_cast<int>(output);
  uint64_t bytes = charge(node, output, dt, dims);
  const bool main = depth_ == 0 && step_ >= 0 && dt != DType::kString;
  if (main && arena_) {
    int e = plan_->find(step_, key);
    if (e >= 0 && bytes <= plan_->entry(e).bytes) {
      const ArenaPlan::Entry& en = plan_->entry(e);
      bool free_now = !arena_->alive[static_cast<size_t>(e)].load(std::memory_order_acquire);
      for (int o : en.shares_with)
        free_now = free_now && !arena_->alive[static_cast<size_t>(o)].load(std::memory_order_acquire);
      if (free_now) {
        arena_->alive[static_cast<size_t>(e)].store(true, std::memory_order_release);
        void* p = static_cast<char*>(arena_->data) + en.offset;
        if (zero && bytes) std::memset(p, 0, bytes);
        std::shared_ptr<ArenaBuffer> arena = arena_;
        std::shared_ptr<Budget> budget = budget_;
        std::shared_ptr<void> holder(p, [arena, budget, bytes, e](void*) {
          arena->alive[static_cast<size_t>(e)].store(false, std::memory_order_release);
          budget->live.fetch_sub(bytes, std::memory_order_relaxed);
        });
        return Tensor::view(dt, dims, p, std::move(holder));
      }
    }
  }
  int id = main && recording_ ? recording_->allocated(key, bytes) : -1;
  return heap_tensor(node, output, dt, dims, bytes, zero, id);
}

}  // namespace onyx::runtime
