// Window geometry shared by the conv and pool reference kernels: a kernel window slid
// over the spatial axes of an [N, C, D1, D2, ...] tensor with strides, dilations and pads.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/checked.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

/// Spatial geometry of one convolution or pooling op, every list with one value per
/// spatial axis. pad_end is resolved only by the ops that read it (pooling counts the
/// window positions inside the pads); the others skip whatever lies outside the input.
struct WindowGeom {
  size_t nsp = 0;
  Dims in, out, kernel;
  std::vector<int64_t> strides, dilations, pad_begin, pad_end;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
};

/// Odometer over a multi-dimensional index space (row-major, last axis fastest).
inline bool next_index(std::vector<int64_t>& idx, const Dims& extent) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < extent[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/// Product of `d`; throws onyx::Error on overflow (the extents of an empty tensor, or
/// lists from attributes and inputs, are not bounded by any allocation).
inline int64_t product(const Dims& d) {
  return checked_product(d, "a window extent");
}

/// Sets in_size, out_size and kernel_size from in, out and kernel.
inline void set_sizes(WindowGeom& g) {
  g.in_size = product(g.in);
  g.out_size = product(g.out);
  g.kernel_size = product(g.kernel);
}

/// The pads {begin, end} of spatial axis i under auto_pad SAME_UPPER (upper = true: the
/// odd unit at the end) or SAME_LOWER (at the beginning) for a window slid over the input
/// (Conv, pooling): total = (out - 1) * stride + dilated kernel - in, at least 0.
inline std::pair<int64_t, int64_t> same_pads(const WindowGeom& g, size_t i, bool upper) {
  int64_t ek = checked_add(checked_mul(g.kernel[i] - 1, g.dilations[i], "the dilated kernel"), 1,
                           "the dilated kernel");
  int64_t total = std::max<int64_t>(
      0, checked_sub(checked_add(checked_mul(g.out[i] - 1, g.strides[i], "the SAME pads"), ek,
                                 "the SAME pads"),
                     g.in[i], "the SAME pads"));
  int64_t begin = upper ? total / 2 : total - total / 2;
  return {begin, total - begin};
}

/// Per-kernel-position offsets (k_d * dilation_d) for each flat kernel index.
inline std::vector<int64_t> kernel_offsets(const WindowGeom& g) {
  std::vector<int64_t> offs(checked_count({g.kernel_size, static_cast<int64_t>(g.nsp)},
                                          "the kernel offsets (prod(kernel) * spatial rank)"));
  std::vector<int64_t> k(g.nsp, 0);
  int64_t i = 0;
  do {
    for (size_t d = 0; d < g.nsp; ++d) offs[i * g.nsp + d] = k[d] * g.dilations[d];
    ++i;
  } while (next_index(k, g.kernel));
  return offs;
}

}  // namespace onyx::kernels
