#include "kernels/cpu/fast_path.h"

#include <atomic>

namespace onyx::kernels::cpu {

namespace {
std::atomic<bool> g_enabled{true};
}

bool fast_paths_enabled() {
  return g_enabled.load(std::memory_order_relaxed);
}
void set_fast_paths_enabled(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
}

}  // namespace onyx::kernels::cpu
