#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace onyx {

namespace {

// How long a thread spins on an atomic before it blocks: a worker waiting for the next
// job, a caller waiting for its helpers. Long enough to span the gap between two
// parallel nodes of a run (single-threaded nodes, the executor's own work), short
// enough that an idle pool soon stops taking CPU from others. The first part spins with
// a pause instruction (the quickest to see the change); after it the thread yields its
// core between looks, so that on a busy machine it does not keep the thread it waits
// for (or anyone else's) off the CPU.
constexpr std::chrono::microseconds kPauseSpin{50}, kTotalSpin{200};

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

/// Spins until done() or the budget is spent; returns done()'s last value.
template <typename F>
bool spin_until(const F& done) {
  if (done()) return true;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    cpu_pause();
    if (done()) return true;
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > kPauseSpin) break;
  }
  for (int i = 1;; ++i) {
    std::this_thread::yield();
    if (done()) return true;
    if ((i & 7) == 0 && std::chrono::steady_clock::now() - start > kTotalSpin) return false;
  }
}

/// Tells whether the machine is oversubscribed, from the thread's point of view: the part
/// of its runnable time it spent waiting for a CPU (Linux's per-thread schedstat) over the
/// last window. Spinning then only takes the CPU from threads with work (and a spinning
/// thread uses up its share, so the scheduler runs it late once it has a chunk): the pool
/// blocks instead. Elsewhere it never reports contention.
class ContentionProbe {
 public:
  ContentionProbe() {
#if defined(__linux__)
    fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    sample(run_, wait_);
#endif
  }
  ~ContentionProbe() {
#if defined(__linux__)
    if (fd_ >= 0) ::close(fd_);
#endif
  }
  ContentionProbe(const ContentionProbe&) = delete;
  ContentionProbe& operator=(const ContentionProbe&) = delete;

  /// Updates `flag` at most once per window: true when over half of the runnable time
  /// since the last update went to waiting.
  void update(std::atomic<bool>& flag) {
#if defined(__linux__)
    if (fd_ < 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(10)) return;
    last_ = now;
    uint64_t run, wait;
    if (!sample(run, wait)) return;
    const uint64_t dr = run - run_, dw = wait - wait_;
    run_ = run;
    wait_ = wait;
    if (dr + dw > 0) flag.store(dw > dr, std::memory_order_relaxed);
#else
    (void)flag;
#endif
  }

 private:
#if defined(__linux__)
  bool sample(uint64_t& run, uint64_t& wait) {
    char buf[96];
    const ssize_t len = fd_ >= 0 ? ::pread(fd_, buf, sizeof buf - 1, 0) : -1;
    if (len <= 0) return false;
    buf[len] = 0;
    char* end = nullptr;
    run = std::strtoull(buf, &end, 10);
    wait = std::strtoull(end, nullptr, 10);
    return true;
  }
  int fd_ = -1;
  uint64_t run_ = 0, wait_ = 0;
  std::chrono::steady_clock::time_point last_{};
#endif
};

}  // namespace

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
    stop_.store(true, std::memory_order_relaxed);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int64_t ThreadPool::chunks_for(int64_t n, double work, double min_chunk) const {
  if (n <= 0) return 0;
  if (n == 1 || workers_.empty()) return 1;
  const double by_work = work / std::max(min_chunk, 1.0);
  const int64_t cap = std::min<int64_t>(n, 4 * int64_t{size()});
  return by_work >= double(cap) ? cap : std::max<int64_t>(1, static_cast<int64_t>(by_work));
}

namespace {
inline uint64_t front_of(uint64_t span) {
  return span & 0xffffffffu;
}
inline uint64_t back_of(uint64_t span) {
  return span >> 32;
}
}  // namespace

bool ThreadPool::claim(Job& job, bool from_back, int64_t& b, int64_t& e) {
  uint64_t span = job.span.load(std::memory_order_relaxed), next;
  uint64_t c;
  do {
    const uint64_t f = front_of(span), k = back_of(span);
    if (f >= k) return false;
    c = from_back ? k - 1 : f;
    next = from_back ? (k - 1) << 32 | f : k << 32 | (f + 1);
  } while (!job.span.compare_exchange_weak(span, next, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
  b = static_cast<int64_t>(c) * job.chunk;
  e = std::min(job.n, b + job.chunk);
  if (front_of(next) >= back_of(next)) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
  }
  return true;
}

void ThreadPool::run_chunks(Job& job, bool from_back, std::exception_ptr& err) {
  int64_t b, e;
  // The caller's cancel token (RunOptions::terminate, a folding deadline) holds in the
  // workers that help it; each chunk starts with a poll.
  CancelScope scope(job.cancel);
  while (claim(job, from_back, b, e)) {
    try {
      poll_cancel();
      (*job.fn)(b, e);
    } catch (...) {
      if (!err) err = std::current_exception();
    }
  }
}

ThreadPool::Job* ThreadPool::pick() {
  for (Job* j : queue_) {
    const uint64_t span = j->span.load(std::memory_order_relaxed);
    if (front_of(span) < back_of(span)) return j;
  }
  return nullptr;
}

void ThreadPool::worker_loop() {
  ContentionProbe probe;
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (stop_.load(std::memory_order_relaxed)) return;
        if ((job = pick())) break;
        const uint64_t seen = epoch_.load(std::memory_order_relaxed);
        lock.unlock();
        probe.update(contended_);
        const bool moved = !contended_.load(std::memory_order_relaxed) && spin_until([&] {
          return epoch_.load(std::memory_order_acquire) != seen ||
                 stop_.load(std::memory_order_relaxed);
        });
        lock.lock();
        if (!moved) {
          ++sleepers_;
          work_cv_.wait(lock, [&] {
            return epoch_.load(std::memory_order_relaxed) != seen ||
                   stop_.load(std::memory_order_relaxed);
          });
          --sleepers_;
        }
      }
      // Joined under mu_ while the job is queued: its caller cannot return before we leave.
      job->helpers.fetch_add(1, std::memory_order_relaxed);
    }
    std::exception_ptr err;
    run_chunks(*job, true, err);
    if (err) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!job->error) job->error = err;
    }
    // The job may be gone once helpers drops: only the pool's own fields after this.
    if (job->helpers.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        blocked_callers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(mu_); }
      done_cv_.notify_all();
    }
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
  job.cancel = current_cancel();
  job.n = n;
  job.chunk = std::max<int64_t>(1, n / (4 * size()));
  const int64_t chunks = (n + job.chunk - 1) / job.chunk;  // < 8 * size() + 1
  job.span.store(static_cast<uint64_t>(chunks) << 32, std::memory_order_relaxed);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(&job);
    epoch_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) work_cv_.notify_all();
  std::exception_ptr err;
  run_chunks(job, false, err);
  // Every chunk is claimed, so the job is off the queue or about to be taken off by the
  // helper that claimed the last one; wait for the helpers still inside it.
  const auto idle = [&] { return job.helpers.load(std::memory_order_acquire) == 0; };
  if (contended_.load(std::memory_order_relaxed) ? !idle() : !spin_until(idle)) {
    blocked_callers_.fetch_add(1, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return job.helpers.load(std::memory_order_seq_cst) == 0; });
    blocked_callers_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (err) std::rethrow_exception(err);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace onyx
