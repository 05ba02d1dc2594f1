// Element arithmetic shared by the matmul and reduce reference kernels.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "base/half.h"

namespace onyx::kernels {

/// float16 or bfloat16.
template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

/// Integer sums and products wrap (two's complement) instead of overflowing, which is
/// what a narrowing cast of numpy's int64 result gives; floats add and multiply as usual.
template <typename A>
A wadd(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename A>
A wsub(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
template <typename A>
A wmul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

/// A computed floating value stored into integer T without UB (a float-to-int cast out
/// of range is undefined): NaN gives 0, values past T's range saturate. Other pairs of
/// types convert as static_cast does.
template <typename T, typename V>
T saturate_cast(V v) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<V>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<V>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace onyx::kernels
