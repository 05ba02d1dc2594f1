// ONYX_TIER_UNIT: an inner loop of a kernel (a GEMM tile, a row of a depthwise plane, a
// block of Winograd tiles) that WebAssembly builds keep out of line.
//
// V8 (Chromium, Node) first runs each WebAssembly function in its baseline compiler
// (Liftoff) and switches to optimized code once the function has used up a budget, at the
// function's next call: it has no on-stack replacement for WebAssembly. A kernel whose
// whole loop nest is one function, entered once per node, runs a model's first run and
// more in baseline code, 10-20x slower than optimized. Out of line, the inner loop is
// called thousands of times per node and is optimized within the first run; a call per
// tile costs nothing measurable. Native builds inline it as before.
#ifndef ONYX_SIMD_TIER_H_
#define ONYX_SIMD_TIER_H_

#include <hwy/base.h>

#if defined(__wasm__)
#define ONYX_TIER_UNIT HWY_NOINLINE
#else
#define ONYX_TIER_UNIT HWY_INLINE
#endif

#endif  // ONYX_SIMD_TIER_H_
