// Prefetching lines a kernel is about to write.
//
// At several threads a kernel's output often lands on lines the other cores wrote last
// (the arena hands the same bytes to node after node, and each node splits its work
// differently): every store then waits for the line to leave the other core's cache.
// Where the stores go to more streams than the hardware prefetcher follows (a Winograd
// output transform writes each tile's rows into every output plane), the kernel asks for
// the lines ahead of time, for writing: x86's PREFETCHW takes the line in exclusive state
// (a read prefetch would fetch it shared and the store would still have to invalidate the
// other copy); AArch64's PRFM PSTL1KEEP the same. Elsewhere (WebAssembly) nothing.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// Asks for the line holding p, to be written soon. A hint: it never faults.
inline void prefetch_for_write(const void* p) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // PREFETCHW (0F 0D /1): AMD since the K6, Intel since Broadwell; older Intel cores run
  // it as a NOP (64-bit Windows 8.1 and later require it to decode).
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(p, 1, 3);
#else
  (void)p;
#endif
}

/// prefetch_for_write on every 64-byte line of the floats [p, p + n).
inline void prefetch_floats_for_write(const float* p, int64_t n) {
  if (n <= 0) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  const uintptr_t last = reinterpret_cast<uintptr_t>(p + n - 1);
  for (uintptr_t a = first; a <= last; a += 64) prefetch_for_write(reinterpret_cast<const void*>(a));
}

}  // namespace onyx::simd
