// Optimized Transpose for 4-byte elements when the permutation moves one run of axes past
// the next (perm = [0 .. k-1, m .. r-1, k .. m-1]): a batch of [R x S] matrices transposed
// in registers (simd/transpose.h). That is the move of the channels between first and last
// that src/opt/channels_last.cc inserts ([0, 2, 3, 1] and [0, 3, 1, 2]) and the last-two-axes
// swap of attention heads. Other permutations and element sizes go to the reference.
#include "simd/transpose.h"

#include <numeric>

#include "kernels/cpu/register.h"

namespace onyx::kernels::cpu {
namespace {

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(std::vector<int64_t> perm, KernelFn reference)
      : perm_(std::move(perm)), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t r = x.rank();
    if (dtype_size(x.dtype()) != 4 || y.dtype() != x.dtype() || perm_.size() != r ||
        y.rank() != r) {
      reference_(ctx);
      return;
    }
    // k leading axes kept, then [m, r) before [k, m).
    size_t k = 0;
    while (k < r && perm_[k] == static_cast<int64_t>(k)) ++k;
    if (k == r) {
      reference_(ctx);
      return;
    }
    const size_t m = static_cast<size_t>(perm_[k]);
    bool rotation = m > k && m < r;
    for (size_t i = k; rotation && i < r; ++i) {
      const size_t want = i - k < r - m ? m + (i - k) : k + (i - k - (r - m));
      rotation = perm_[i] == static_cast<int64_t>(want);
    }
    for (size_t i = 0; rotation && i < r; ++i)
      rotation = y.dim(i) == x.dim(static_cast<size_t>(perm_[i]));
    if (!rotation) {
      reference_(ctx);  // (it also reports a perm or shape that does not match)
      return;
    }
    const Dims& d = x.dims();
    const int64_t B = std::accumulate(d.begin(), d.begin() + k, int64_t{1}, std::multiplies<>());
    const int64_t R =
        std::accumulate(d.begin() + k, d.begin() + m, int64_t{1}, std::multiplies<>());
    const int64_t S = std::accumulate(d.begin() + m, d.end(), int64_t{1}, std::multiplies<>());
    // (Bits moved through float registers unchanged: loads, shuffles and stores only.)
    simd::transpose_2d(static_cast<const float*>(x.raw()), B, R, S, static_cast<float*>(y.raw()),
                       ctx.pool());
  }
  std::string_view name() const override { return "cpu.transpose"; }
  bool overwrites_outputs() const override { return true; }

 private:
  std::vector<int64_t> perm_;
  KernelFn reference_;
};

std::unique_ptr<Kernel> make_transpose(const KernelInit& init) {
  const ir::Attribute* p = init.node.attr("perm");
  if (!p) return nullptr;  // reversed axes: the reference
  return std::make_unique<TransposeKernel>(p->ints, init.reference);
}

}  // namespace

void register_transpose(Registry& r) {
  r.add_optimized("", "Transpose", 1, 1000, {}, make_transpose);
}

}  // namespace onyx::kernels::cpu
