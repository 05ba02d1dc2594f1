// Optimized float Softmax and LogSoftmax (every opset: before 13 the input is coerced to
// 2-D at `axis`), twins of src/kernels/reference/reduce_softmax.cc. A softmax over the last
// axis is one SIMD row each (src/simd/rows.cc), threaded over rows; over another axis,
// blocks of adjacent columns are done together, threaded over (outer index, column block).
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int64_t kGrain = 1 << 13;  // elements per block of work (an exp each: ~5-10 us)
constexpr int64_t kColumns = 256;    // columns of a strided softmax done together

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(bool log, int64_t axis, bool coerce, KernelFn reference)
      : log_(log), axis_(axis), coerce_(coerce), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (!is_float(x) || !is_float(y) || y.dims() != x.dims() || axis < 0 || axis > rank ||
        (axis == rank && !coerce_)) {
      reference_(ctx);
      return;
    }
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t d = x.dim(static_cast<size_t>(k));
      if (k < axis)
        outer *= d;
      else if (k == axis || coerce_)
        n *= d;
      else
        inner *= d;
    }
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    if (inner == 1) {
      parallel_blocks(ctx.pool(), outer, std::max<int64_t>(1, kGrain / n),
                      [&](int64_t r0, int64_t r1) {
                        for (int64_t r = r0; r < r1; ++r)
                          simd::softmax_row(px + r * n, py + r * n, n, log_);
                      });
      return;
    }
    const int64_t blocks = (inner + kColumns - 1) / kColumns;
    const int64_t per_unit = n * std::min(inner, kColumns);
    parallel_blocks(
        ctx.pool(), outer * blocks, std::max<int64_t>(1, kGrain / per_unit),
        [&](int64_t u0, int64_t u1) {
          std::vector<float> scratch(static_cast<size_t>(2 * std::min(inner, kColumns)));
          for (int64_t u = u0; u < u1; ++u) {
            const int64_t o = u / blocks, j0 = (u % blocks) * kColumns,
                          w = std::min(kColumns, inner - j0);
            const int64_t off = o * n * inner + j0;
            simd::softmax_columns(px + off, py + off, n, inner, w, log_, scratch.data());
          }
        });
  }
  std::string_view name() const override { return "cpu.softmax"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool log_;
  int64_t axis_;
  bool coerce_;
  KernelFn reference_;
};

template <bool kLog>
std::unique_ptr<Kernel> make_softmax(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  const bool coerce = init.node.opset < 13;
  return std::make_unique<SoftmaxKernel>(kLog, init.node.attr_i("axis", coerce ? 1 : -1), coerce,
                                         init.reference);
}

}  // namespace

void register_softmax(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  r.add_optimized("", "Softmax", 1, 1000, f32, make_softmax<false>);
  r.add_optimized("", "LogSoftmax", 1, 1000, f32, make_softmax<true>);
}

}  // namespace onyx::kernels::cpu
