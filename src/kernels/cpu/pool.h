// Optimized kernels of the pool family (float), twins of src/kernels/reference/pool.cc.
#pragma once
#include <cstdint>

#include "kernels/reference/window.h"

namespace onyx::kernels::cpu {

/// 2-D float MaxPool without the Indices output over `planes` images of geometry g
/// (pads resolved, output extents given): per output row, the window rows and columns
/// inside the image are found up front, so the inner loop has no bounds checks. NaN
/// propagates as in the reference (the first NaN of a window wins). Returns false for a
/// geometry it does not take (not 2-D).
bool max_pool2d_f32(const WindowGeom& g, int64_t planes, const float* x, float* y);

}  // namespace onyx::kernels::cpu
