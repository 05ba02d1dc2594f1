#include "runtime/memory.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace onyx::runtime {

namespace {
constexpr size_t kAlign = 64;
}

ArenaBuffer::~ArenaBuffer() { std::free(data); }

ArenaPlan::ArenaPlan(std::vector<Entry> entries, uint64_t total) : entries_(std::move(entries)), total_(total) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (by_step_.size() <= static_cast<size_t>(e.step)) by_step_.resize(static_cast<size_t>(e.step) + 1);
    auto& outs = by_step_[static_cast<size_t>(e.step)];
    if (outs.size() <= static_cast<size_t>(e.output)) outs.resize(static_cast<size_t>(e.output) + 1, -1);
    outs[static_cast<size_t>(e.output)] = static_cast<int>(i);
  }
}

ArenaPlan::~ArenaPlan() {
  for (ArenaBuffer* b : free_) delete b;
}

std::shared_ptr<ArenaBuffer> ArenaPlan::acquire() {
  ArenaBuffer* b = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    }
  }
  if (!b) {
    auto fresh = std::make_unique<ArenaBuffer>();
    fresh->plan = this;
    size_t bytes = std::max<size_t>(kAlign, (total_ + kAlign - 1) / kAlign * kAlign);
    fresh->data = std::aligned_alloc(kAlign, bytes);
    if (!fresh->data) return nullptr;  // the run falls back to the heap
    fresh->alive = std::vector<std::atomic<bool>>(entries_.size());
    b = fresh.release();
  }
  std::shared_ptr<ArenaPlan> self = shared_from_this();
  return std::shared_ptr<ArenaBuffer>(b, [self](ArenaBuffer* p) { self->release(p); });
}

void ArenaPlan::release(ArenaBuffer* b) {
  std::lock_guard<std::mutex> g(mu_);
  free_.push_back(b);
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

std::shared_ptr<ArenaPlan> MemoryPlanner::find(const Signature& sig) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = plans_.begin(); it != plans_.end(); ++it)
    if (it->first == sig) {
      plans_.splice(plans_.begin(), plans_, it);
      return plans_.front().second;
    }
  return nullptr;
}

void MemoryPlanner::insert(const Signature& sig, std::shared_ptr<ArenaPlan> plan) {
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
