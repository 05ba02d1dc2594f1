// Optimized float binary elementwise ops with numpy broadcasting: Add, Sub, Mul, Div,
// PRelu, variadic Max/Min/Sum/Mean, and Pow with the exponents that have an exact
// elementwise form. Twins of src/kernels/reference/elementwise_binary.cc.
//
// A broadcast is collapsed (size-1 axes dropped, axes that stay contiguous for both
// inputs merged) into rows along the last collapsed axis, on which each input either runs
// or stays on one value: same shapes are one row, a scalar is a row with a fixed operand,
// a per-channel [C, 1, 1] operand against [N, C, H, W] is N * C rows of H * W with a fixed
// operand each, a last-axis vector is rows that both run. Every row is one SIMD call
// (src/simd/binary.cc); rows, or pieces of one long row, are split over the pool.
// Anything else (other dtypes, pre-opset-7 broadcast attributes, more than 8 collapsed
// axes, shapes the reference would reject) goes to the reference kernel.
#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/register.h"
#include "simd/activations.h"
#include "simd/binary.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int kMaxAxes = 8;          // collapsed outer axes a plan takes
constexpr int64_t kGrain = 1 << 15;  // elements per block of work: ~10-30 us of memory traffic

/// The rows of a two-input broadcast: `rows` rows of `n` output elements; along a row
/// input a steps by a_step (0 or 1), input b by b_step. Row r starts at element
/// offset sum_k idx_k * sa[k] of a (idx = r written in the mixed radix `dims`), and of b
/// likewise.
struct Rows {
  int axes = 0;
  int64_t dims[kMaxAxes] = {}, sa[kMaxAxes] = {}, sb[kMaxAxes] = {};
  int64_t rows = 1, n = 1;
  int a_step = 0, b_step = 0;

  /// Offsets of row r into a and b.
  void offsets(int64_t r, int64_t& oa, int64_t& ob) const {
    oa = ob = 0;
    for (int k = axes; k-- > 0;) {
      const int64_t i = r % dims[k];
      r /= dims[k];
      oa += i * sa[k];
      ob += i * sb[k];
    }
  }
};

/// Plans the broadcast of a and b to `out`; false when they do not broadcast to it or
/// the collapsed shape has too many axes.
bool plan_rows(const Dims& out, const Dims& a, const Dims& b, Rows& p) {
  constexpr size_t kMaxRank = 16;
  const size_t rank = out.size();
  if (rank > kMaxRank || a.size() > rank || b.size() > rank) return false;
  int64_t full[2][kMaxRank] = {};
  const Dims* in[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    const Dims& d = *in[k];
    int64_t s = 1;
    for (size_t j = d.size(); j-- > 0;) {
      const size_t axis = j + rank - d.size();
      if (d[j] == out[axis])
        full[k][axis] = d[j] == 1 ? 0 : s;
      else if (d[j] != 1)
        return false;
      s *= d[j];
    }
  }
  int64_t shape[kMaxRank], st[2][kMaxRank];
  size_t m = 0;
  for (size_t axis = 0; axis < rank; ++axis) {
    if (out[axis] == 1) continue;
    if (m > 0 && st[0][m - 1] == full[0][axis] * out[axis] &&
        st[1][m - 1] == full[1][axis] * out[axis]) {
      shape[m - 1] *= out[axis];
      st[0][m - 1] = full[0][axis];
      st[1][m - 1] = full[1][axis];
      continue;
    }
    shape[m] = out[axis];
    st[0][m] = full[0][axis];
    st[1][m] = full[1][axis];
    ++m;
  }
  if (m == 0) {  // one element
    p = Rows{};
    return true;
  }
  if (m - 1 > static_cast<size_t>(kMaxAxes)) return false;
  p.axes = static_cast<int>(m - 1);
  p.rows = 1;
  for (size_t k = 0; k + 1 < m; ++k) {
    p.dims[k] = shape[k];
    p.sa[k] = st[0][k];
    p.sb[k] = st[1][k];
    p.rows *= shape[k];
  }
  p.n = shape[m - 1];
  p.a_step = st[0][m - 1] != 0;
  p.b_step = st[1][m - 1] != 0;
  return true;
}

