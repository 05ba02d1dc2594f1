// Reference kernels of the elementwise family, broadcast part: Add, Sub, Mul, Div, Pow,
// Mod, BitShift, variadic Max/Min/Sum/Mean, Clip and PRelu.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/reference/broadcast.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/doubles.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_elementwise_binary(Registry& r);

namespace {

/// Unsigned type wide enough for wrapping arithmetic on integer A (at least 32 bits,
/// so uint8/uint16 operands never promote to a signed int that could overflow).
template <typename A>
using wrap_t = std::conditional_t<(sizeof(A) <= 4), uint32_t, uint64_t>;

// Integer +, -, * wrap around (two's complement) as in numpy; floats are plain.
template <typename A>
A add_wrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(wrap_t<A>(a) + wrap_t<A>(b));
  else return a + b;
}
template <typename A>
A sub_wrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(wrap_t<A>(a) - wrap_t<A>(b));
  else return a - b;
}
template <typename A>
A mul_wrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(wrap_t<A>(a) * wrap_t<A>(b));
  else return a * b;
}

/// Add, Sub, Mul and Div, a run-time choice so that the four share one body per dtype (the
/// reference kernels are a download in the WebAssembly build; the float hot paths are the
/// kernels of src/kernels/cpu).
struct ArithOp {
  enum Kind { kAdd, kSub, kMul, kDiv } kind;
  template <typename A>
  A operator()(A a, A b) const {
    switch (kind) {
      case kAdd: return add_wrap(a, b);
      case kSub: return sub_wrap(a, b);
      case kMul: return mul_wrap(a, b);
      case kDiv: break;
    }
    if constexpr (std::is_integral_v<A>) {
      // Integer division truncates toward zero. x/0 (undefined) gives 0 as numpy does;
      // INT_MIN / -1 wraps instead of trapping.
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>)
        if (b == -1) return sub_wrap(A(0), a);
      return static_cast<A>(a / b);
    } else {
      return a / b;
    }
  }
};

struct ModOp {
  bool fmod;
  explicit ModOp(const KernelContext& c) : fmod(c.attr_i("fmod", 0) != 0) {}
  template <typename A>
  A operator()(A a, A b) const {
    A r;
    if constexpr (std::is_integral_v<A>) {
      if (b == 0) return 0;  // numpy gives 0
      if constexpr (std::is_signed_v<A>)
        if (b == -1) return 0;  // avoids the INT_MIN % -1 trap
      r = static_cast<A>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    // fmod=0: Python semantics, the result takes the divisor's sign
    if constexpr (std::is_signed_v<A>)
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<A>(r + b);
    return r;
  }
};

struct BitShiftOp {
  bool left;
  explicit BitShiftOp(const KernelContext& c) {
    std::string d = c.attr_s("direction", "");
    if (d != "LEFT" && d != "RIGHT")
      c.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"{}\"", d);
    left = d == "LEFT";
  }
  template <typename A>
  A operator()(A x, A s) const {
    if constexpr (std::is_unsigned_v<A>) {
      if (s >= sizeof(A) * 8) return 0;  // shifting out every bit (a C++ shift would be UB)
      return left ? static_cast<A>(wrap_t<A>(x) << s) : static_cast<A>(x >> s);
    } else {
      return x;  // not registered for signed or float types
    }
  }
};

/// out = op(a, b) with numpy broadcasting; both inputs share the output's dtype.
template <typename Op>
[[gnu::noinline]] void binary_run(KernelContext& ctx, const Op& op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (a.dtype() != b.dtype() || y.dtype() != a.dtype())
    ctx.fail("inputs must have the same dtype, got {} and {}", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  const Dims bd = legacy_rhs_dims(ctx, a.dims(), b.dims());
  dispatch_numeric(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        map2_raw<T, T, T>(a.data<T>(), a.dims(), b.data<T>(), bd, y.data<T>(), y.dims(),
                          [&](const T& u, const T& v) {
                            return static_cast<T>(op(static_cast<A>(u), static_cast<A>(v)));
                          });
      },
      ctx.node().op_type.c_str());
}

