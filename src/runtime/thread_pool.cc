#include "runtime/thread_pool.h"

#include <algorithm>

namespace onyx {

ThreadPool::ThreadPool(int threads) {
#ifndef __EMSCRIPTEN__
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
#else
  (void)threads;
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++active_;
    while (next_ < n_) {
      int64_t b = next_;
      int64_t e = std::min(n_, b + chunk_);
      next_ = e;
      lock.unlock();
      try {
        (*job_)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_) error_ = std::current_exception();
      }
      lock.lock();
    }
    if (--active_ == 0) done_cv_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  n_ = n;
  next_ = 0;
  chunk_ = std::max<int64_t>(1, n / (4 * size()));
  error_ = nullptr;
  ++generation_;
  ++active_;  // the calling thread takes part
  cv_.notify_all();
  while (next_ < n_) {
    int64_t b = next_;
    int64_t e = std::min(n_, b + chunk_);
    next_ = e;
    lock.unlock();
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      if (!error_) error_ = std::current_exception();
    }
    lock.lock();
  }
  --active_;
  done_cv_.wait(lock, [&] { return active_ == 0; });
  job_ = nullptr;
  n_ = 0;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace onyx
