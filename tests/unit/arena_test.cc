// The arena layout (src/plan/arena.h): buffers alive at the same time never share a byte,
// and the arena is as small as the peak of live bytes when sizes allow it. Also the
// allocator of the runtime's large buffers (src/base/big_alloc.h).
#include "plan/arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "base/big_alloc.h"

namespace onyx::test {
namespace {

void expect_valid(const std::vector<plan::Lifetime>& b, const plan::ArenaLayout& l) {
  ASSERT_EQ(l.offsets.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % 64, 0u);
    EXPECT_LE(l.offsets[i] + b[i].bytes, l.total);
    for (size_t j = i + 1; j < b.size(); ++j) {
      bool together = b[i].first <= b[j].last && b[j].first <= b[i].last;
      bool share = l.offsets[i] < l.offsets[j] + b[j].bytes && l.offsets[j] < l.offsets[i] + b[i].bytes;
      EXPECT_FALSE(together && share && b[i].bytes && b[j].bytes) << i << " and " << j;
    }
  }
  // shares_with lists exactly the earlier buffers that share bytes.
  for (size_t i = 0; i < b.size(); ++i)
    for (int j : l.shares_with[i]) {
      EXPECT_LT(b[static_cast<size_t>(j)].last, b[i].first);
      EXPECT_TRUE(l.offsets[i] < l.offsets[static_cast<size_t>(j)] + b[static_cast<size_t>(j)].bytes);
    }
}

TEST(Arena, ChainReusesMemory) {
  // a -> b -> c -> d, each alive for two steps: two slots suffice.
  std::vector<plan::Lifetime> b = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  plan::ArenaLayout l = plan::layout_arena(b);
  expect_valid(b, l);
  EXPECT_EQ(l.total, 2048u);
  EXPECT_EQ(l.offsets[0], l.offsets[2]);
  ASSERT_EQ(l.shares_with[2].size(), 1u);
  EXPECT_EQ(l.shares_with[2][0], 0);
}

TEST(Arena, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + static_cast<int>(rng() % 60);
    std::vector<plan::Lifetime> b;
    uint64_t peak_bound = 0;
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 40);
      b.push_back({1 + rng() % 100000, first, first + static_cast<int>(rng() % 10)});
    }
    plan::ArenaLayout l = plan::layout_arena(b);
    expect_valid(b, l);
    uint64_t sum = 0;
    for (const auto& x : b) sum += (x.bytes + 63) / 64 * 64;
    EXPECT_LE(l.total, sum);
    for (int t = 0; t < 50; ++t) {
      uint64_t live = 0;
      for (const auto& x : b)
        if (x.first <= t && t <= x.last) live += x.bytes;
      peak_bound = std::max(peak_bound, live);
    }
    EXPECT_GE(l.total, peak_bound);
  }
}

}  // namespace
}  // namespace onyx::test

namespace onyx::test {
namespace {

// alloc_aligned: every block 64-byte aligned with room for what was asked; large blocks
// on whole, aligned 2 MiB pages (the unit of a transparent huge page), written end to end.
TEST(BigAlloc, AlignmentAndCapacity) {
  const size_t sizes[] = {0, 1, 63, 64, 100, 4096, kHugeMin - 1, kHugeMin, kHugeMin + 1,
                          3 * kHugePage + 5};
  for (size_t bytes : sizes) {
    size_t cap = 0;
    void* p = alloc_aligned(bytes, &cap);
    ASSERT_NE(p, nullptr) << bytes;
    const auto at = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(at % 64, 0u) << bytes;
    EXPECT_GE(cap, std::max<size_t>(bytes, 1)) << bytes;
    if (bytes >= kHugeMin) {
      EXPECT_EQ(at % kHugePage, 0u) << bytes;
      EXPECT_EQ(cap % kHugePage, 0u) << bytes;
      EXPECT_LT(cap - bytes, kHugePage) << bytes;
    } else {
      EXPECT_LT(cap - bytes, size_t(64) + (bytes == 0 ? 64 : 0)) << bytes;
    }
    std::memset(p, 0xA5, cap);
    EXPECT_EQ(static_cast<unsigned char*>(p)[cap - 1], 0xA5);
    std::free(p);
  }
}

}  // namespace
}  // namespace onyx::test
