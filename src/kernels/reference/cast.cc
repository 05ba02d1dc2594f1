// Reference kernels of the cast family: Cast and CastLike between every numeric type,
// bool, string, float16/bfloat16, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0),
// float4e2m1 and the 4/2-bit integers.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/reference/dispatch.h"
#include "kernels/reference/minifloat.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

// ---- number -> string, formatted as numpy's astype(str) (Python repr) ----

/// Formats shortest round-trip `digits` (no dot) with decimal exponent `exp` (value =
/// d.ddd * 10^exp) the way Python's repr does: positional for -4 <= exp < 16, else
/// scientific with a two-digit exponent at least.
std::string repr_from_digits(bool neg, std::string digits, int exp) {
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string s = neg ? "-" : "";
  const int nd = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      s.append("0.");
      s.append(static_cast<size_t>(-exp - 1), '0');
      s.append(digits);
    } else if (exp + 1 >= nd) {
      s.append(digits);
      s.append(static_cast<size_t>(exp + 1 - nd), '0');
      s.append(".0");
    } else {
      s.append(digits, 0, static_cast<size_t>(exp + 1));
      s.push_back('.');
      s.append(digits, static_cast<size_t>(exp + 1));
    }
    return s;
  }
  s.push_back(digits[0]);
  if (nd > 1) {
    s.push_back('.');
    s.append(digits, 1);
  }
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return s + e;
}


// Floating-point std::to_chars/from_chars are missing from some standard libraries
// (Emscripten 3.1.6's libc++); these wrappers fall back to printf/strtod there.
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L && !defined(__EMSCRIPTEN__)
#define ONYX_FP_CHARCONV 1
#endif

/// Shortest scientific form of `v` that reads back as the same value, into buf.
template <typename F>
void shortest_scientific(F v, char* buf, size_t size) {
#ifdef ONYX_FP_CHARCONV
  auto r = std::to_chars(buf, buf + size - 1, v, std::chars_format::scientific);
  *r.ptr = 0;
#else
  const int max_digits = std::is_same_v<F, float> ? 9 : 17;
  for (int p = 1; p <= max_digits; ++p) {
    std::snprintf(buf, size, "%.*e", p - 1, static_cast<double>(v));
    F back = std::is_same_v<F, float> ? static_cast<F>(std::strtof(buf, nullptr))
                                      : static_cast<F>(std::strtod(buf, nullptr));
    if (back == v) return;
  }
#endif
}

/// Parses a decimal in [b, e) into v; false when it is not one number.
template <typename F>
bool parse_decimal(const char* b, const char* e, F& v, bool& out_of_range) {
  out_of_range = false;
#ifdef ONYX_FP_CHARCONV
  auto r = std::from_chars(b, e, v, std::chars_format::general);
  out_of_range = r.ec == std::errc::result_out_of_range;
  return r.ec == std::errc();
#else
  std::string text(b, e);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  out_of_range = errno == ERANGE;
  v = static_cast<F>(d);
  return !out_of_range;
#endif
}

/// Splits "d.ddde+XX" (scientific output of to_chars/printf) into digits and exponent.
void split_scientific(const char* p, std::string& digits, int& exp) {
  digits.clear();
  while (*p && *p != 'e' && *p != 'E') {
    if (*p >= '0' && *p <= '9') digits += *p;
    ++p;
  }
  exp = *p ? std::atoi(p + 1) : 0;
}

template <typename F>
std::string float_repr(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  shortest_scientific(v, buf, sizeof buf);
  std::string digits;
  int exp;
  const char* p = buf[0] == '-' ? buf + 1 : buf;
  split_scientific(p, digits, exp);
  return repr_from_digits(std::signbit(v), digits, exp);
}

/// Shortest decimal that converts back to the same 16-bit float.
template <typename H>
std::string half_repr(H h) {
  const float v = static_cast<float>(h);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 0; prec < 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, static_cast<double>(std::fabs(v)));
    if (H(std::strtof(buf, nullptr)).bits == H(std::fabs(v)).bits) break;
  }
  std::string digits;
  int exp;
  split_scientific(buf, digits, exp);
  return repr_from_digits(std::signbit(v), digits, exp);
}

template <typename S>
std::string to_string_value(const S& v) {
  if constexpr (std::is_same_v<S, bool>) return v ? "True" : "False";
  else if constexpr (std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16>) return half_repr(v);
  else if constexpr (std::is_floating_point_v<S>) return float_repr(v);
  else return std::to_string(v);
}

