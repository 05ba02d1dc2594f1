// Optimized float ReduceSum, ReduceMean, ReduceMax and ReduceMin over one contiguous run
// of axes (the last axis, the spatial axes, ...; keepdims either way), twins of
// src/kernels/reference/reduce.cc. With the reduced axes last every output element is a
// SIMD reduction of one row (src/simd/rows.cc); with kept axes after them the output row
// accumulates the input rows. Threaded over output rows. The reference accumulates in
// double, these in float with several vector accumulators. Other axis sets, empty
// reductions and noop_with_empty_axes go to the reference.
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int64_t kGrain = 1 << 15;  // input elements per block of work

enum class Reduce { kSum, kMean, kMax, kMin };

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(Reduce kind, bool axes_from_input, std::vector<int64_t> axes, bool noop_empty,
               KernelFn reference)
      : kind_(kind),
        axes_from_input_(axes_from_input),
        axes_(std::move(axes)),
        noop_empty_(noop_empty),
        reference_(reference) {}

  void run(KernelContext& ctx) const override {
    if (!try_run(ctx)) reference_(ctx);
  }
  std::string_view name() const override { return "cpu.reduce"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool try_run(KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (!is_float(x) || !is_float(y)) return false;
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && ctx.has_input(1)) axes = ctx.input_ints(1);
    const int64_t rank = static_cast<int64_t>(x.rank());
    if (axes.empty()) {
      if (noop_empty_) return false;
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    std::vector<char> reduced(static_cast<size_t>(rank), 0);
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) return false;
      char& r = reduced[static_cast<size_t>(a < 0 ? a + rank : a)];
      if (r) return false;  // repeated: the reference reports it
      r = 1;
    }
    // The reduced axes must be one run [lo, hi), up to size-1 axes.
    int64_t lo = rank, hi = 0;
    for (int64_t k = 0; k < rank; ++k)
      if (reduced[static_cast<size_t>(k)] && x.dim(static_cast<size_t>(k)) != 1) {
        lo = std::min(lo, k);
        hi = k + 1;
      }
    int64_t outer = 1, r = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t d = x.dim(static_cast<size_t>(k));
      if (k >= lo && k < hi) {
        if (!reduced[static_cast<size_t>(k)] && d != 1) return false;
        r *= d;
      } else {
        (k < lo ? outer : inner) *= d;
      }
    }
    if (y.numel() != outer * inner) return false;
    if (y.numel() == 0) return true;
    if (r == 0) return false;  // empty reductions: the reference's identity values
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const Reduce kind = kind_;
    if (inner == 1) {
      parallel_blocks(ctx.pool(), outer, std::max<int64_t>(1, kGrain / r),
                      [&](int64_t o0, int64_t o1) {
                        for (int64_t o = o0; o < o1; ++o) {
                          const float* xr = px + o * r;
                          if (kind == Reduce::kSum || kind == Reduce::kMean) {
                            const float s = simd::row_sum(xr, r);
                            py[o] = kind == Reduce::kMean ? s / static_cast<float>(r) : s;
                          } else {
                            py[o] = simd::row_extreme(xr, r, kind == Reduce::kMax);
                          }
                        }
                      });
      return true;
    }
    const int acc_kind = kind == Reduce::kMax ? 1 : kind == Reduce::kMin ? 2 : 0;
    parallel_blocks(ctx.pool(), outer, std::max<int64_t>(1, kGrain / (r * inner)),
                    [&](int64_t o0, int64_t o1) {
                      for (int64_t o = o0; o < o1; ++o) {
                        const float* xo = px + o * r * inner;
                        float* yo = py + o * inner;
                        std::copy(xo, xo + inner, yo);
                        for (int64_t k = 1; k < r; ++k)
                          simd::row_accumulate(yo, xo + k * inner, inner, acc_kind);
                        if (kind == Reduce::kMean)
                          simd::row_affine(yo, yo, inner, 0.0f, 1.0f / static_cast<float>(r), 0.0f);
                      }
                    });
    return true;
  }

  Reduce kind_;
  bool axes_from_input_;
  std::vector<int64_t> axes_;
  bool noop_empty_;
  KernelFn reference_;
};

template <Reduce K>
std::unique_ptr<Kernel> make_reduce(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  const ir::Node& node = init.node;
  const bool from_input = K == Reduce::kSum ? node.opset >= 13 : node.opset >= 18;
  return std::make_unique<ReduceKernel>(
      K, from_input, from_input ? std::vector<int64_t>{} : node.attr_ints("axes"),
      node.attr_i("noop_with_empty_axes", 0) != 0, init.reference);
}

}  // namespace

void register_reduce(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  r.add_optimized("", "ReduceSum", 1, 1000, f32, make_reduce<Reduce::kSum>);
  r.add_optimized("", "ReduceMean", 1, 1000, f32, make_reduce<Reduce::kMean>);
  r.add_optimized("", "ReduceMax", 1, 1000, f32, make_reduce<Reduce::kMax>);
  r.add_optimized("", "ReduceMin", 1, 1000, f32, make_reduce<Reduce::kMin>);
}

}  // namespace onyx::kernels::cpu
