// Partial-vector loads and stores for the last elements of a row, included once per SIMD
// target (inside foreach_target.h's loop, like Highway's own -inl headers).
//
// Highway's MaskedLoad and BlendedStore may be emulated (SSE4, WASM SIMD128) as a full-
// vector load, or a load-blend-store of the whole vector: that reads past the end of the
// buffer, and rewrites lanes that another thread of the same parallel_for owns (a data
// race ThreadSanitizer sees, and lost writes). These go through a stack buffer and touch
// only the first `CountTrue(m)` elements; `m` must be a prefix mask (FirstN).
#if defined(ONYX_SIMD_TAIL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ONYX_SIMD_TAIL_INL_H_
#undef ONYX_SIMD_TAIL_INL_H_
#else
#define ONYX_SIMD_TAIL_INL_H_
#endif

#include <cstring>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {

/// The first CountTrue(m) lanes from p, zeros after.
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> TailLoad(hwy::HWY_NAMESPACE::Mask<D> m, D d,
                                               const hwy::HWY_NAMESPACE::TFromD<D>* p) {
  namespace hn = hwy::HWY_NAMESPACE;
  HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(D())];
  hn::Store(hn::Zero(d), d, buf);
  std::memcpy(buf, p, hn::CountTrue(d, m) * sizeof(hn::TFromD<D>));
  return hn::Load(d, buf);
}

/// Writes the first CountTrue(m) lanes of v to p and nothing else.
template <class D>
HWY_INLINE void TailStore(hwy::HWY_NAMESPACE::Vec<D> v, hwy::HWY_NAMESPACE::Mask<D> m, D d,
                          hwy::HWY_NAMESPACE::TFromD<D>* p) {
  namespace hn = hwy::HWY_NAMESPACE;
  HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(D())];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, hn::CountTrue(d, m) * sizeof(hn::TFromD<D>));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#endif  // ONYX_SIMD_TAIL_INL_H_
