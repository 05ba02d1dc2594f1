// The channel-vector direct convolution (conv_cv): output channels in the vector lanes,
// output positions broadcast. W is packed at planning into blocks of CB = 2 vectors of
// output channels, [K][CB] per block (conv_cv_pack); a tile is CB channels times up to
// conv_cv_max_cols() consecutive positions of one output row, its 2 * cols accumulators in
// registers over the whole depth, each depth step two vector loads of W and one broadcast
// per position from X (any layout an offset table describes: a padded copy of the image,
// or X itself). The orientation of NCHWc kernels without their input layout: no lane is
// wasted on an output row narrower than the GEMM's panels (a 7x7 image fills 49 of 64
// lanes of conv_gemm's two 32-wide panels) and no im2col matrix is built.
// Natively only: the WebAssembly build does not call it (its download size is a product
// metric, and its small images go through conv_gemm).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "base/big_alloc.h"

#include "simd/conv_epilogue.h"

namespace onyx::simd {

/// An allocator of 64-byte-aligned memory (the kernel loads W's vectors aligned).
template <typename T>
struct CvAllocator {
  using value_type = T;
  CvAllocator() = default;
  template <typename U>
  CvAllocator(const CvAllocator<U>&) {}  // NOLINT implicit
  T* allocate(size_t n) {
    void* p = alloc_aligned(n * sizeof(T), nullptr, Pages::kConstant);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  /// resize() leaves the floats uninitialized: conv_cv_pack writes every one, and a zero
  /// fill first is a second pass over fresh pages at session creation.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  bool operator==(const CvAllocator&) const { return true; }
};
/// W packed for conv_cv.
using CvPacked = std::vector<float, CvAllocator<float>>;

/// Output channels per block for a layer of `rows` output channels (per group) on the
/// SIMD target of this process: 4 vectors where there are that many channels and 32
/// registers, 2 otherwise.
int64_t conv_cv_block(int64_t rows);

/// Floats conv_cv_pack writes for `rows` output channels of depth K (conv_cv_block(rows)
/// per block).
int64_t conv_cv_pack_size(int64_t rows, int64_t K);
/// Packs the row-major rows x K matrix w (row stride K) into out: block b at
/// out + b * K * CB, depth p of it at + p * CB, lane r = row b * CB + r (0 past rows).
void conv_cv_pack(const float* w, int64_t rows, int64_t K, float* out);

/// One block of output channels over output rows [oy0, oy1) of one image and group.
struct ConvCvArgs {
  int64_t K = 0;
  const float* a = nullptr;       ///< the packed block: [K][CB]
  const int64_t* koff = nullptr;  ///< [K]: where tap p of position (0, 0) is read in x
  const float* x = nullptr;       ///< the image the offsets index
  int64_t xrow = 0;               ///< floats between input rows of x
  int64_t sh = 1, sw = 1;         ///< strides (sw 1 or 2): position (oy, ox) reads from
                                  ///< x + oy * sh * xrow + ox * sw + koff[p]
  int64_t OW = 0, oy0 = 0, oy1 = 0;
  int64_t cb = 0;           ///< channels per block: conv_cv_block(channels of the layer)
  int64_t rows = 0;         ///< valid channels of the block (<= cb)
  float* y = nullptr;       ///< channel 0 of the block at position (0, 0)
  int64_t ldy = 0;          ///< floats between channels of y (and of z)
  const float* bias = nullptr;  ///< [rows] or null
  const float* z = nullptr;     ///< residual laid out as y, or null
  Activation act;
};

/// y = act(sum + bias + z) for the block and rows of `args`.
void conv_cv(const ConvCvArgs& args);

}  // namespace onyx::simd
