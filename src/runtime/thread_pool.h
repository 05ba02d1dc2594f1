// A fixed pool of worker threads with a blocking parallel_for that any number of threads
// may call at once (several Session::run calls sharing one session's pool, or a kernel
// calling parallel_for from inside a chunk of another).
//
// Waking is cheap when the pool is busy: a worker that finishes a job spins for a while
// (bounded: a pause instruction, then yielding, then it blocks) on an atomic epoch, so the
// next parallel_for of a run finds it awake and costs no system call; chunks are claimed
// with one atomic word (the caller from the front, workers from the back), and the caller
// waits for its helpers by spinning before it blocks. When the workers find the CPUs oversubscribed (they wait for a CPU more than
// they run), nobody spins: everyone blocks at once, as a pool without spinning would.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/cancel.h"

namespace onyx {

class ThreadPool {
 public:
  /// `threads` <= 1 runs everything on the calling thread (as does a WebAssembly build
  /// without pthreads, whatever `threads` is).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// Splits [0, n) into contiguous chunks and runs fn(begin, end) on them in parallel;
  /// returns when all are done. The caller takes chunks from the front, the workers from
  /// the back: with one worker the two split [0, n) at the point where they meet, so
  /// consecutive jobs over the same data (a node's output tiles, the next node's input
  /// tiles) give each thread mostly the part it wrote, still in its cache. The first
  /// exception thrown by fn is rethrown (the other chunks still run).
  /// Safe to call from several threads at once and from inside fn: each call is its own
  /// job, the caller works on its own job's chunks (so it never waits on a job that
  /// nobody runs) and idle workers help whichever job is oldest.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  /// The grain rule: how many chunks a job of `work` (an estimate, in any unit: multiply-
  /// adds, elements) is worth spreading over, where a chunk should hold at least
  /// `min_chunk` of it (some microseconds: handing a chunk to an awake worker costs well
  /// under one, waking a sleeping one a few). At most `n` (the items there are to split)
  /// and 4 per thread; 1 on a single thread or when the work is below two chunks' worth.
  int64_t chunks_for(int64_t n, double work, double min_chunk) const;

 private:
  /// One parallel_for call. Lives on the caller's stack; it is in queue_ from its
  /// publication until its last chunk is claimed, and the caller returns only when it
  /// is out of queue_ and no worker is inside it (`helpers` == 0).
  struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0, chunk = 1;
    /// The chunks not yet claimed, [front, back): front in the low 32 bits, back in the
    /// high (a job has at most about 8 chunks per thread).
    std::atomic<uint64_t> span{0};
    std::atomic<int> helpers{0};   ///< workers that joined and have not left
    std::exception_ptr error;      ///< guarded by mu_ until helpers is 0
    const CancelToken* cancel = nullptr;  ///< the caller's token, installed in its helpers
  };
  /// Claims the next chunk from the front (the caller) or the back (a worker); false when
  /// none is left. The thread that claims the last chunk takes the job off the queue.
  bool claim(Job& job, bool from_back, int64_t& b, int64_t& e);
  /// Runs every chunk of `job` it can claim; the first exception is kept in `err`.
  void run_chunks(Job& job, bool from_back, std::exception_ptr& err);
  /// First queued job with chunks left (mu_ held), or null.
  Job* pick();
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;  ///< epoch_ moved, or stop (for sleeping workers)
  std::condition_variable done_cv_;  ///< a job's last helper left (for blocked callers)
  std::deque<Job*> queue_;           ///< guarded by mu_: jobs with chunks left, oldest first
  std::atomic<uint64_t> epoch_{0};   ///< bumped (under mu_) each time a job is queued
  std::atomic<int> blocked_callers_{0};  ///< callers blocked on done_cv_
  int sleepers_ = 0;                 ///< guarded by mu_: workers blocked on work_cv_
  std::atomic<bool> stop_{false};
  std::atomic<bool> contended_{false};  ///< the workers see the CPUs oversubscribed: no spinning
};

}  // namespace onyx
