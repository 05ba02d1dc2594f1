// Helpers of the tensor and gather families: element copies shared by their kernels,
// and the data-dependent computations that both the shape functions (which size the
// outputs at run time) and the kernels (which fill them) need, kept in one place so the
// two always agree (NonZero's positions, Unique's grouping).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

/// Row-major element strides of `dims`.
inline std::vector<int64_t> strides_of(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  // Only an empty tensor's strides can pass int64 (a 0 before huge extents); nothing
  // is read through them, so 0 stands in.
  for (size_t k = dims.size(); k-- > 1;)
    if (!mul_fits(s[k], dims[k], s[k - 1])) s[k - 1] = 0;
  return s;
}

/// Fills the dense tensor `dst` of dims `out` with src[offset + sum_k idx[k] * strides[k]]
/// (strides may be zero or negative): Transpose, Slice, Expand and friends in one loop.
template <typename T>
void gather_strided(const T* src, int64_t offset, const std::vector<int64_t>& strides,
                    const Dims& out, T* dst) {
  int64_t n = dims_numel(out);
  if (n == 0) return;
  size_t r = out.size();
  if (r == 0) {
    dst[0] = src[offset];
    return;
  }
  std::vector<int64_t> idx(r, 0);
  int64_t inner = out[r - 1], step = strides[r - 1], pos = offset;
  for (int64_t done = 0; done < n; done += inner) {
    const T* p = src + pos;
    if (step == 1) std::copy(p, p + inner, dst);
    else
      for (int64_t j = 0; j < inner; ++j) dst[j] = p[j * step];
    dst += inner;
    for (size_t k = r - 1; k-- > 0;) {
      pos += strides[k];
      if (++idx[k] < out[k]) break;
      pos -= strides[k] * out[k];
      idx[k] = 0;
    }
  }
}

/// Copies every element of `src` into `dst` (same dtype and element count).
inline void copy_elements(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel())
    fail_runtime("cannot copy {} {} into {} {}", dtype_name(src.dtype()), dims_str(src.dims()),
                 dtype_name(dst.dtype()), dims_str(dst.dims()));
  if (src.raw() == dst.raw()) return;
  if (src.dtype() == DType::kString)
    std::copy(src.data<std::string>(), src.data<std::string>() + src.numel(), dst.data<std::string>());
  else if (src.nbytes())
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
}

/// The single element of a numeric tensor as double (fails when it has != 1 element).
inline double scalar_double(const Tensor& t, const char* what) {
  if (t.numel() != 1) fail_runtime("{} must hold one value, got shape {}", what, dims_str(t.dims()));
  double v = 0;
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(static_cast<acc_t<T>>(t.data<T>()[0]));
  }, what);
  return v;
}

/// Every element of an integer tensor as int64.
inline std::vector<int64_t> int_values(const Tensor& t, const char* what) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  dispatch_int(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int64_t>(t.data<T>()[k]);
  }, what);
  return v;
}

/// T from a double (16-bit floats round, bool is "nonzero").
template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

/// True when element `k` of `t` is not zero (strings: not empty). Handles every dtype:
/// floats compare by value (so -0.0 is zero), 8-bit floats by their magnitude bits.
inline std::vector<uint8_t> nonzero_mask(const Tensor& t) {
  auto n = static_cast<size_t>(t.numel());
  std::vector<uint8_t> m(n);
  auto by_value = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t k = 0; k < n; ++k) {
      if constexpr (std::is_same_v<T, std::string>) m[k] = !p[k].empty();
      else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
        m[k] = static_cast<float>(p[k]) != 0.0f;
      else m[k] = p[k] != T(0);
    }
  };
  const uint8_t* bytes = t.data<uint8_t>();
  switch (t.dtype()) {
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:  // 0x80 is -0
      for (size_t k = 0; k < n; ++k) m[k] = (bytes[k] & 0x7f) != 0;
      break;
    case DType::kFloat4E2M1:  // unpacked, sign in bit 3
      for (size_t k = 0; k < n; ++k) m[k] = (bytes[k] & 0x07) != 0;
      break;
    case DType::kFloat8E8M0:  // no encoding of zero
      std::fill(m.begin(), m.end(), uint8_t{1});
      break;
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2FNUZ:  // 0x80 is NaN, so only 0x00 is zero
    case DType::kInt4:
    case DType::kUint4:
    case DType::kInt2:
    case DType::kUint2:
      for (size_t k = 0; k < n; ++k) m[k] = bytes[k] != 0;
      break;
    case DType::kComplex64: {
      const float* p = t.data<float>();
      for (size_t k = 0; k < n; ++k) m[k] = p[2 * k] != 0 || p[2 * k + 1] != 0;
      break;
    }
    case DType::kComplex128: {
      const double* p = t.data<double>();
      for (size_t k = 0; k < n; ++k) m[k] = p[2 * k] != 0 || p[2 * k + 1] != 0;
      break;
    }
    default: dispatch_all(t.dtype(), by_value, "NonZero");
  }
  return m;
}

