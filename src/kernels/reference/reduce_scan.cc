// Reference kernels of the reduce family, part 3: TopK, CumSum and CumProd.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {
namespace {

struct Slices {
  int64_t outer = 1, n = 1, inner = 1;
};

/// The [outer, n, inner] view around `axis`. For an empty tensor outer is 0 (its other
/// extents may not even multiply), so no loop over them runs.
Slices slices_at(const Dims& dims, int64_t axis) {
  Slices s;
  bool empty = false;
  for (int64_t d : dims) empty = empty || d == 0;
  for (int64_t k = 0; k < static_cast<int64_t>(dims.size()); ++k) {
    int64_t d = dims[static_cast<size_t>(k)];
    if (k == axis)
      s.n = d;
    else if (!empty)
      (k < axis ? s.outer : s.inner) *= d;
  }
  if (empty) s.outer = 0;
  return s;
}

int64_t axis_attr(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

/// a > b where NaN counts as larger than every number (and equal to NaN), so the
/// sort order stays a strict weak ordering.
template <typename A>
bool greater(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

void topk_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = axis_attr(ctx, ctx.attr_i("axis", -1), rank);
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.attr_i("k", -1);
  } else {
    std::vector<int64_t> kv = ctx.input_ints(1);
    if (kv.size() != 1) ctx.fail("'K' must hold exactly one value, got {}", kv.size());
    k = kv[0];
  }
  const Slices s = slices_at(x.dims(), axis);
  if (k < 0 || k > s.n) ctx.fail("k = {} is out of range [0, {}] for axis {}", k, s.n, axis);
  const bool largest = ctx.attr_i("largest", 1) != 0;
  Tensor& values = ctx.output(0);
  int64_t* id = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
  if (x.numel() == 0) return;  // the outputs are empty too (k <= n); no column buffer
  if (values.numel() != s.outer * k * s.inner)
    ctx.fail("output has {} elements, expected {}", values.numel(), s.outer * k * s.inner);
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xd = x.data<T>();
    T* vd = values.data<T>();
    std::vector<A> col(static_cast<size_t>(s.n));
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    // Ties keep the lower index first, whatever the direction.
    auto before = [&](int64_t a, int64_t b) {
      A va = col[static_cast<size_t>(a)], vb = col[static_cast<size_t>(b)];
      if (largest ? greater(va, vb) : greater(vb, va)) return true;
      if (largest ? greater(vb, va) : greater(va, vb)) return false;
      return a < b;
    };
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* base = xd + o * s.n * s.inner + i;
        for (int64_t j = 0; j < s.n; ++j) col[static_cast<size_t>(j)] = static_cast<A>(base[j * s.inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = (o * k + j) * s.inner + i;
          int64_t src = order[static_cast<size_t>(j)];
          vd[at] = base[src * s.inner];
          if (id) id[at] = src;
        }
      }
  }, "TopK");
}

template <typename A>
A wrap_op(A a, A b, bool mul) {
  if constexpr (std::is_integral_v<A>) {
    uint64_t r = mul ? static_cast<uint64_t>(a) * static_cast<uint64_t>(b)
                     : static_cast<uint64_t>(a) + static_cast<uint64_t>(b);
    return static_cast<A>(r);
  } else {
    return mul ? a * b : a + b;
  }
}

template <bool kProd>
void cumulative_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> av = ctx.input_ints(1);
  if (av.size() != 1 || ctx.input(1).rank() > 1)
    ctx.fail("'axis' must be a scalar or a 1-element 1-D tensor");
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = axis_attr(ctx, av[0], rank);
  const bool exclusive = ctx.attr_i("exclusive", 0) != 0;
  const bool reverse = ctx.attr_i("reverse", 0) != 0;
  const Slices s = slices_at(x.dims(), axis);
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    const A ident = kProd ? A(1) : A(0);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        A acc = ident;
        for (int64_t t = 0; t < s.n; ++t) {
          int64_t j = reverse ? s.n - 1 - t : t;
          int64_t at = (o * s.n + j) * s.inner + i;
          A v = static_cast<A>(xd[at]);
          if (exclusive) {
            yd[at] = T(acc);
            acc = wrap_op(acc, v, kProd);
          } else {
            acc = wrap_op(acc, v, kProd);
            yd[at] = T(acc);
          }
        }
      }
  }, kProd ? "CumProd" : "CumSum");
}

}  // namespace

void register_reduce_scan(Registry& r) {
  r.add("", "TopK", 1, 1000, numeric_types(), topk_kernel);
  r.add("", "CumSum", 11, 1000, numeric_types(), cumulative_kernel<false>);
  r.add("", "CumProd", 26, 1000, numeric_types(), cumulative_kernel<true>);
}

}  // namespace onyx::kernels
