// 16-bit float storage types. Arithmetic happens in float; these only convert.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace onyx {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE 754 binary16, round-to-nearest-even on conversion from float.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (ax < 0x38800000u) {  // subnormal or zero in half
      // shift mantissa with implicit bit into place, rounding to nearest even
      if (ax < 0x33000000u) return static_cast<uint16_t>(sign);
      uint32_t e = ax >> 23;
      uint32_t m = (ax & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126 - e;  // value = m * 2^(e-150); half subnormal unit is 2^-24
      uint32_t r = m >> shift;
      uint32_t rem = m & ((1u << shift) - 1);
      uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (r & 1))) ++r;
      return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = ((ax - 0x38000000u) >> 13);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
      if (m == 0) return bits_float(sign);
      float v = std::ldexp(static_cast<float>(m), -24);
      return sign ? -v : v;
    }
    return bits_float(sign | ((e + 112) << 23) | (m << 13));
  }
};

/// bfloat16: the top half of a float, round-to-nearest-even on conversion.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }
  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace onyx
