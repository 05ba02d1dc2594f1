// A fixed pool of worker threads with a blocking parallel_for that any number of threads
// may call at once (several Session::run calls sharing one session's pool, or a kernel
// calling parallel_for from inside a chunk of another).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onyx {

class ThreadPool {
 public:
  /// `threads` <= 1 runs everything on the calling thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// Splits [0, n) into contiguous chunks and runs fn(begin, end) on them in parallel;
  /// returns when all are done. The first exception thrown by fn is rethrown.
  /// Safe to call from several threads at once and from inside fn: each call is its own
  /// job, the caller works on its own job's chunks (so it never waits on a job that
  /// nobody runs) and idle workers help whichever job is oldest.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  /// One parallel_for call. Lives on the caller's stack; every field but `fn`, `n` and
  /// `chunk` is guarded by the pool's mutex.
  struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0, chunk = 1;
    int64_t next = 0;       ///< first item not yet claimed
    int64_t finished = 0;   ///< items whose chunk has returned
    std::exception_ptr error;
  };
  /// Claims the next chunk of `job` (lock held); false when none is left. Takes the job
  /// off the queue once its last chunk is claimed.
  bool claim(Job& job, int64_t& b, int64_t& e);
  /// Runs fn on [b, e) without the lock, then records the result (lock re-taken).
  void run_chunk(std::unique_lock<std::mutex>& lock, Job& job, int64_t b, int64_t e);
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;  ///< a job was queued, or stop
  std::condition_variable done_cv_;  ///< some job's chunks all returned
  std::deque<Job*> queue_;           ///< jobs with chunks left to claim, oldest first
  bool stop_ = false;
};

}  // namespace onyx