// ---- string -> number ----

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

/// Parses plain or scientific decimals and (case-insensitively) INF, +INF, -INF, NaN.
/// Unparsable text gives NaN (the spec leaves it undefined).
double parse_double(const std::string& s0) {
  std::string s = trimmed(s0);
  const char* b = s.data();
  const char* e = b + s.size();
  if (b < e && *b == '+') ++b;  // from_chars takes no leading '+'
  double v = 0;
  bool out_of_range = false;
  if (parse_decimal(b, e, v, out_of_range)) return v;
  // overflow or underflow: let strtod pick inf or 0 with the right sign
  if (out_of_range) return std::strtod(std::string(b, e).c_str(), nullptr);
  return std::numeric_limits<double>::quiet_NaN();
}

/// Truncates toward zero. NaN and values outside int64 (undefined by the spec) give
/// INT64_MIN, as x86 conversions do; other values wrap into D like C++ integer casts.
template <typename D>
D float_to_int(double v) {
  constexpr double two63 = 9223372036854775808.0;
  double t = std::trunc(v);
  if (std::isnan(t) || t < -two63) return static_cast<D>(std::numeric_limits<int64_t>::min());
  if (t >= two63) {
    if constexpr (std::is_same_v<D, uint64_t>)
      if (t < 2 * two63) return static_cast<uint64_t>(t);
    return static_cast<D>(std::numeric_limits<int64_t>::min());
  }
  return static_cast<D>(static_cast<int64_t>(t));
}

template <typename D>
D parse_string(const std::string& s) {
  if constexpr (std::is_same_v<D, std::string>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    std::string t = trimmed(s);
    std::string low = t;
    std::transform(low.begin(), low.end(), low.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (low == "true") return true;
    if (low == "false" || low.empty()) return false;
    double v = parse_double(t);
    return std::isnan(v) ? true : v != 0;
  } else if constexpr (std::is_integral_v<D>) {
    std::string t = trimmed(s);
    const char* b = t.data();
    const char* e = b + t.size();
    if (b < e && *b == '+') ++b;
    if constexpr (std::is_signed_v<D>) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec == std::errc() && r.ptr == e) return static_cast<D>(v);
    } else {
      uint64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec == std::errc() && r.ptr == e) return static_cast<D>(v);
    }
    return float_to_int<D>(parse_double(t));
  } else if constexpr (std::is_same_v<D, double>) {
    return parse_double(s);
  } else if constexpr (std::is_same_v<D, float>) {
    // parse in float directly so the result is correctly rounded once
    std::string t = trimmed(s);
    const char* b = t.data();
    const char* e = b + t.size();
    if (b < e && *b == '+') ++b;
    float v = 0;
    bool out_of_range = false;
    if (parse_decimal(b, e, v, out_of_range)) return v;
    return static_cast<float>(parse_double(t));
  } else {
    return D(static_cast<float>(parse_double(s)));
  }
}

// ---- numeric conversions between the standard types ----

template <typename S, typename D>
D convert(const S& s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (std::is_same_v<S, std::string>) {
    return parse_string<D>(s);
  } else if constexpr (std::is_same_v<D, std::string>) {
    return to_string_value(s);
  } else {
    using A = acc_t<S>;  // float for 16-bit floats
    const A a = static_cast<A>(s);
    if constexpr (std::is_same_v<D, bool>) {
      return a != A(0);
    } else if constexpr (std::is_same_v<D, Float16> || std::is_same_v<D, BFloat16>) {
      return D(static_cast<float>(a));
    } else if constexpr (std::is_floating_point_v<D>) {
      return static_cast<D>(a);
    } else if constexpr (std::is_floating_point_v<A>) {
      return float_to_int<D>(static_cast<double>(a));
    } else {
      return static_cast<D>(a);  // integers and bool: modular, as C++20 defines it
    }
  }
}

bool is_subbyte_int(DType t) {
  return t == DType::kInt4 || t == DType::kUint4 || t == DType::kInt2 || t == DType::kUint2;
}

/// Wraps an integer into the 4/2-bit type `t` (int4/int2 kept sign-extended).
uint8_t wrap_subbyte(DType t, int64_t v) {
  switch (t) {
    case DType::kInt4: return static_cast<uint8_t>(static_cast<int8_t>(((v & 0xf) ^ 8) - 8));
    case DType::kUint4: return static_cast<uint8_t>(v & 0xf);
    case DType::kInt2: return static_cast<uint8_t>(static_cast<int8_t>(((v & 0x3) ^ 2) - 2));
    default: return static_cast<uint8_t>(v & 0x3);
  }
}

