#include "runtime/memory.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "base/big_alloc.h"

namespace onyx::runtime {

namespace {
constexpr size_t kAlign = 64;
}

ArenaBuffer::~ArenaBuffer() {
  if (data) pool->give(data, capacity);
}

BufferPool::~BufferPool() {
  for (auto& [p, cap] : free_) std::free(p);
}

void* BufferPool::take(uint64_t bytes, uint64_t* capacity) {
  bytes = std::max<uint64_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  void* drop = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    // The smallest free buffer that fits; else the largest goes, to be replaced.
    size_t best = free_.size(), largest = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].second >= bytes && (best == free_.size() || free_[i].second < free_[best].second)) best = i;
      if (largest == free_.size() || free_[i].second > free_[largest].second) largest = i;
    }
    size_t pick = best != free_.size() ? best : largest;
    if (pick != free_.size()) {
      auto [p, cap] = free_[pick];
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(pick));
      if (cap >= bytes) {
        *capacity = cap;
        return p;
      }
      drop = p;
    }
  }
  std::free(drop);
  size_t cap = 0;
  void* p = alloc_aligned(static_cast<size_t>(bytes), &cap);
  *capacity = cap;
  return p;
}

void BufferPool::give(void* data, uint64_t capacity) {
  std::lock_guard<std::mutex> g(mu_);
  free_.emplace_back(data, capacity);
}

ArenaPlan::ArenaPlan(std::vector<Entry> entries, uint64_t total) : entries_(std::move(entries)), total_(total) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (by_step_.size() <= static_cast<size_t>(e.step)) by_step_.resize(static_cast<size_t>(e.step) + 1);
    auto& outs = by_step_[static_cast<size_t>(e.step)];
    if (outs.size() <= static_cast<size_t>(e.output)) outs.resize(static_cast<size_t>(e.output) + 1, -1);
    outs[static_cast<size_t>(e.output)] = static_cast<int>(i);
  }
}

std::shared_ptr<ArenaBuffer> ArenaPlan::acquire(const std::shared_ptr<BufferPool>& pool) {
  auto b = std::make_shared<ArenaBuffer>();
  b->data = pool->take(total_, &b->capacity);
  if (!b->data) return nullptr;  // the run falls back to the heap
  b->pool = pool;
  b->plan = shared_from_this();
  b->alive = std::vector<std::atomic<bool>>(entries_.size());
  return b;
}

int ArenaPlan::find(int step, int output) const {
  if (step < 0 || static_cast<size_t>(step) >= by_step_.size()) return -1;
  const auto& outs = by_step_[static_cast<size_t>(step)];
  return output >= 0 && static_cast<size_t>(output) < outs.size() ? outs[static_cast<size_t>(output)] : -1;
}

int Recording::allocated(int output, uint64_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  items_.push_back(Item{step_.load(std::memory_order_relaxed), output, bytes});
  return static_cast<int>(items_.size() - 1);
}

void Recording::freed(int id) {
  std::lock_guard<std::mutex> g(mu_);
  if (!finished_) items_[static_cast<size_t>(id)].freed_at = step_.load(std::memory_order_relaxed);
}

std::shared_ptr<ArenaPlan> Recording::finish() {
  std::lock_guard<std::mutex> g(mu_);
  finished_ = true;
  std::vector<plan::Lifetime> lives;
  std::vector<const Item*> kept;
  for (const Item& it : items_) {
    if (it.freed_at < 0 || it.bytes == 0) continue;  // escaped the run, or empty
    lives.push_back(plan::Lifetime{it.bytes, it.step, it.freed_at});
    kept.push_back(&it);
  }
  if (kept.empty()) return nullptr;
  plan::ArenaLayout layout = plan::layout_arena(lives, kAlign);
  std::vector<ArenaPlan::Entry> entries(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    entries[i].step = kept[i]->step;
    entries[i].output = kept[i]->output;
    entries[i].bytes = kept[i]->bytes;
    entries[i].offset = layout.offsets[i];
    entries[i].shares_with = std::move(layout.shares_with[i]);
  }
  return std::make_shared<ArenaPlan>(std::move(entries), layout.total);
}

std::shared_ptr<const SignaturePlan> MemoryPlanner::find(const Signature& sig) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = plans_.begin(); it != plans_.end(); ++it)
    if (it->first == sig) {
      plans_.splice(plans_.begin(), plans_, it);
      return plans_.front().second;
    }
  return nullptr;
}

size_t MemoryPlanner::size() {
  std::lock_guard<std::mutex> g(mu_);
  return plans_.size();
}

void MemoryPlanner::insert(const Signature& sig, std::shared_ptr<const SignaturePlan> plan) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = plans_.begin(); it != plans_.end(); ++it)
    if (it->first == sig) {
      plans_.erase(it);
      break;
    }
  plans_.emplace_front(sig, std::move(plan));
  while (plans_.size() > capacity_) plans_.pop_back();
}

}  // namespace onyx::runtime
