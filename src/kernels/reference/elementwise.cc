// Reference kernels of the elementwise family, unary part: math functions and
// activations. Binary/variadic arithmetic, PRelu and Clip are in elementwise_binary.cc.
#include <cmath>
#include <type_traits>

#include "kernels/reference/arith.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/minifloat.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_elementwise_binary(Registry& r);  // elementwise_binary.cc

namespace {

// Each op is a functor built from the kernel context (to read attributes once) whose
// call operator maps one value of the arithmetic type A (acc_t of the element type).

template <typename A>
constexpr bool is_float_v = std::is_floating_point_v<A>;

#define ONYX_SIMPLE_OP(Name, expr)                      \
  struct Name {                                         \
    explicit Name(const KernelContext&) {}              \
    template <typename A>                               \
    A operator()(A x) const {                           \
      return static_cast<A>(expr);                      \
    }                                                   \
  };

ONYX_SIMPLE_OP(Sqrt, std::sqrt(x))
ONYX_SIMPLE_OP(Exp, std::exp(x))
ONYX_SIMPLE_OP(Log, std::log(x))
ONYX_SIMPLE_OP(Reciprocal, A(1) / x)
ONYX_SIMPLE_OP(Floor, std::floor(x))
ONYX_SIMPLE_OP(Ceil, std::ceil(x))
ONYX_SIMPLE_OP(Round, std::nearbyint(x))  // default rounding mode: halves to even
ONYX_SIMPLE_OP(Sin, std::sin(x))
ONYX_SIMPLE_OP(Cos, std::cos(x))
ONYX_SIMPLE_OP(Tan, std::tan(x))
ONYX_SIMPLE_OP(Asin, std::asin(x))
ONYX_SIMPLE_OP(Acos, std::acos(x))
ONYX_SIMPLE_OP(Atan, std::atan(x))
ONYX_SIMPLE_OP(Sinh, std::sinh(x))
ONYX_SIMPLE_OP(Cosh, std::cosh(x))
ONYX_SIMPLE_OP(Asinh, std::asinh(x))
ONYX_SIMPLE_OP(Acosh, std::acosh(x))
ONYX_SIMPLE_OP(Atanh, std::atanh(x))
ONYX_SIMPLE_OP(Erf, std::erf(x))
ONYX_SIMPLE_OP(Tanh, std::tanh(x))
ONYX_SIMPLE_OP(Softsign, x / (A(1) + std::fabs(x)))
#undef ONYX_SIMPLE_OP

template <typename A>
A sigmoid(A x) {
  // split by sign so exp never overflows
  if (x >= 0) return A(1) / (A(1) + std::exp(-x));
  A e = std::exp(x);
  return e / (A(1) + e);
}

template <typename A>
A softplus(A x) {
  // log(1 + exp(x)) without overflow for large x
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct Sigmoid {
  explicit Sigmoid(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const { return sigmoid(x); }
};

struct Softplus {
  explicit Softplus(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const { return softplus(x); }
};

struct Mish {
  explicit Mish(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const { return x * std::tanh(softplus(x)); }
};

struct Swish {
  float alpha;
  explicit Swish(const KernelContext& c) : alpha(c.attr_f("alpha", 1.0f)) {}
  template <typename A>
  A operator()(A x) const { return x * sigmoid(A(alpha) * x); }
};

struct HardSigmoid {
  float alpha, beta;
  explicit HardSigmoid(const KernelContext& c)
      : alpha(c.attr_f("alpha", 0.2f)), beta(c.attr_f("beta", 0.5f)) {}
  template <typename A>
  A operator()(A x) const { return std::max(A(0), std::min(A(1), A(alpha) * x + A(beta))); }
};

struct HardSwish {
  explicit HardSwish(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const {
    return x * std::max(A(0), std::min(A(1), x / A(6) + A(0.5)));
  }
};

struct LeakyRelu {
  float alpha;
  explicit LeakyRelu(const KernelContext& c) : alpha(c.attr_f("alpha", 0.01f)) {}
  template <typename A>
  A operator()(A x) const { return x < 0 ? A(alpha) * x : x; }
};

struct Elu {
  float alpha;
  explicit Elu(const KernelContext& c) : alpha(c.attr_f("alpha", 1.0f)) {}
  template <typename A>
  A operator()(A x) const { return x < 0 ? A(alpha) * (std::exp(x) - A(1)) : x; }
};

struct Selu {
  float alpha, gamma;
  explicit Selu(const KernelContext& c)
      : alpha(c.attr_f("alpha", 1.67326319217681884765625f)),
        gamma(c.attr_f("gamma", 1.05070102214813232421875f)) {}
  template <typename A>
  A operator()(A x) const {
    return x > 0 ? A(gamma) * x : A(gamma) * (A(alpha) * std::exp(x) - A(alpha));
  }
};

struct Celu {
  float alpha;
  explicit Celu(const KernelContext& c) : alpha(c.attr_f("alpha", 1.0f)) {
    if (alpha == 0) c.fail("attribute 'alpha' must not be 0");
  }
  template <typename A>
  A operator()(A x) const {
    return std::max(A(0), x) + std::min(A(0), A(alpha) * (std::exp(x / A(alpha)) - A(1)));
  }
};

struct ThresholdedRelu {
  float alpha;
  explicit ThresholdedRelu(const KernelContext& c) : alpha(c.attr_f("alpha", 1.0f)) {}
  template <typename A>
  A operator()(A x) const { return x > A(alpha) ? x : A(0); }
};

struct Gelu {
  bool tanh_approx;
  explicit Gelu(const KernelContext& c) {
    std::string a = c.attr_s("approximate", "none");
    if (a != "none" && a != "tanh")
      c.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", a);
    tanh_approx = a == "tanh";
  }
  template <typename A>
  A operator()(A x) const {
    if (tanh_approx) {
      const A k = static_cast<A>(0.7978845608028654);  // sqrt(2 / pi)
      return A(0.5) * x * (A(1) + std::tanh(k * (x + A(0.044715) * x * x * x)));
    }
    return A(0.5) * x * (A(1) + std::erf(x * static_cast<A>(0.7071067811865476)));
  }
};

// ---- ops that also take integers ----

template <typename A>
A wrap_neg(A x) {
  if constexpr (std::is_integral_v<A>) return wsub(A(0), x);  // no overflow on INT_MIN
  else return -x;  // not 0 - x: -(+0) is -0
}

struct Neg {
  explicit Neg(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const { return wrap_neg(x); }
};

struct Abs {
  explicit Abs(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const {
    if constexpr (std::is_unsigned_v<A>) return x;
    else if constexpr (std::is_integral_v<A>) return x < 0 ? wrap_neg(x) : x;
    else return std::fabs(x);
  }
};

struct Sign {
  explicit Sign(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const {
    if (x > A(0)) return A(1);
    if constexpr (std::is_signed_v<A>)
      if (x < A(0)) return A(-1);
    return x;  // 0 (and NaN) map to themselves
  }
};

struct Relu {
  explicit Relu(const KernelContext&) {}
  template <typename A>
  A operator()(A x) const { return x < A(0) ? A(0) : x; }  // NaN stays NaN
};

struct Shrink {
  double lambd, bias;
  explicit Shrink(const KernelContext& c)
      : lambd(c.attr_f("lambd", 0.5f)), bias(c.attr_f("bias", 0.0f)) {}
  template <typename A>
  A operator()(A x) const {
    // On integers the shifted value may leave the type's range (uint64 max - 0 is 2^64 as
    // a double; a bias of 1e30 or NaN): it saturates instead of an undefined cast.
    const double v = static_cast<double>(x);
    if (v < -lambd) return saturate_cast<A>(v + bias);
    if (v > lambd) return saturate_cast<A>(v - bias);
    return A(0);
  }
};

template <typename Op, typename T>
void apply_unary(KernelContext& ctx, const Op& op) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel() || y.dtype() != x.dtype())
    ctx.fail("output {} {} does not match input {} {}", dtype_name(y.dtype()), dims_str(y.dims()),
             dtype_name(x.dtype()), dims_str(x.dims()));
  using A = acc_t<T>;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(op(static_cast<A>(px[i])));
}

/// Float-only op: float, double, float16, bfloat16.
template <typename Op>
void float_unary(KernelContext& ctx) {
  const Op op(ctx);
  dispatch_float(
      ctx.input(0).dtype(),
      [&](auto tag) { apply_unary<Op, typename decltype(tag)::type>(ctx, op); },
      ctx.node().op_type.c_str());
}

/// Op on floats and integers.
template <typename Op>
void numeric_unary(KernelContext& ctx) {
  const Op op(ctx);
  dispatch_numeric(
      ctx.input(0).dtype(),
      [&](auto tag) { apply_unary<Op, typename decltype(tag)::type>(ctx, op); },
      ctx.node().op_type.c_str());
}

// ---- IsNaN / IsInf: float and float8 inputs, bool output ----

template <typename Pred>
void classify(KernelContext& ctx, Pred pred) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel()) ctx.fail("output size does not match the input");
  bool* py = y.data<bool>();
  const int64_t n = x.numel();
  if (is_minifloat(x.dtype())) {
    const uint8_t* px = x.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) py[i] = pred(minifloat_to_float(x.dtype(), px[i]));
    return;
  }
  dispatch_float(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        for (int64_t i = 0; i < n; ++i) py[i] = pred(static_cast<acc_t<T>>(px[i]));
      },
      ctx.node().op_type.c_str());
}

void isnan_kernel(KernelContext& ctx) {
  classify(ctx, [](auto v) { return std::isnan(v); });
}

void isinf_kernel(KernelContext& ctx) {
  const bool neg = ctx.attr_i("detect_negative", 1) != 0;
  const bool pos = ctx.attr_i("detect_positive", 1) != 0;
  classify(ctx, [&](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

std::vector<DType> float_and_float8_types() {
  auto v = float_types();
  for (DType t : {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                  DType::kFloat8E5M2FNUZ})
    v.push_back(t);
  return v;
}

}  // namespace

void register_elementwise(Registry& r) {
  const auto fl = float_types();
  const auto num = numeric_types();
  struct Entry {
    const char* op;
    KernelFn fn;
  };
  const Entry float_ops[] = {
      {"Sqrt", float_unary<Sqrt>},
      {"Exp", float_unary<Exp>},
      {"Log", float_unary<Log>},
      {"Reciprocal", float_unary<Reciprocal>},
      {"Floor", float_unary<Floor>},
      {"Ceil", float_unary<Ceil>},
      {"Round", float_unary<Round>},
      {"Sin", float_unary<Sin>},
      {"Cos", float_unary<Cos>},
      {"Tan", float_unary<Tan>},
      {"Asin", float_unary<Asin>},
      {"Acos", float_unary<Acos>},
      {"Atan", float_unary<Atan>},
      {"Sinh", float_unary<Sinh>},
      {"Cosh", float_unary<Cosh>},
      {"Asinh", float_unary<Asinh>},
      {"Acosh", float_unary<Acosh>},
      {"Atanh", float_unary<Atanh>},
      {"Erf", float_unary<Erf>},
      {"Tanh", float_unary<Tanh>},
      {"Softsign", float_unary<Softsign>},
      {"Sigmoid", float_unary<Sigmoid>},
      {"Softplus", float_unary<Softplus>},
      {"Mish", float_unary<Mish>},
      {"Swish", float_unary<Swish>},
      {"HardSigmoid", float_unary<HardSigmoid>},
      {"HardSwish", float_unary<HardSwish>},
      {"LeakyRelu", float_unary<LeakyRelu>},
      {"Elu", float_unary<Elu>},
      {"Selu", float_unary<Selu>},
      {"Celu", float_unary<Celu>},
      {"ThresholdedRelu", float_unary<ThresholdedRelu>},
      {"Gelu", float_unary<Gelu>},
  };
  for (const Entry& e : float_ops) r.add("", e.op, 1, 1000, fl, e.fn);
  const Entry numeric_ops[] = {
      {"Neg", numeric_unary<Neg>},
      {"Abs", numeric_unary<Abs>},
      {"Sign", numeric_unary<Sign>},
      {"Relu", numeric_unary<Relu>},
      {"Shrink", numeric_unary<Shrink>},
  };
  for (const Entry& e : numeric_ops) r.add("", e.op, 1, 1000, num, e.fn);
  r.add("", "IsNaN", 9, 1000, float_and_float8_types(), isnan_kernel);
  r.add("", "IsInf", 10, 1000, float_and_float8_types(), isinf_kernel);
  register_elementwise_binary(r);
}

}  // namespace onyx::kernels