struct CastOptions {
  bool saturate = true;
  E8M0Round round = E8M0Round::kUp;
};

void cast_buffer(DType st, const void* src, DType dt, void* dst, int64_t n,
                 const CastOptions& opt);

/// Casts through an intermediate tensor of type `mid` (exact for the values involved).
void cast_via(DType st, const void* src, DType mid, DType dt, void* dst, int64_t n,
              const CastOptions& opt) {
  Tensor tmp(mid, {n});
  cast_buffer(st, src, mid, tmp.raw(), n, opt);
  cast_buffer(mid, tmp.raw(), dt, dst, n, opt);
}

void cast_buffer(DType st, const void* src, DType dt, void* dst, int64_t n,
                 const CastOptions& opt) {
  if (n == 0) return;
  if (st == dt && dt != DType::kString) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(st));
    return;
  }
  // Minifloat and sub-byte sources decode exactly into float / int8 / uint8.
  if (is_minifloat(st)) {
    if (dt == DType::kFloat) {
      const auto* s = static_cast<const uint8_t*>(src);
      auto* d = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = minifloat_to_float(st, s[i]);
      return;
    }
    return cast_via(st, src, DType::kFloat, dt, dst, n, opt);
  }
  if (is_subbyte_int(st)) {
    DType as = dtype_is_signed(st) ? DType::kInt8 : DType::kUint8;
    return cast_buffer(as, src, dt, dst, n, opt);
  }
  if (is_minifloat(dt)) {
    if (dt == DType::kFloat8E8M0 && st != DType::kFloat)
      return cast_via(st, src, DType::kFloat, dt, dst, n, opt);
    if (dt != DType::kFloat8E8M0 && st != DType::kDouble)
      return cast_via(st, src, DType::kDouble, dt, dst, n, opt);
    auto* d = static_cast<uint8_t*>(dst);
    if (dt == DType::kFloat8E8M0) {
      const auto* s = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_e8m0(s[i], opt.saturate, opt.round);
    } else {
      const auto* s = static_cast<const double*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_minifloat(dt, s[i], opt.saturate);
    }
    return;
  }
  if (is_subbyte_int(dt)) {
    if (st != DType::kInt64) return cast_via(st, src, DType::kInt64, dt, dst, n, opt);
    const auto* s = static_cast<const int64_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = wrap_subbyte(dt, s[i]);
    return;
  }
  dispatch_all(
      st,
      [&](auto stag) {
        using S = typename decltype(stag)::type;
        dispatch_all(
            dt,
            [&](auto dtag) {
              using D = typename decltype(dtag)::type;
              const S* s = static_cast<const S*>(src);
              D* d = static_cast<D*>(dst);
              for (int64_t i = 0; i < n; ++i) d[i] = convert<S, D>(s[i]);
            },
            "Cast (target type)");
      },
      "Cast (source type)");
}

void cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() != x.numel())
    ctx.fail("output has {} elements, input {}", y.numel(), x.numel());
  CastOptions opt;
  opt.saturate = ctx.attr_i("saturate", 1) != 0;
  std::string mode = ctx.attr_s("round_mode", "up");
  if (mode == "up") opt.round = E8M0Round::kUp;
  else if (mode == "down") opt.round = E8M0Round::kDown;
  else if (mode == "nearest") opt.round = E8M0Round::kNearest;
  else ctx.fail("attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"{}\"", mode);
  for (DType t : {x.dtype(), y.dtype()})
    if (t == DType::kComplex64 || t == DType::kComplex128 || t == DType::kUndefined)
      ctx.fail("cannot cast from {} to {}", dtype_name(x.dtype()), dtype_name(y.dtype()));
  cast_buffer(x.dtype(), x.raw(), y.dtype(), y.raw(), x.numel(), opt);
}

std::vector<DType> castable_types() {
  std::vector<DType> v;
  for (DType t : all_types())
    if (t != DType::kComplex64 && t != DType::kComplex128) v.push_back(t);
  return v;
}

}  // namespace

void register_cast(Registry& r) {
  r.add("", "Cast", 1, 1000, castable_types(), cast_kernel);
  r.add("", "CastLike", 15, 1000, castable_types(), cast_kernel);
}

}  // namespace onyx::kernels
