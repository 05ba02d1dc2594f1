#include "plan/arena.h"

#include <algorithm>
#include <numeric>

namespace onyx::plan {

ArenaLayout layout_arena(const std::vector<Lifetime>& buffers, uint64_t align) {
  const size_t n = buffers.size();
  ArenaLayout out;
  out.offsets.assign(n, 0);
  out.shares_with.assign(n, {});
  std::vector<uint64_t> size(n);
  for (size_t i = 0; i < n; ++i) size[i] = (buffers[i].bytes + align - 1) / align * align;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });
  auto live_together = [&](size_t a, size_t b) {
    return buffers[a].first <= buffers[b].last && buffers[b].first <= buffers[a].last;
  };
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of conflicting placed buffers
  for (size_t i : order) {
    busy.clear();
    for (size_t j : placed)
      if (live_together(i, j)) busy.emplace_back(out.offsets[j], out.offsets[j] + size[j]);
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + size[i] <= b) break;  // fits in the gap before this one
      at = std::max(at, e);
    }
    out.offsets[i] = at;
    out.total = std::max(out.total, at + size[i]);
    placed.push_back(i);
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j && !live_together(i, j) && buffers[j].last < buffers[i].first && size[i] && size[j] &&
          out.offsets[i] < out.offsets[j] + size[j] && out.offsets[j] < out.offsets[i] + size[i])
        out.shares_with[i].push_back(static_cast<int>(j));
  return out;
}

}  // namespace onyx::plan
