// Element arithmetic shared by the matmul and reduce reference kernels.
#pragma once
#include <cstdint>
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
A wmul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

}  // namespace onyx::kernels
