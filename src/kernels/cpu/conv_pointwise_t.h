// A pointwise (1x1, stride 1, unpadded, one group) float convolution over a small image,
// computed transposed: Y^T [OS x M] = X^T [OS x C] W^T [C x M] on the SGEMM of
// src/simd/gemm.h with W^T packed once at planning, then transposed into Y with the
// residual and the activation. Over 7x7 images (OS = 49) the direct orientation's tiles
// run OS in vectors of 16 columns, and 49 = 3 x 16 + 1 fills 77% of two two-vector tiles;
// transposed, the output channels fill whole vectors and the 49 positions are rows
// (7 strips of 8, 88%). (Its own file with an opaque interface: gemm.h and the conv GEMM's
// conv_epilogue.h both define onyx::simd::Epilogue.)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onyx {
class ThreadPool;
}

namespace onyx::kernels::cpu {

class PointwiseT {
 public:
  /// W [maps x channels] row-major; `activation`, `params`: a FusedConv's activation
  /// attribute ("" none) and activation_params. Null when the activation is not one the
  /// SGEMM's epilogue knows.
  static std::unique_ptr<PointwiseT> make(const float* w, int64_t maps, int64_t channels,
                                          const std::string& activation,
                                          const std::vector<float>& params);
  ~PointwiseT();

  int64_t maps() const;
  int64_t channels() const;
  /// Per image n of `batch`: y[n] [maps x os] = act(W x[n] + bias + z[n]); x[n] is
  /// [channels x os]. bias, z may be null.
  void run(int64_t batch, const float* x, int64_t os, const float* bias, const float* z, float* y,
           ThreadPool* pool) const;
  /// Channels last: y [rows x maps] = act(x [rows x channels] W^T + bias + z), rows being
  /// every pixel of every image; one GEMM, nothing transposed. bias, z may be null.
  void run_nhwc(int64_t rows, const float* x, const float* bias, const float* z, float* y,
                ThreadPool* pool) const;

 private:
  PointwiseT();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Whether PointwiseT is the better orientation for `os` output positions (few positions,
/// enough output channels to fill the SGEMM's panels).
bool pointwise_t_suits(int64_t os, int64_t maps, int64_t channels);

}  // namespace onyx::kernels::cpu