/// y = op(a, b) over the plan, threaded over rows (or over pieces of a few long rows).
void run_rows(simd::Binary op, const Rows& p, const float* a, const float* b, float* y,
              ThreadPool* pool) {
  const int64_t threads = pool ? pool->size() : 1;
  // Few long rows: cut each into segments so every thread gets work.
  const int64_t segs =
      threads > 1 && p.rows < 4 * threads ? std::clamp<int64_t>(p.n / kGrain, 1, 4 * threads) : 1;
  const int64_t units = p.rows * segs;
  const int64_t grain = segs > 1 ? 1 : std::max<int64_t>(1, kGrain / std::max<int64_t>(p.n, 1));
  parallel_blocks(pool, units, grain, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t r = u / segs, s = u % segs;
      const int64_t c0 = s * p.n / segs, c1 = (s + 1) * p.n / segs;
      int64_t oa, ob;
      p.offsets(r, oa, ob);
      simd::binary(op, a + oa + c0 * p.a_step, p.a_step, b + ob + c0 * p.b_step, p.b_step,
                   y + r * p.n + c0, c1 - c0);
    }
  });
}

/// y = op(a, b) with broadcasting; false when the plan does not take these shapes.
bool broadcast_binary(simd::Binary op, const Tensor& a, const Tensor& b, Tensor& y,
                      ThreadPool* pool) {
  Rows p;
  if (!plan_rows(y.dims(), a.dims(), b.dims(), p)) return false;
  if (y.numel() == 0) return true;
  // The output may share a buffer only with an input of its own shape (in place).
  run_rows(op, p, a.data<float>(), b.data<float>(), y.data<float>(), pool);
  return true;
}

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(simd::Binary op, KernelFn reference) : op_(op), reference_(reference) {}
  void run(KernelContext& ctx) const override {
    if (ctx.num_inputs() == 2 && ctx.has_input(0) && ctx.has_input(1)) {
      const Tensor& a = ctx.input(0);
      const Tensor& b = ctx.input(1);
      Tensor& y = ctx.output(0);
      if (is_float(a) && is_float(b) && is_float(y) && broadcast_binary(op_, a, b, y, ctx.pool()))
        return;
    }
    reference_(ctx);
  }
  std::string_view name() const override { return "cpu.binary"; }
  bool overwrites_outputs() const override { return true; }

 private:
  simd::Binary op_;
  KernelFn reference_;
};

/// Max, Min, Sum, Mean over any number of inputs: y = in0 op in1, then y = y op in_k (in
/// the reference's order); Mean divides at the end.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(simd::Binary op, bool mean, KernelFn reference)
      : op_(op), mean_(mean), reference_(reference) {}
  void run(KernelContext& ctx) const override {
    if (!try_run(ctx)) reference_(ctx);
  }
  std::string_view name() const override { return "cpu.variadic"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool try_run(KernelContext& ctx) const {
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      ins.push_back(&ctx.input(i));
      if (!is_float(*ins.back())) return false;
    }
    if (ins.empty()) return false;
    Tensor& y = ctx.output(0);
    if (!is_float(y)) return false;
    // Every input must broadcast to y (checked before anything is written).
    for (const Tensor* t : ins) {
      Rows p;
      if (!plan_rows(y.dims(), y.dims(), t->dims(), p)) return false;
    }
    if (y.numel() == 0) return true;
    float* py = y.data<float>();
    if (ins.size() == 1) {
      if (ins[0]->numel() != y.numel()) return false;
      simd::unary(simd::Unary::kIdentity, {}, ins[0]->data<float>(), py, y.numel());
    } else {
      if (!broadcast_binary(op_, *ins[0], *ins[1], y, ctx.pool())) return false;
      for (size_t k = 2; k < ins.size(); ++k) {
        Rows p;
        if (!plan_rows(y.dims(), y.dims(), ins[k]->dims(), p)) return false;
        run_rows(op_, p, py, ins[k]->data<float>(), py, ctx.pool());
      }
    }
    if (mean_) {
      const float count = static_cast<float>(ins.size());
      simd::binary(simd::Binary::kDiv, py, 1, &count, 0, py, y.numel());
    }
    return true;
  }

  simd::Binary op_;
  bool mean_;
  KernelFn reference_;
};

