// src/runtime/thread_pool: parallel_for runs every item exactly once (for odd counts, with
// 1, 2 and 4 threads), rethrows an exception from a chunk and stays usable, takes nested
// calls and several callers at once, works again after its workers went to sleep; and
// chunks_for keeps small work on one chunk. Each check compares with counts known from
// the call itself (how many items, how many callers), not with the pool's own output.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace onyx {
namespace {

/// Runs parallel_for(n) and checks that each item in [0, n) was visited exactly once.
void expect_each_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    ASSERT_LE(0, b);
    ASSERT_LT(b, e);
    ASSERT_LE(e, n);
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "item " << i << " of " << n;
}

TEST(ThreadPool, EachItemOnce) {
  for (int threads : {0, 1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), std::max(threads, 1));
    for (int64_t n : {1, 2, 3, 7, 8, 9, 31, 64, 1000, 4099}) expect_each_once(pool, n);
  }
}

/// With one worker, the caller takes chunks from the front and the worker from the back,
/// so the caller's items are a prefix of [0, n) and the worker's the rest (whoever is
/// faster takes more): consecutive jobs over the same data then keep each part on the
/// thread that wrote it.
TEST(ThreadPool, CallerTakesAPrefixWorkerASuffix) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  for (int64_t n : {2, 9, 64, 1000}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<char> by_caller(static_cast<size_t>(n), 0);
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        const char mine = std::this_thread::get_id() == caller ? 1 : 2;
        for (int64_t i = b; i < e; ++i) by_caller[static_cast<size_t>(i)] = mine;
        // Slow enough that the worker wakes and takes part in most calls.
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
      for (int64_t i = 1; i < n; ++i)
        ASSERT_LE(by_caller[static_cast<size_t>(i - 1)], by_caller[static_cast<size_t>(i)])
            << "item " << i << " of " << n << ": a caller's item after a worker's";
    }
  }
}

TEST(ThreadPool, NothingForEmptyRange) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(-3, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  const auto me = std::this_thread::get_id();
  int calls = 0;
  pool.parallel_for(100, [&](int64_t b, int64_t e) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t bad : {int64_t{0}, int64_t{5}, int64_t{63}}) {
      std::atomic<int64_t> done{0};
      EXPECT_THROW(pool.parallel_for(64,
                                     [&](int64_t b, int64_t e) {
                                       for (int64_t i = b; i < e; ++i) {
                                         if (i == bad) throw std::runtime_error("chunk failed");
                                         done.fetch_add(1);
                                       }
                                     }),
                   std::runtime_error);
      EXPECT_LT(done.load(), 64);
      expect_each_once(pool, 64);
    }
  }
}

TEST(ThreadPool, NestedCalls) {
  ThreadPool pool(3);
  const int64_t outer = 9, inner = 37;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(outer * inner));
  pool.parallel_for(outer, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      pool.parallel_for(inner, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) hits[static_cast<size_t>(o * inner + i)].fetch_add(1);
      });
  });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
}

TEST(ThreadPool, ConcurrentCallers) {
  ThreadPool pool(2);
  const int callers = 6, rounds = 300;
  std::vector<int64_t> sums(callers, 0);
  std::vector<std::thread> ts;
  for (int c = 0; c < callers; ++c)
    ts.emplace_back([&, c] {
      for (int r = 0; r < rounds; ++r) {
        const int64_t n = 1 + (c * 7 + r) % 50;
        std::atomic<int64_t> sum{0};
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sum.fetch_add(i + 1);
        });
        sums[c] += sum.load() - n * (n + 1) / 2;  // 0 when every item ran once
      }
    });
  for (auto& t : ts) t.join();
  for (int c = 0; c < callers; ++c) EXPECT_EQ(sums[c], 0) << "caller " << c;
}

TEST(ThreadPool, WorksAfterWorkersSleep) {
  ThreadPool pool(2);
  expect_each_once(pool, 16);
  // Longer than any spin: the workers block, and the next call has to wake them.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  expect_each_once(pool, 16);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  expect_each_once(pool, 3);
}

TEST(ThreadPool, ChunksFor) {
  ThreadPool one(1), two(2);
  EXPECT_EQ(one.chunks_for(1000, 1e9, 100), 1);
  EXPECT_EQ(two.chunks_for(0, 1e9, 100), 0);
  EXPECT_EQ(two.chunks_for(1, 1e9, 100), 1);
  EXPECT_EQ(two.chunks_for(1000, 50, 100), 1);   // below one chunk's worth
  EXPECT_EQ(two.chunks_for(1000, 150, 100), 1);  // below two
  EXPECT_EQ(two.chunks_for(1000, 300, 100), 3);
  EXPECT_EQ(two.chunks_for(1000, 1e9, 100), 8);  // 4 per thread at most
  EXPECT_EQ(two.chunks_for(5, 1e9, 100), 5);     // never more than the items
}

}  // namespace
}  // namespace onyx
