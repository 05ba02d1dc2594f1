// Pad (opset 11+, mode "constant", pads >= 0) as row copies: each innermost output row is
// the constant, or the constant around a memcpy of one input row. Pads known at planning
// to be all zero (DenseNet's exports put such a Pad before each transition AveragePool)
// make the output a view of the input, as Identity. Other modes, negative pads (crops),
// the axes input and any shape or value the kernel does not expect go to the reference
// kernel, which computes them or reports what is wrong.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"

namespace onyx::kernels::cpu {
namespace {

/// The pads of a Pad node when it takes them: 2 * rank entries, all >= 0; empty otherwise.
std::vector<int64_t> usable_pads(KernelContext& ctx, size_t rank) {
  if (!ctx.has_input(1) || ctx.has_input(3)) return {};
  std::vector<int64_t> pads = ctx.input_ints(1);
  if (pads.size() != 2 * rank) return {};
  for (int64_t p : pads)
    if (p < 0) return {};
  return pads;
}

/// Fills n elements of `size` bytes at dst with the element at value.
void fill_elements(char* dst, int64_t n, const char* value, size_t size, bool zero) {
  if (n <= 0) return;
  if (zero) {
    std::memset(dst, 0, static_cast<size_t>(n) * size);
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + static_cast<size_t>(i) * size, value, size);
}

class PadKernel final : public Kernel {
 public:
  explicit PadKernel(KernelFn reference) : reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString || x.rank() == 0 || !ctx.has_output(0)) return reference_(ctx);
    const size_t r = x.rank();
    const std::vector<int64_t> pads = usable_pads(ctx, r);
    if (pads.empty()) return reference_(ctx);
    Tensor& y = ctx.output(0);
    if (y.dtype() != x.dtype() || y.rank() != r) return reference_(ctx);
    for (size_t a = 0; a < r; ++a)
      if (y.dim(a) != x.dim(a) + pads[a] + pads[a + r]) return reference_(ctx);
    const size_t es = dtype_size(x.dtype());
    // The constant: optional input 2 (one value of X's dtype), else zero.
    std::vector<char> value(es, 0);
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      const Tensor& v = ctx.input(2);
      if (v.dtype() != x.dtype() || v.numel() != 1) return reference_(ctx);
      std::memcpy(value.data(), v.raw(), es);
    }
    const bool zero = std::all_of(value.begin(), value.end(), [](char c) { return c == 0; });
    const int64_t rows = y.numel() / std::max<int64_t>(y.dim(r - 1), 1);
    if (y.numel() == 0) return;
    const int64_t in_w = x.dim(r - 1), out_w = y.dim(r - 1);
    const int64_t left = pads[r - 1], right = pads[2 * r - 1];
    const char* src = static_cast<const char*>(x.raw());
    char* dst = static_cast<char*>(y.raw());
    auto run_rows = [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> o(r, 0);
      // Output coordinates of row r0 (all but the last axis).
      for (size_t a = r - 1, rest = static_cast<size_t>(r0); a-- > 0;) {
        o[a] = static_cast<int64_t>(rest % static_cast<size_t>(y.dim(a)));
        rest /= static_cast<size_t>(y.dim(a));
      }
      for (int64_t row = r0; row < r1; ++row) {
        char* out = dst + static_cast<size_t>(row * out_w) * es;
        // The input row, or -1 when the row lies in the padding of a leading axis.
        int64_t in_row = 0;
        for (size_t a = 0; a + 1 < r && in_row >= 0; ++a) {
          const int64_t c = o[a] - pads[a];
          in_row = c < 0 || c >= x.dim(a) ? -1 : in_row * x.dim(a) + c;
        }
        if (in_row < 0 || in_w == 0) {
          fill_elements(out, out_w, value.data(), es, zero);
        } else {
          fill_elements(out, left, value.data(), es, zero);
          std::memcpy(out + static_cast<size_t>(left) * es,
                      src + static_cast<size_t>(in_row * in_w) * es, static_cast<size_t>(in_w) * es);
          fill_elements(out + static_cast<size_t>(left + in_w) * es, right, value.data(), es, zero);
        }
        for (size_t a = r - 1; a-- > 0;) {
          if (++o[a] < y.dim(a)) break;
          o[a] = 0;
        }
      }
    };
    // A copy: worth the threads from about a MiB.
    ThreadPool* pool = ctx.pool();
    const int64_t chunks =
        pool ? pool->chunks_for(rows, static_cast<double>(y.nbytes()), double(1 << 19)) : 1;
    if (chunks > 1)
      pool->parallel_for(rows, run_rows);
    else
      run_rows(0, rows);
  }
  std::string_view name() const override { return "cpu.pad"; }
  bool overwrites_outputs() const override { return true; }

 private:
  KernelFn reference_;
};

/// All-zero pads known at planning: Y is X (a view, as Identity).
class PadViewKernel final : public Kernel {
 public:
  void run(KernelContext& ctx) const override {
    const Value* v = ctx.input_value(0);
    if (!v || !v->is_tensor()) ctx.fail("input 0 is required");
    ctx.set_output(0, *v);
  }
  std::string_view name() const override { return "cpu.pad.view"; }
  bool makes_own_outputs() const override { return true; }
};

std::unique_ptr<Kernel> make_pad(const KernelInit& init) {
  const ir::Node& node = init.node;
  if (node.opset < 11 || node.attr_s("mode", "constant") != "constant") return nullptr;
  if (init.input_types.size() > 3 && init.input_types[3]) return nullptr;  // axes
  if (init.is_constant(1)) {
    const Tensor& p = *init.constants[1];
    bool all_zero = p.dtype() == DType::kInt64 && p.numel() > 0;
    for (int64_t i = 0; all_zero && i < p.numel(); ++i) all_zero = p.data<int64_t>()[i] == 0;
    // The pads must also match X's rank, which the shape function checked for a known rank.
    const ir::TypeInfo* xt = init.input_type(0);
    const bool rank_ok = xt && xt->is_tensor() && xt->has_shape &&
                         static_cast<int64_t>(2 * xt->shape.size()) == p.numel();
    if (all_zero && rank_ok) return std::make_unique<PadViewKernel>();
  }
  return std::make_unique<PadKernel>(init.reference);
}

}  // namespace

void register_pad(Registry& r) {
  r.add_optimized("", "Pad", 11, 1000, {}, make_pad);
}

}  // namespace onyx::kernels::cpu