/// The exponent of Pow as a double when it is a single value of a numeric dtype.
bool scalar_exponent(const Tensor& e, double& v) {
  if (e.numel() != 1) return false;
  switch (e.dtype()) {
    case DType::kFloat:
      v = e.data<float>()[0];
      return true;
    case DType::kDouble:
      v = e.data<double>()[0];
      return true;
    case DType::kInt32:
      v = e.data<int32_t>()[0];
      return true;
    case DType::kInt64:
      v = static_cast<double>(e.data<int64_t>()[0]);
      return true;
    default:
      return false;
  }
}

/// Pow with a single exponent that has an exact elementwise form (0, 0.5, 1, 2, 3, -1:
/// what exports of x^2, sqrt and friends use); other exponents go to the reference.
class PowKernel final : public Kernel {
 public:
  explicit PowKernel(KernelFn reference) : reference_(reference) {}
  void run(KernelContext& ctx) const override {
    if (ctx.has_input(0) && ctx.has_input(1)) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.output(0);
      double e;
      simd::Unary op;
      if (is_float(x) && is_float(y) && y.numel() == x.numel() &&
          scalar_exponent(ctx.input(1), e) && exponent_op(e, op)) {
        const float* px = x.data<float>();
        float* py = y.data<float>();
        parallel_blocks(ctx.pool(), x.numel(), kGrain, [&](int64_t i0, int64_t i1) {
          simd::unary(op, {}, px + i0, py + i0, i1 - i0);
        });
        return;
      }
    }
    reference_(ctx);
  }
  std::string_view name() const override { return "cpu.pow"; }
  bool overwrites_outputs() const override { return true; }

 private:
  static bool exponent_op(double e, simd::Unary& op) {
    if (e == 0)
      op = simd::Unary::kOne;
    else if (e == 0.5)
      op = simd::Unary::kSqrtPow;
    else if (e == 1)
      op = simd::Unary::kIdentity;
    else if (e == 2)
      op = simd::Unary::kSquare;
    else if (e == 3)
      op = simd::Unary::kCube;
    else if (e == -1)
      op = simd::Unary::kReciprocal;
    else
      return false;
    return true;
  }
  KernelFn reference_;
};

template <simd::Binary Op>
std::unique_ptr<Kernel> make_binary(const KernelInit& init) {
  // Before opset 7 a broadcast attribute changes the alignment; PRelu-1..6 too.
  if (init.node.opset < 7 || !maybe_float(init, 0) || !maybe_float(init, 1)) return nullptr;
  return std::make_unique<BinaryKernel>(Op, init.reference);
}

template <simd::Binary Op, bool kMean>
std::unique_ptr<Kernel> make_variadic(const KernelInit& init) {
  if (init.node.opset < 8) return nullptr;  // Max/Min/Sum/Mean broadcast from opset 8
  for (size_t i = 0; i < init.input_types.size(); ++i)
    if (!maybe_float(init, i)) return nullptr;
  return std::make_unique<VariadicKernel>(Op, kMean, init.reference);
}

std::unique_ptr<Kernel> make_pow(const KernelInit& init) {
  if (init.node.opset < 7 || !maybe_float(init, 0)) return nullptr;
  return std::make_unique<PowKernel>(init.reference);
}

}  // namespace

void register_elementwise(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  r.add_optimized("", "Add", 7, 1000, f32, make_binary<simd::Binary::kAdd>);
  r.add_optimized("", "Sub", 7, 1000, f32, make_binary<simd::Binary::kSub>);
  r.add_optimized("", "Mul", 7, 1000, f32, make_binary<simd::Binary::kMul>);
  r.add_optimized("", "Div", 7, 1000, f32, make_binary<simd::Binary::kDiv>);
  r.add_optimized("", "PRelu", 7, 1000, f32, make_binary<simd::Binary::kPRelu>);
  r.add_optimized("", "Max", 8, 1000, f32, make_variadic<simd::Binary::kMax, false>);
  r.add_optimized("", "Min", 8, 1000, f32, make_variadic<simd::Binary::kMin, false>);
  r.add_optimized("", "Sum", 8, 1000, f32, make_variadic<simd::Binary::kAdd, false>);
  r.add_optimized("", "Mean", 8, 1000, f32, make_variadic<simd::Binary::kAdd, true>);
  r.add_optimized("", "Pow", 7, 1000, f32, make_pow);
}

}  // namespace onyx::kernels::cpu