template <typename Op>
void binary_kernel(KernelContext& ctx) {
  binary_run(ctx, Op(ctx));
}

template <ArithOp::Kind kKind>
void arith_kernel(KernelContext& ctx) {
  binary_run(ctx, ArithOp{kKind});
}

// ---- Pow: the exponent may have another numeric type than the base ----

/// Truncates toward zero; NaN and out-of-range values (undefined) give 0.
template <typename T>
T trunc_to_int(double v) {
  double t = std::trunc(v);
  if (!(t >= static_cast<double>(std::numeric_limits<int64_t>::min()) &&
        t < 9223372036854775808.0))
    return 0;
  return static_cast<T>(static_cast<int64_t>(t));
}

template <typename T>
T int_pow(T base, double e) {
  if (e >= 0 && e == std::floor(e) && e < 1.8446744073709552e19) {
    // exact integer power by squaring, wrapping like numpy
    using W = wrap_t<T>;
    uint64_t k = static_cast<uint64_t>(e);
    W r = 1, b = static_cast<W>(base);
    while (k) {
      if (k & 1) r = static_cast<W>(r * b);
      b = static_cast<W>(b * b);
      k >>= 1;
    }
    return static_cast<T>(r);
  }
  return trunc_to_int<T>(std::pow(static_cast<double>(base), e));
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (y.dtype() != a.dtype()) ctx.fail("output dtype must be the base's");
  const std::vector<double> e = load_doubles(b, "Pow (exponent)");
  const Dims bd = legacy_rhs_dims(ctx, a.dims(), b.dims());
  dispatch_numeric(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        map2_raw<T, double, T>(a.data<T>(), a.dims(), e.data(), bd, y.data<T>(), y.dims(),
                               [](const T& u, double v) {
                                 if constexpr (std::is_integral_v<T>)
                                   return int_pow<T>(u, v);
                                 else
                                   return static_cast<T>(static_cast<A>(
                                       std::pow(static_cast<double>(static_cast<A>(u)), v)));
                               });
      },
      "Pow");
}

// ---- variadic Max / Min / Sum / Mean ----

/// Max (max = true) or Min, a run-time choice so that the two share one body per dtype
/// (the reference kernels are a download in the WebAssembly build).
struct ExtremumOp {
  bool max = true;
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(a)) return a;  // NaN propagates, as numpy.maximum
    return (max ? a < b : b < a) || (b != b) ? b : a;
  }
  template <typename A>
  A finish(A v, size_t) const { return v; }
};

struct SumOp {
  template <typename A>
  A operator()(A a, A b) const { return add_wrap(a, b); }
  template <typename A>
  A finish(A v, size_t) const { return v; }
};

struct MeanOp : SumOp {
  template <typename A>
  A finish(A v, size_t n) const { return static_cast<A>(v / static_cast<A>(n)); }
};

template <typename Op>
[[gnu::noinline]] void variadic_run(KernelContext& ctx, const Op op) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(&ctx.input(i));
  if (ins.empty()) ctx.fail("needs at least one input");
  Tensor& y = ctx.output(0);
  for (const Tensor* t : ins)
    if (t->dtype() != y.dtype())
      ctx.fail("all inputs must have the same dtype, got {} and {}", dtype_name(t->dtype()),
               dtype_name(y.dtype()));
  dispatch_numeric(
      y.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const int64_t n = y.numel();
        std::vector<A> acc(static_cast<size_t>(n));
        const A none{};
        map2_raw<T, A, A>(ins[0]->data<T>(), ins[0]->dims(), &none, Dims{}, acc.data(), y.dims(),
                          [](const T& v, const A&) { return static_cast<A>(v); });
        for (size_t k = 1; k < ins.size(); ++k)
          map2_raw<A, T, A>(acc.data(), y.dims(), ins[k]->data<T>(), ins[k]->dims(), acc.data(),
                            y.dims(),
                            [&](const A& s, const T& v) { return op(s, static_cast<A>(v)); });
        T* py = y.data<T>();
        for (int64_t i = 0; i < n; ++i)
          py[i] = static_cast<T>(op.finish(acc[static_cast<size_t>(i)], ins.size()));
      },
      ctx.node().op_type.c_str());
}