/// Result of grouping equal "rows" (elements, or slices along an axis) as numpy.unique does.
struct UniqueGroups {
  std::vector<int64_t> first;    ///< per output row: index of its first occurrence in the input
  std::vector<int64_t> inverse;  ///< per input row: its output row
  std::vector<int64_t> counts;   ///< per output row: number of occurrences
};

namespace unique_detail {
/// Three-way compare with NaN equal to NaN and above every number.
template <typename T>
int cmp(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return cmp(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
    return a < b ? -1 : (b < a ? 1 : 0);
  } else {
    return a < b ? -1 : (b < a ? 1 : 0);
  }
}
}  // namespace unique_detail

/// The grouping behind unique_groups, the same for every element type (one copy of the
/// sorts instead of one per dtype: 165 KB of the .wasm). `cmp(ctx, a, b)`
/// compares rows a and b three-way; `sorted` as for unique_groups.
UniqueGroups group_rows(int64_t rows, bool sorted, int (*cmp)(const void* ctx, int64_t a, int64_t b),
                        const void* ctx);

/// Groups the `rows` slices of `data` laid out as [outer, rows, inner] (row r is the
/// elements (o, r, i) for all o, i). `sorted`: output rows ascending, else in order of
/// first occurrence.
template <typename T>
UniqueGroups unique_groups(const T* data, int64_t outer, int64_t rows, int64_t inner, bool sorted) {
  struct Rows {
    const T* data;
    int64_t outer, rows, inner;
    static int compare(const void* ctx, int64_t a, int64_t b) {
      const Rows& r = *static_cast<const Rows*>(ctx);
      for (int64_t o = 0; o < r.outer; ++o) {
        const T* pa = r.data + (o * r.rows + a) * r.inner;
        const T* pb = r.data + (o * r.rows + b) * r.inner;
        for (int64_t i = 0; i < r.inner; ++i)
          if (int c = unique_detail::cmp(pa[i], pb[i])) return c;
      }
      return 0;
    }
  };
  const Rows r{data, outer, rows, inner};
  return group_rows(rows, sorted, &Rows::compare, &r);
}

/// Unique over a tensor: flattened when `axis` < 0, else slices along `axis` (already
/// normalized). Fails for dtypes that have no order.
inline UniqueGroups unique_of(const Tensor& x, int64_t axis, bool sorted) {
  int64_t outer = 1, rows = x.numel(), inner = 1;
  if (axis >= 0) {
    rows = x.dim(static_cast<size_t>(axis));
    if (x.numel() == 0 && rows > kMaxEmptySlices)
      fail_runtime(
          "Unique of the empty input {} along axis {} would group {} empty slices (onyx "
          "allows at most {})",
          dims_str(x.dims()), axis, rows, kMaxEmptySlices);
    if (x.numel() == 0) outer = inner = 0;  // the other extents may not multiply; no row is read
    for (size_t k = 0; k < static_cast<size_t>(axis); ++k) outer *= x.dim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < x.rank(); ++k) inner *= x.dim(k);
  }
  UniqueGroups g;
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    g = unique_groups<T>(x.data<T>(), outer, rows, inner, sorted);
  }, "Unique");
  return g;
}

}  // namespace onyx::kernels
