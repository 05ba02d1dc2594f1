// Stopping work inside a node. The executor checks RunOptions::terminate between nodes;
// a single node can still ask for hours of work within the memory limits (a 2048x2048
// pooling window over a 64 MiB image, a convolution whose kernel is as large as its
// input, a naive DFT of a million points). So the long loops of the kernels poll the
// token of the work they serve: a run's terminate flag, or the deadline that bounds the
// constant folding of session creation. The token is a thread-local pointer, installed
// by Session::run and the planner for the calling thread and carried by the thread pool
// into its workers for each parallel_for, so kernels need no extra argument.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace onyx {

/// What stops work in progress: a flag set from another thread, and/or a deadline.
struct CancelToken {
  const std::atomic<bool>* flag = nullptr;
  bool has_deadline = false;
  std::chrono::steady_clock::time_point deadline{};
  /// What the error says ("run terminated (RunOptions::terminate)", ...).
  const char* what = "work cancelled";

  bool requested() const {
    if (flag && flag->load(std::memory_order_relaxed)) return true;
    return has_deadline && std::chrono::steady_clock::now() >= deadline;
  }
};

namespace detail {
inline thread_local const CancelToken* t_cancel = nullptr;
/// Throws Error(kCancelled) with the token's reason (cancel.cc: keeps error.h out of here).
[[noreturn]] void throw_cancelled(const CancelToken& t);
}  // namespace detail

/// The calling thread's token, or null.
inline const CancelToken* current_cancel() { return detail::t_cancel; }

/// Installs a token for the calling thread for the scope's lifetime (the previous one
/// comes back after). A null token clears it.
class CancelScope {
 public:
  explicit CancelScope(const CancelToken* t) : prev_(detail::t_cancel) { detail::t_cancel = t; }
  ~CancelScope() { detail::t_cancel = prev_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const CancelToken* prev_;
};

/// Throws Error(kCancelled) when the calling thread's token asks to stop. A thread-local
/// load and a relaxed atomic load (a clock read with a deadline): kernels call it once
/// per row, plane or tile of their long loops, never per element of a short one.
inline void poll_cancel() {
  const CancelToken* t = detail::t_cancel;
  if (t && t->requested()) detail::throw_cancelled(*t);
}

/// Polls once per `every` units of work that its caller reports (multiply-adds, taps,
/// elements): a loop whose items range from a few operations to millions polls as often
/// as its work needs, at the cost of a subtraction per item.
class CancelPoll {
 public:
  explicit CancelPoll(int64_t every = int64_t{1} << 20) : every_(every) {}
  void operator()(int64_t work) {
    if ((left_ -= work + 1) <= 0) {
      poll_cancel();
      left_ = every_;
    }
  }

 private:
  int64_t every_;
  int64_t left_ = 0;
};

}  // namespace onyx
