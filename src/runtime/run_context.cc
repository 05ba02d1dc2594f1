#include "runtime/run_context.h"

#include <cstdlib>
#include <cstring>
#include <string>

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

RunContext::RunContext(const SessionOptions& limits, const RunOptions* options)
    : limits_(limits),
      terminate_(options ? &options->terminate : nullptr),
      budget_(std::make_shared<Budget>()) {}

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

Tensor RunContext::allocate(const ir::Node& node, size_t output, DType dt, const Dims& dims) {
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
  std::shared_ptr<Budget> budget = budget_;
  void* p = nullptr;
  std::shared_ptr<void> holder;
  bool handed = false;  // once the deleter owns p, it also gives the bytes back
  try {
    if (dt == DType::kString) {
      auto* arr = new std::string[numel > 0 ? numel : 1];
      p = arr;
      handed = true;
      holder = std::shared_ptr<void>(arr, [budget, bytes](void* q) {
        delete[] static_cast<std::string*>(q);
        budget->live.fetch_sub(bytes, std::memory_order_relaxed);
      });
    } else {
      size_t alloc = (bytes + kAlign - 1) / kAlign * kAlign;
      if (alloc == 0) alloc = kAlign;
      p = std::aligned_alloc(kAlign, alloc);
      if (!p) throw std::bad_alloc();
      std::memset(p, 0, alloc);
      handed = true;
      holder = std::shared_ptr<void>(p, [budget, bytes](void* q) {
        std::free(q);
        budget->live.fetch_sub(bytes, std::memory_order_relaxed);
      });
    }
  } catch (const std::bad_alloc&) {
    if (!handed) budget_->live.fetch_sub(bytes, std::memory_order_relaxed);
    fail_runtime("{}: out of memory allocating {} for {} {}{}", node.describe(), format_bytes(bytes),
                 out_name(), dtype_name(dt), dims_str(dims));
  }
  return Tensor::view(dt, dims, p, std::move(holder));
}

}  // namespace onyx::runtime
