// Float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0) and float4 (E2M1) encodings: each
// element is one byte in memory (float4 holds its 4-bit code in the low bits).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "onyx/dtype.h"

namespace onyx::kernels {

/// True for the 8-bit and 4-bit float types handled here.
inline bool is_minifloat(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kFloat4E2M1: return true;
    default: return false;
  }
}

/// Layout of a sign/exponent/mantissa minifloat (not E8M0, which has no sign or mantissa).
struct MiniFormat {
  int mbits;
  int bias;
  int sign_bit;      ///< bit index of the sign
  uint8_t max_code;  ///< largest finite magnitude code
  bool fnuz;         ///< no -0, no inf, NaN is the sign bit alone (0x80)
  bool ieee_inf;     ///< E5M2: exponent all ones is inf/NaN as in IEEE
  bool has_nan;      ///< float4 has neither NaN nor inf
};

inline MiniFormat mini_format(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return {3, 7, 7, 0x7e, false, false, true};
    case DType::kFloat8E4M3FNUZ: return {3, 8, 7, 0x7f, true, false, true};
    case DType::kFloat8E5M2: return {2, 15, 7, 0x7b, false, true, true};
    case DType::kFloat8E5M2FNUZ: return {2, 16, 7, 0x7f, true, false, true};
    default: return {1, 1, 3, 0x7, false, false, false};  // float4e2m1
  }
}

/// Decodes one element of a minifloat type to float (exact: every value fits).
inline float minifloat_to_float(DType t, uint8_t code) {
  if (t == DType::kFloat8E8M0) {
    if (code == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(code) - 127);
  }
  const MiniFormat f = mini_format(t);
  const uint8_t sign = static_cast<uint8_t>(1u << f.sign_bit);
  code &= static_cast<uint8_t>((sign << 1) - 1);
  const bool neg = (code & sign) != 0;
  const uint8_t mag = code & static_cast<uint8_t>(sign - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.fnuz) {
    if (code == 0x80) return nan;
  } else if (f.ieee_inf) {
    if ((mag >> f.mbits) == (1 << (f.sign_bit - f.mbits)) - 1) {
      if ((mag & ((1 << f.mbits) - 1)) == 0) return neg ? -INFINITY : INFINITY;
      return neg ? -nan : nan;
    }
  } else if (f.has_nan && mag == 0x7f) {  // E4M3FN: S.1111.111
    return neg ? -nan : nan;
  }
  const int e = mag >> f.mbits;
  const int m = mag & ((1 << f.mbits) - 1);
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.mbits)
                   : std::ldexp(static_cast<float>(m + (1 << f.mbits)), e - f.bias - f.mbits);
  return neg ? -v : v;
}

enum class E8M0Round { kUp, kDown, kNearest };

/// Encodes x as float8e8m0 (a power of two 2^(code-127); 0xff is NaN).
inline uint8_t float_to_e8m0(float x, bool saturate, E8M0Round mode) {
  if (std::isnan(x)) return 0xff;
  if (std::isinf(x)) return saturate ? 0xfe : 0xff;
  if (x <= 0) return saturate ? 0 : 0xff;  // zero and negatives: below E8M0_MIN
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t e = (bits >> 23) & 0xff;
  const uint32_t m = bits & 0x7fffff;
  uint32_t code;
  if (e == 0) {
    // Subnormal float: between 0 and 2^-126; E8M0 holds 2^-127 (0) and 2^-126 (1).
    if (mode == E8M0Round::kUp) code = m > 0x400000 ? 1 : 0;
    else if (mode == E8M0Round::kNearest) code = m >= 0x600000 ? 1 : 0;
    else code = 0;
    if (!saturate && m < 0x400000) return 0xff;  // below 2^-127
  } else {
    code = e;
    if (mode == E8M0Round::kUp && m != 0) ++code;
    else if (mode == E8M0Round::kNearest && m >= 0x400000) ++code;
  }
  if (code > 0xfe) return saturate ? 0xfe : 0xff;
  return static_cast<uint8_t>(code);
}

/// Encodes x in a sign/exponent/mantissa minifloat with round-to-nearest-even. With
/// `saturate`, out-of-range values and infinities clamp to +-max; without it they become
/// inf (E5M2) or NaN (the others, which lack inf). Float4 always saturates.
inline uint8_t float_to_minifloat(DType t, double x, bool saturate) {
  const MiniFormat f = mini_format(t);
  const uint8_t sign = std::signbit(x) ? static_cast<uint8_t>(1u << f.sign_bit) : 0;
  if (!f.has_nan) saturate = true;
  auto nan_code = [&]() -> uint8_t {
    if (f.fnuz) return 0x80;
    if (f.ieee_inf) return static_cast<uint8_t>(sign | 0x7e);
    if (!f.has_nan) return 0x8;  // float4 has no NaN: what ml_dtypes (the reference) gives
    return static_cast<uint8_t>(sign | 0x7f);
  };
  auto overflow = [&]() -> uint8_t {
    if (saturate) return static_cast<uint8_t>(sign | f.max_code);
    if (f.ieee_inf) return static_cast<uint8_t>(sign | 0x7c);
    return nan_code();
  };
  if (std::isnan(x)) return nan_code();
  double a = std::fabs(x);
  if (std::isinf(a)) return overflow();
  if (a == 0) return f.fnuz ? 0 : sign;
  int k;
  std::frexp(a, &k);  // a = frac * 2^k, frac in [0.5, 1)
  const int emin = 1 - f.bias;
  const int e = std::max(k - 1, emin);
  // Quantum at this binade (or the subnormal quantum); a / q is exact in double.
  const double n = std::nearbyint(std::ldexp(a, f.mbits - e));
  uint32_t code;
  if (k - 1 < emin) {
    code = static_cast<uint32_t>(n);  // subnormal; n == 2^mbits is the smallest normal
  } else {
    code = (static_cast<uint32_t>(e + f.bias) << f.mbits) +
           (static_cast<uint32_t>(n) - (1u << f.mbits));  // n == 2^(mbits+1) carries
  }
  if (code > f.max_code) return overflow();
  if (code == 0) return f.fnuz ? 0 : sign;
  return static_cast<uint8_t>(sign | code);
}

}  // namespace onyx::kernels
