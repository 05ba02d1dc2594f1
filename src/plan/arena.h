// Offsets of buffers in one arena from their lifetimes: the memory plan of a run.
#pragma once
#include <cstdint>
#include <vector>

namespace onyx::plan {

/// One buffer to place: `bytes` long, alive from step `first` to step `last` (inclusive).
struct Lifetime {
  uint64_t bytes = 0;
  int first = 0;
  int last = 0;
};

/// Where each buffer goes.
struct ArenaLayout {
  std::vector<uint64_t> offsets;  ///< per buffer, a multiple of `align`
  uint64_t total = 0;             ///< arena size in bytes
  /// For each buffer, the buffers placed before it in time that share some of its bytes
  /// (their lifetimes do not overlap): they must be dead when it is taken.
  std::vector<std::vector<int>> shares_with;
};

/// Greedy by size: the largest buffers are placed first, each at the lowest offset where
/// it overlaps (in bytes) no buffer already placed whose lifetime overlaps its own. Two
/// buffers whose lifetimes overlap never share a byte.
ArenaLayout layout_arena(const std::vector<Lifetime>& buffers, uint64_t align = 64);

}  // namespace onyx::plan
