// Reference kernels of the logic family: comparisons, And/Or/Xor/Not, bitwise ops and
// Where, all with numpy broadcasting.
#include <string>
#include <type_traits>

#include "kernels/reference/broadcast.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// The comparison ops, a run-time choice so that they share one body per dtype (the
/// reference kernels are a download in the WebAssembly build).
enum class Cmp { kEqual, kGreater, kGreaterOrEqual, kLess, kLessOrEqual };

struct CompareOp {
  Cmp cmp;
  template <typename A>
  bool operator()(const A& a, const A& b) const {
    switch (cmp) {
      case Cmp::kEqual: return a == b;
      case Cmp::kGreater: return b < a;
      case Cmp::kGreaterOrEqual: return b <= a;
      case Cmp::kLess: return a < b;
      case Cmp::kLessOrEqual: return a <= b;
    }
    return false;
  }
};

/// Comparison of two same-typed inputs (numeric, bool or string) into a bool tensor.
[[gnu::noinline]] void compare(KernelContext& ctx, const CompareOp op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (a.dtype() != b.dtype())
    ctx.fail("inputs must have the same dtype, got {} and {}", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  const Dims bd = legacy_rhs_dims(ctx, a.dims(), b.dims());
  dispatch_all(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        map2_raw<T, T, bool>(a.data<T>(), a.dims(), b.data<T>(), bd, y.data<bool>(), y.dims(),
                             [&](const T& u, const T& v) {
                               if constexpr (std::is_same_v<T, Float16> ||
                                             std::is_same_v<T, BFloat16>)
                                 return op(static_cast<float>(u), static_cast<float>(v));
                               else
                                 return op(u, v);
                             });
      },
      ctx.node().op_type.c_str());
}

template <Cmp kCmp>
void compare_kernel(KernelContext& ctx) {
  compare(ctx, CompareOp{kCmp});
}

template <typename F>
void bool_binary(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != DType::kBool || b.dtype() != DType::kBool)
    ctx.fail("inputs must be bool, got {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  Tensor& y = ctx.output(0);
  const Dims bd = legacy_rhs_dims(ctx, a.dims(), b.dims());
  map2_raw<bool, bool, bool>(a.data<bool>(), a.dims(), b.data<bool>(), bd, y.data<bool>(),
                             y.dims(), f);
}

void and_kernel(KernelContext& ctx) {
  bool_binary(ctx, [](bool u, bool v) { return u && v; });
}
void or_kernel(KernelContext& ctx) {
  bool_binary(ctx, [](bool u, bool v) { return u || v; });
}
void xor_kernel(KernelContext& ctx) {
  bool_binary(ctx, [](bool u, bool v) { return u != v; });
}

void not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.dtype() != DType::kBool) ctx.fail("input must be bool, got {}", dtype_name(x.dtype()));
  if (y.numel() != x.numel()) ctx.fail("output size does not match the input");
  const bool* px = x.data<bool>();
  bool* py = y.data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = !px[i];
}

template <typename F>
void bitwise_binary(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (a.dtype() != b.dtype())
    ctx.fail("inputs must have the same dtype, got {} and {}", dtype_name(a.dtype()),
             dtype_name(b.dtype()));
  dispatch_int(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        map2<T, T, T>(a, b, y, [&](T u, T v) { return static_cast<T>(f(u, v)); });
      },
      ctx.node().op_type.c_str());
}

void bitwise_and_kernel(KernelContext& ctx) {
  bitwise_binary(ctx, [](auto u, auto v) { return u & v; });
}
void bitwise_or_kernel(KernelContext& ctx) {
  bitwise_binary(ctx, [](auto u, auto v) { return u | v; });
}
void bitwise_xor_kernel(KernelContext& ctx) {
  bitwise_binary(ctx, [](auto u, auto v) { return u ^ v; });
}

void bitwise_not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel()) ctx.fail("output size does not match the input");
  dispatch_int(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        T* py = y.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<T>(~px[i]);
      },
      "BitwiseNot");
}

void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& yv = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (c.dtype() != DType::kBool) ctx.fail("condition must be bool, got {}", dtype_name(c.dtype()));
  if (x.dtype() != yv.dtype() || out.dtype() != x.dtype())
    ctx.fail("X and Y must have the same dtype, got {} and {}", dtype_name(x.dtype()),
             dtype_name(yv.dtype()));
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map3<bool, T, T, T>(c, x, yv, out,
                        [](bool k, const T& u, const T& v) -> const T& { return k ? u : v; });
  });
}

std::vector<DType> with(std::vector<DType> v, std::initializer_list<DType> more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

}  // namespace

void register_logic(Registry& r) {
  const auto cmp_types = with(numeric_types(), {DType::kBool, DType::kString});
  r.add("", "Equal", 1, 1000, cmp_types, compare_kernel<Cmp::kEqual>);
  r.add("", "Greater", 1, 1000, cmp_types, compare_kernel<Cmp::kGreater>);
  r.add("", "GreaterOrEqual", 12, 1000, cmp_types, compare_kernel<Cmp::kGreaterOrEqual>);
  r.add("", "Less", 1, 1000, cmp_types, compare_kernel<Cmp::kLess>);
  r.add("", "LessOrEqual", 12, 1000, cmp_types, compare_kernel<Cmp::kLessOrEqual>);
  r.add("", "And", 1, 1000, {DType::kBool}, and_kernel);
  r.add("", "Or", 1, 1000, {DType::kBool}, or_kernel);
  r.add("", "Xor", 1, 1000, {DType::kBool}, xor_kernel);
  r.add("", "Not", 1, 1000, {DType::kBool}, not_kernel);
  const std::vector<DType> ints = {DType::kInt8,  DType::kInt16,  DType::kInt32,  DType::kInt64,
                                   DType::kUint8, DType::kUint16, DType::kUint32, DType::kUint64};
  r.add("", "BitwiseAnd", 18, 1000, ints, bitwise_and_kernel);
  r.add("", "BitwiseOr", 18, 1000, ints, bitwise_or_kernel);
  r.add("", "BitwiseXor", 18, 1000, ints, bitwise_xor_kernel);
  r.add("", "BitwiseNot", 18, 1000, ints, bitwise_not_kernel);
  r.add("", "Where", 9, 1000, all_types(), where_kernel, 1);
}

}  // namespace onyx::kernels
