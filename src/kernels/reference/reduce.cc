// Reference kernels of the reduce family: Reduce* and ArgMax/ArgMin here;
// Softmax/LogSoftmax/Hardmax and the losses in reduce_softmax.cc; TopK, CumSum and
// CumProd in reduce_scan.cc.
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/arith.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_reduce_softmax(Registry& r);
void register_reduce_scan(Registry& r);

namespace {

template <typename T>
constexpr bool is_floatish_v = std::is_floating_point_v<T> || is_half_v<T>;

/// Wide accumulator: double for floats, 64-bit integers (wrapping) for integers.
template <typename T>
using wide_t = std::conditional_t<is_floatish_v<T>, double,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename T, typename V>
T to_t(V v) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else {
    // An integer ReduceLogSum / L2 / LogSumExp can come out NaN or infinite (log 0), where
    // the cast is UB: NaN gives 0, the rest saturates.
    return saturate_cast<T>(v);
  }
}

enum class RK { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

/// Where every input element goes: for each input axis, the stride of that axis in
/// the output (0 for a reduced axis); the output layout is the same with or without
/// keepdims.
struct ReducePlan {
  Dims dims;
  std::vector<int64_t> out_stride;
  int64_t out_numel = 1;
  int64_t count = 1;  ///< input elements per output element
};

/// Calls f(input_index, output_index) for every input element, in memory order.
template <typename F>
void for_each_element(const ReducePlan& p, F&& f) {
  const size_t r = p.dims.size();
  const int64_t n = dims_numel(p.dims);
  if (n == 0) return;
  if (r == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = p.dims[r - 1], istr = p.out_stride[r - 1];
  int64_t o = 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) f(i + j, o + j * istr);
    for (size_t a = r - 1; a-- > 0;) {
      o += p.out_stride[a];
      if (++idx[a] < p.dims[a]) break;
      o -= p.out_stride[a] * p.dims[a];
      idx[a] = 0;
    }
  }
}

ReducePlan make_plan(const KernelContext& ctx, const Dims& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const std::string& op = ctx.node().op_type;
  const bool from_input = op == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
  std::vector<int64_t> axes;
  if (from_input) {
    if (ctx.has_input(1)) axes = ctx.input_ints(1);
  } else {
    axes = ctx.attr_ints("axes");
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (ctx.attr_i("noop_with_empty_axes", 0) == 0) reduced.assign(reduced.size(), true);
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) ctx.fail("axis {} is out of range for rank {}", a, rank);
    size_t k = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[k]) ctx.fail("axis {} is repeated in 'axes'", a);
    reduced[k] = true;
  }
  ReducePlan p;
  p.dims = dims;
  p.out_stride.assign(dims.size(), 0);
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    if (reduced[k]) {
      // Only an empty X can pass int64 here (a 0 elsewhere); its count is then 0.
      if (!mul_fits(p.count, dims[k], p.count)) p.count = 0;
    } else {
      p.out_stride[k] = s;
      s *= dims[k];
    }
  }
  p.out_numel = s;
  return p;
}

template <RK K, typename T>
void reduce_minmax(const Tensor& x, Tensor& y, const ReducePlan& p) {
  // bool runs as uint8_t (False < True); vector<bool> has no element references.
  using A = std::conditional_t<is_half_v<T>, float, std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;
  constexpr bool kMaxOp = K == RK::kMax;
  A init;
  if constexpr (std::is_floating_point_v<A>)
    init = kMaxOp ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
  else
    init = kMaxOp ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
  std::vector<A> acc(static_cast<size_t>(p.out_numel), init);
  const T* xd = x.data<T>();
  for_each_element(p, [&](int64_t i, int64_t o) {
    A v = static_cast<A>(xd[i]);
    A& a = acc[static_cast<size_t>(o)];
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(v) || (kMaxOp ? v > a : v < a)) a = v;  // NaN propagates and sticks
    } else {
      if (kMaxOp ? v > a : v < a) a = v;
    }
  });
  T* yd = y.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) yd[o] = to_t<T>(acc[static_cast<size_t>(o)]);
}

