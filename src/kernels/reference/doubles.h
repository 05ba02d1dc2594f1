// Tensor <-> std::vector<double> for reference kernels that compute in double.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/reference/dispatch.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

/// The values of a numeric tensor as doubles; `what` names the kernel in the error for
/// another dtype.
inline std::vector<double> load_doubles(const Tensor& t, const char* what) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_numeric(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = static_cast<double>(static_cast<acc_t<T>>(p[i]));
      },
      what);
  return v;
}

/// Writes doubles into a numeric tensor (v holds at least t.numel() values; integers
/// truncate toward zero, as a C cast).
inline void store_doubles(Tensor& t, const std::vector<double>& v, const char* what) {
  dispatch_numeric(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel(); ++i)
          p[i] = T(static_cast<acc_t<T>>(v[static_cast<size_t>(i)]));
      },
      what);
}

}  // namespace onyx::kernels
