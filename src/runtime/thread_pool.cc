#include "runtime/thread_pool.h"

#include <algorithm>

namespace onyx {

ThreadPool::ThreadPool(int threads) {
#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
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
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::claim(Job& job, int64_t& b, int64_t& e) {
  if (job.next >= job.n) return false;
  b = job.next;
  e = std::min(job.n, b + job.chunk);
  job.next = e;
  if (e == job.n) {
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
  }
  return true;
}

void ThreadPool::run_chunk(std::unique_lock<std::mutex>& lock, Job& job, int64_t b, int64_t e) {
  lock.unlock();
  std::exception_ptr err;
  try {
    (*job.fn)(b, e);
  } catch (...) {
    err = std::current_exception();
  }
  lock.lock();
  if (err && !job.error) job.error = err;
  job.finished += e - b;
  if (job.finished == job.n) done_cv_.notify_all();
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    // The job stays alive while it has unfinished chunks: its caller waits for them.
    Job& job = *queue_.front();
    int64_t b, e;
    if (claim(job, b, e)) run_chunk(lock, job, b, e);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = std::max<int64_t>(1, n / (4 * size()));
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&job);
  work_cv_.notify_all();
  int64_t b, e;
  while (claim(job, b, e)) run_chunk(lock, job, b, e);
  done_cv_.wait(lock, [&] { return job.finished == job.n; });
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace onyx