template <RK K, typename T>
void reduce_accumulate(const Tensor& x, Tensor& y, const ReducePlan& p) {
  // Ops ending in sqrt/log run in double for every dtype; the rest in the wide type.
  constexpr bool kReal = K == RK::kL2 || K == RK::kLogSum || K == RK::kLogSumExp;
  using A = std::conditional_t<kReal, double, wide_t<T>>;
  const T* xd = x.data<T>();
  const size_t on = static_cast<size_t>(p.out_numel);
  std::vector<A> acc(on, K == RK::kProd ? A(1) : A(0));
  std::vector<double> shift;
  if constexpr (K == RK::kLogSumExp) {
    // exp(x - max) keeps the sum finite; an infinite or empty max shifts by 0.
    shift.assign(on, -std::numeric_limits<double>::infinity());
    for_each_element(p, [&](int64_t i, int64_t o) {
      double v = static_cast<double>(xd[i]);
      double& s = shift[static_cast<size_t>(o)];
      if (v > s) s = v;
    });
    for (double& s : shift)
      if (!std::isfinite(s)) s = 0;
  }
  for_each_element(p, [&](int64_t i, int64_t o) {
    A v = static_cast<A>(xd[i]);
    A& a = acc[static_cast<size_t>(o)];
    if constexpr (K == RK::kProd) {
      a = wmul(a, v);
    } else if constexpr (K == RK::kL1) {
      // |INT64_MIN| wraps to itself (as numpy's abs), not a signed overflow
      if constexpr (std::is_signed_v<A> || std::is_floating_point_v<A>) v = v < 0 ? wsub(A(0), v) : v;
      a = wadd(a, v);
    } else if constexpr (K == RK::kL2 || K == RK::kSumSquare) {
      a = wadd(a, wmul(v, v));
    } else if constexpr (K == RK::kLogSumExp) {
      a += std::exp(v - shift[static_cast<size_t>(o)]);
    } else {
      a = wadd(a, v);
    }
  });
  T* yd = y.data<T>();
  for (size_t o = 0; o < on; ++o) {
    A a = acc[o];
    if constexpr (K == RK::kMean) {
      if constexpr (std::is_integral_v<A>)
        a = p.count == 0 ? A(0) : static_cast<A>(a / static_cast<A>(p.count));
      else
        a = a / static_cast<double>(p.count);  // empty set: 0/0 = NaN
    } else if constexpr (K == RK::kL2) {
      a = std::sqrt(a);
    } else if constexpr (K == RK::kLogSum) {
      a = std::log(a);
    } else if constexpr (K == RK::kLogSumExp) {
      a = std::log(a) + shift[o];
    }
    yd[o] = to_t<T>(a);
  }
}

template <RK K>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  ReducePlan p = make_plan(ctx, x.dims());
  if (p.out_numel != y.numel())
    ctx.fail("output has {} elements, expected {}", y.numel(), p.out_numel);
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (K == RK::kMax || K == RK::kMin) {
      reduce_minmax<K, T>(x, y, p);
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
      unsupported_dtype(dtype_of<T>(), ctx.node().op_type.c_str());
    } else {
      reduce_accumulate<K, T>(x, y, p);
    }
  };
  if (x.dtype() == DType::kBool)
    body(Tag<bool>{});
  else
    dispatch_numeric(x.dtype(), body, ctx.node().op_type.c_str());
}

template <bool kMax>
void arg_reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attr_i("axis", 0);
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const bool last = ctx.attr_i("select_last_index", 0) != 0;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k)
    outer = checked_mul(outer, x.dim(static_cast<size_t>(k)), "the leading dims");
  for (int64_t k = axis + 1; k < rank; ++k)
    inner = checked_mul(inner, x.dim(static_cast<size_t>(k)), "the trailing dims");
  const int64_t n = x.dim(static_cast<size_t>(axis));
  if (n == 0 && outer * inner > 0) ctx.fail("cannot take the arg{} of an empty axis {}", kMax ? "max" : "min", axis);
  int64_t* yd = y.data<int64_t>();
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const T* xd = x.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = xd + o * n * inner + i;
        A best = static_cast<A>(base[0]);
        int64_t bi = 0;
        for (int64_t k = 1; k < n; ++k) {
          A v = static_cast<A>(base[k * inner]);
          bool better;
          if constexpr (std::is_floating_point_v<A>) {
            if (std::isnan(best)) break;  // the first NaN wins, like numpy
            if (std::isnan(v)) {
              best = v;
              bi = k;
              break;
            }
          }
          if (last) better = kMax ? v >= best : v <= best;
          else better = kMax ? v > best : v < best;
          if (better) {
            best = v;
            bi = k;
          }
        }
        yd[o * inner + i] = bi;
      }
    }
  }, kMax ? "ArgMax" : "ArgMin");
}

}  // namespace

void register_reduce(Registry& r) {
  std::vector<DType> num = numeric_types();
  std::vector<DType> num_bool = num;
  num_bool.push_back(DType::kBool);
  r.add("", "ReduceSum", 1, 1000, num, reduce_kernel<RK::kSum>);
  r.add("", "ReduceMean", 1, 1000, num, reduce_kernel<RK::kMean>);
  r.add("", "ReduceMax", 1, 1000, num_bool, reduce_kernel<RK::kMax>);
  r.add("", "ReduceMin", 1, 1000, num_bool, reduce_kernel<RK::kMin>);
  r.add("", "ReduceProd", 1, 1000, num, reduce_kernel<RK::kProd>);
  r.add("", "ReduceL1", 1, 1000, num, reduce_kernel<RK::kL1>);
  r.add("", "ReduceL2", 1, 1000, num, reduce_kernel<RK::kL2>);
  r.add("", "ReduceLogSum", 1, 1000, num, reduce_kernel<RK::kLogSum>);
  r.add("", "ReduceLogSumExp", 1, 1000, num, reduce_kernel<RK::kLogSumExp>);
  r.add("", "ReduceSumSquare", 1, 1000, num, reduce_kernel<RK::kSumSquare>);
  r.add("", "ArgMax", 1, 1000, num, arg_reduce_kernel<true>);
  r.add("", "ArgMin", 1, 1000, num, arg_reduce_kernel<false>);
  register_reduce_softmax(r);
  register_reduce_scan(r);
}

}  // namespace onyx::kernels
