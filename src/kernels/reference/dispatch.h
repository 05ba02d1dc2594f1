// Maps a runtime DType to a C++ element type for templated reference kernels.
//   dispatch_numeric(t.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "base/half.h"
#include "onyx/dtype.h"

namespace onyx::kernels {

template <typename T>
struct Tag {
  using type = T;
};

/// Type arithmetic is done in: float for 16-bit floats, else T itself.
template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<Float16> {
  using type = float;
};
template <>
struct Acc<BFloat16> {
  using type = float;
};
template <typename T>
using acc_t = typename Acc<T>::type;

template <typename T>
inline constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat;
  else if constexpr (std::is_same_v<T, double>) return DType::kDouble;
  else if constexpr (std::is_same_v<T, Float16>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUint64;
  else if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, std::string>) return DType::kString;
  else return DType::kUndefined;
}

[[noreturn]] inline void unsupported_dtype(DType t, const char* what) {
  fail_unsupported("{} does not support dtype {}", what, dtype_name(t));
}

/// float, double, float16, bfloat16
template <typename F>
void dispatch_float(DType t, F&& f, const char* what = "this kernel") {
  switch (t) {
    case DType::kFloat: f(Tag<float>{}); break;
    case DType::kDouble: f(Tag<double>{}); break;
    case DType::kFloat16: f(Tag<Float16>{}); break;
    case DType::kBFloat16: f(Tag<BFloat16>{}); break;
    default: unsupported_dtype(t, what);
  }
}

/// all 8..64-bit integers
template <typename F>
void dispatch_int(DType t, F&& f, const char* what = "this kernel") {
  switch (t) {
    case DType::kInt8: f(Tag<int8_t>{}); break;
    case DType::kInt16: f(Tag<int16_t>{}); break;
    case DType::kInt32: f(Tag<int32_t>{}); break;
    case DType::kInt64: f(Tag<int64_t>{}); break;
    case DType::kUint8: f(Tag<uint8_t>{}); break;
    case DType::kUint16: f(Tag<uint16_t>{}); break;
    case DType::kUint32: f(Tag<uint32_t>{}); break;
    case DType::kUint64: f(Tag<uint64_t>{}); break;
    default: unsupported_dtype(t, what);
  }
}

/// floats and integers
template <typename F>
void dispatch_numeric(DType t, F&& f, const char* what = "this kernel") {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kFloat16:
    case DType::kBFloat16: dispatch_float(t, f, what); break;
    default: dispatch_int(t, f, what);
  }
}

/// numeric, bool and string
template <typename F>
void dispatch_all(DType t, F&& f, const char* what = "this kernel") {
  switch (t) {
    case DType::kBool: f(Tag<bool>{}); break;
    case DType::kString: f(Tag<std::string>{}); break;
    default: dispatch_numeric(t, f, what);
  }
}

/// Dispatch on element size only, for kernels that move bytes (Transpose, Gather ...):
/// calls f with uint8_t/uint16_t/uint32_t/uint64_t, a 16-byte POD, or std::string.
struct Bytes16 {
  uint64_t lo, hi;
};
template <typename F>
void dispatch_bytes(DType t, F&& f) {
  if (t == DType::kString) {
    f(Tag<std::string>{});
    return;
  }
  switch (dtype_size(t)) {
    case 1: f(Tag<uint8_t>{}); break;
    case 2: f(Tag<uint16_t>{}); break;
    case 4: f(Tag<uint32_t>{}); break;
    case 8: f(Tag<uint64_t>{}); break;
    case 16: f(Tag<Bytes16>{}); break;
    default: unsupported_dtype(t, "byte copy");
  }
}

}  // namespace onyx::kernels