void max_kernel(KernelContext& ctx) { variadic_run(ctx, ExtremumOp{true}); }
void min_kernel(KernelContext& ctx) { variadic_run(ctx, ExtremumOp{false}); }
void sum_kernel(KernelContext& ctx) { variadic_run(ctx, SumOp{}); }
void mean_kernel(KernelContext& ctx) { variadic_run(ctx, MeanOp{}); }

// ---- Clip ----

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel() || y.dtype() != x.dtype()) ctx.fail("output does not match input");
  dispatch_numeric(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        A lo = std::numeric_limits<A>::lowest();
        A hi = std::numeric_limits<A>::max();
        if (ctx.opset() < 11) {
          // Clip-1/6: float attributes (float types only at these versions)
          if constexpr (std::is_floating_point_v<A>) {
            lo = static_cast<A>(ctx.attr_f("min", std::numeric_limits<float>::lowest()));
            hi = static_cast<A>(ctx.attr_f("max", std::numeric_limits<float>::max()));
          }
        } else {
          for (size_t i = 1; i <= 2; ++i) {
            if (!ctx.has_input(i)) continue;
            const Tensor& b = ctx.input(i);
            if (b.dtype() != x.dtype() || b.numel() != 1)
              ctx.fail("input {} must be a single {} value, got {} {}", i == 1 ? "min" : "max",
                       dtype_name(x.dtype()), dtype_name(b.dtype()), dims_str(b.dims()));
            (i == 1 ? lo : hi) = static_cast<A>(b.data<T>()[0]);
          }
        }
        const T* px = x.data<T>();
        T* py = y.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          A v = static_cast<A>(px[i]);
          if (v < lo) v = lo;  // NaN compares false both times and passes through
          if (v > hi) v = hi;
          py[i] = static_cast<T>(v);
        }
      },
      "Clip");
}

// ---- PRelu ----

void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (s.dtype() != x.dtype()) ctx.fail("slope must have X's dtype");
  Dims sd = s.dims();
  // PRelu-1/6: a 1-D slope of C values applies along axis 1 (channels)
  if (ctx.opset() < 7 && sd.size() == 1 && x.rank() >= 2 && sd[0] != 1) sd.resize(x.rank() - 1, 1);
  dispatch_numeric(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        map2_raw<T, T, T>(x.data<T>(), x.dims(), s.data<T>(), sd, y.data<T>(), y.dims(),
                          [](const T& u, const T& v) {
                            A a = static_cast<A>(u);
                            if (a < A(0)) return static_cast<T>(mul_wrap(static_cast<A>(v), a));
                            return u;
                          });
      },
      "PRelu");
}

}  // namespace

void register_elementwise_binary(Registry& r) {
  const auto num = numeric_types();
  r.add("", "Add", 1, 1000, num, arith_kernel<ArithOp::kAdd>);
  r.add("", "Sub", 1, 1000, num, arith_kernel<ArithOp::kSub>);
  r.add("", "Mul", 1, 1000, num, arith_kernel<ArithOp::kMul>);
  r.add("", "Div", 1, 1000, num, arith_kernel<ArithOp::kDiv>);
  r.add("", "Mod", 10, 1000, num, binary_kernel<ModOp>);
  r.add("", "BitShift", 11, 1000, {DType::kUint8, DType::kUint16, DType::kUint32, DType::kUint64},
        binary_kernel<BitShiftOp>);
  r.add("", "Pow", 1, 1000, num, pow_kernel);
  r.add("", "Max", 1, 1000, num, max_kernel);
  r.add("", "Min", 1, 1000, num, min_kernel);
  r.add("", "Sum", 1, 1000, num, sum_kernel);
  r.add("", "Mean", 1, 1000, num, mean_kernel);
  r.add("", "Clip", 1, 1000, num, clip_kernel);
  r.add("", "PRelu", 1, 1000, num, prelu_kernel);
}

}  // namespace onyx::kernels
