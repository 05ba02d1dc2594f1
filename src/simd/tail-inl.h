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

/// dst[0, n) = src[0, n), n <= kMax, in fixed-size pieces, which compile to inlined moves:
/// a memcpy call for the few elements of a row's tail costs more than the copy itself.
template <size_t kMax, typename T>
HWY_INLINE void CopyFew(T* dst, const T* src, size_t n) {
  size_t j = 0;
  auto piece = [&](size_t len) {
    std::memcpy(dst + j, src + j, len * sizeof(T));
    j += len;
  };
  if constexpr (kMax >= 32) {
    while (j + 16 <= n) piece(16);
  } else if constexpr (kMax >= 16) {
    if (n & 16) piece(16);
  }
  if constexpr (kMax >= 8)
    if (n & 8) piece(8);
  if constexpr (kMax >= 4)
    if (n & 4) piece(4);
  if constexpr (kMax >= 2)
    if (n & 2) piece(2);
  if (n & 1) dst[j] = src[j];
}

/// The first CountTrue(m) lanes from p, zeros after. On AVX2 and AVX-512 a masked load of
/// 32/64-bit lanes (which neither reads nor faults past them); elsewhere through a stack
/// buffer.
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> TailLoad(hwy::HWY_NAMESPACE::Mask<D> m, D d,
                                               const hwy::HWY_NAMESPACE::TFromD<D>* p) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_TARGET <= HWY_AVX2
  if constexpr (sizeof(hn::TFromD<D>) >= 4) return hn::MaskedLoad(m, d, p);
#endif
  HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(D())];
  hn::Store(hn::Zero(d), d, buf);
  CopyFew<hn::MaxLanes(D())>(buf, p, hn::CountTrue(d, m));
  return hn::Load(d, buf);
}

/// Writes the first CountTrue(m) lanes of v to p and nothing else. On AVX-512 a masked
/// store (the lanes off the mask are neither written nor faulted on); not on AVX2, whose
/// VMASKMOVPS store is microcoded on AMD cores before Zen 4.
template <class D>
HWY_INLINE void TailStore(hwy::HWY_NAMESPACE::Vec<D> v, hwy::HWY_NAMESPACE::Mask<D> m, D d,
                          hwy::HWY_NAMESPACE::TFromD<D>* p) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_TARGET <= HWY_AVX3
  if constexpr (sizeof(hn::TFromD<D>) >= 4) {
    hn::BlendedStore(v, m, d, p);
    return;
  }
#endif
  HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(D())];
  hn::Store(v, d, buf);
  CopyFew<hn::MaxLanes(D())>(p, buf, hn::CountTrue(d, m));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#endif  // ONYX_SIMD_TAIL_INL_H_
