// Aligned heap memory for the runtime's large buffers (arenas, tensors, packed weights).
//
// Run-time blocks (Pages::kRun) of at least kHugeMin bytes are aligned to 2 MiB, rounded
// up to whole 2 MiB pages and, on Linux, marked MADV_HUGEPAGE: where transparent huge
// pages are enabled only on request (Debian's default "madvise"), a buffer that a
// convolution streams through then costs one TLB entry and one page fault per 2 MiB
// instead of 512. Weights copied or packed while a session is made (Pages::kConstant) are
// not marked: with the kernel's default defrag setting ("madvise") a fault in a marked
// region compacts memory synchronously to find a free 2 MiB page, and on a machine whose
// memory another process had just used and freed that took ResNet-50's session creation
// from ~60 ms to 220-350 ms in one start of three or four. Smaller blocks, and every
// block in WebAssembly, are plain 64-byte-aligned allocations. Every block is released
// with std::free.
#pragma once
#include <cstddef>

namespace onyx {

inline constexpr size_t kHugePage = size_t(2) << 20;
inline constexpr size_t kHugeMin = size_t(4) << 20;

/// What a block holds: run-time tensors and scratch, or constants made once per session.
enum class Pages { kRun, kConstant };

/// At least `bytes` bytes aligned to 64 (a kRun block to 2 MiB from kHugeMin up); null
/// when out of memory. `*capacity`, when given, receives the usable size.
void* alloc_aligned(size_t bytes, size_t* capacity = nullptr, Pages use = Pages::kRun);

}  // namespace onyx
