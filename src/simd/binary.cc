// Binary float rows (see binary.h), compiled once per SIMD target through Highway's
// foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/binary.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "simd/tail-inl.h"

#include "simd/binary.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

struct AddF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Add(a, b);
  }
};
struct SubF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Sub(a, b);
  }
};
struct MulF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Mul(a, b);
  }
};
struct DivF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Div(a, b);
  }
};
// The reference: NaN a stays; else b when a < b or b is NaN.
struct MaxF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    const V r = hn::IfThenElse(hn::Or(hn::Lt(a, b), hn::IsNaN(b)), b, a);
    return hn::IfThenElse(hn::IsNaN(a), a, r);
  }
};
struct MinF {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    const V r = hn::IfThenElse(hn::Or(hn::Lt(b, a), hn::IsNaN(b)), b, a);
    return hn::IfThenElse(hn::IsNaN(a), a, r);
  }
};
struct PReluF {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::IfThenElse(hn::Lt(a, hn::Zero(d)), hn::Mul(b, a), a);
  }
};

/// The row with both operands running (AS = BS = true) or one of them fixed. Tail lanes
/// past n come from a masked load (zeros) and are never stored.
template <bool AS, bool BS, class Op>
HWY_INLINE void row(const Op& op, const float* a, const float* b, float* y, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto sa = hn::Set(d, a[0]), sb = hn::Set(d, b[0]);
  auto load_a = [&](int64_t i) { return AS ? hn::LoadU(d, a + i) : sa; };
  auto load_b = [&](int64_t i) { return BS ? hn::LoadU(d, b + i) : sb; };
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const auto r0 = op(d, load_a(i), load_b(i));
    const auto r1 = op(d, load_a(i + L), load_b(i + L));
    const auto r2 = op(d, load_a(i + 2 * L), load_b(i + 2 * L));
    const auto r3 = op(d, load_a(i + 3 * L), load_b(i + 3 * L));
    hn::StoreU(r0, d, y + i);
    hn::StoreU(r1, d, y + i + L);
    hn::StoreU(r2, d, y + i + 2 * L);
    hn::StoreU(r3, d, y + i + 3 * L);
  }
  for (; i + L <= n; i += L) hn::StoreU(op(d, load_a(i), load_b(i)), d, y + i);
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    const auto va = AS ? TailLoad(m, d, a + i) : sa;
    const auto vb = BS ? TailLoad(m, d, b + i) : sb;
    TailStore(op(d, va, vb), m, d, y + i);
  }
}

template <class Op>
HWY_INLINE void rows(const float* a, int a_step, const float* b, int b_step, float* y, int64_t n) {
  const Op op;
  if (a_step && b_step)
    row<true, true>(op, a, b, y, n);
  else if (a_step)
    row<true, false>(op, a, b, y, n);
  else if (b_step)
    row<false, true>(op, a, b, y, n);
  else
    row<false, false>(op, a, b, y, n);
}

void BinaryImpl(int32_t op, const float* a, int a_step, const float* b, int b_step, float* y,
                int64_t n) {
  switch (static_cast<Binary>(op)) {
    case Binary::kAdd:
      return rows<AddF>(a, a_step, b, b_step, y, n);
    case Binary::kSub:
      return rows<SubF>(a, a_step, b, b_step, y, n);
    case Binary::kMul:
      return rows<MulF>(a, a_step, b, b_step, y, n);
    case Binary::kDiv:
      return rows<DivF>(a, a_step, b, b_step, y, n);
    case Binary::kMax:
      return rows<MaxF>(a, a_step, b, b_step, y, n);
    case Binary::kMin:
      return rows<MinF>(a, a_step, b, b_step, y, n);
    case Binary::kPRelu:
      return rows<PReluF>(a, a_step, b, b_step, y, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(BinaryImpl);

void binary(Binary op, const float* a, int a_step, const float* b, int b_step, float* y,
            int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(BinaryImpl)(static_cast<int32_t>(op), a, a_step, b, b_step, y, n);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
