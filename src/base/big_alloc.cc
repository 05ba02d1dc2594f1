#include "base/big_alloc.h"

#include <cstdlib>
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

namespace onyx {

void* alloc_aligned(size_t bytes, size_t* capacity, Pages use) {
  constexpr size_t kAlign = 64;
#if defined(__EMSCRIPTEN__)
  (void)use;
  const bool huge = false;  // one linear memory: 2 MiB alignment would only waste it
#else
  const bool huge = use == Pages::kRun && bytes >= kHugeMin;
#endif
  if (!huge) {
    size_t n = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, n);
    if (capacity) *capacity = p ? n : 0;
    return p;
  }
  const size_t n = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, n);
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
  if (p) (void)madvise(p, n, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
#endif
  if (capacity) *capacity = p ? n : 0;
  return p;
}

}  // namespace onyx
