// A checked wrapper around protozero's reader: every accessor verifies the wire
// type, so a malformed file ends in an onyx::Error instead of undefined behaviour.
#pragma once
#include <protozero/pbf_reader.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace onyx::format {

class Wire {
 public:
  Wire(const char* data, size_t size, const char* what) : r_(data, size), what_(what) {}
  Wire(protozero::data_view v, const char* what) : r_(v), what_(what) {}

  bool next() { return r_.next(); }
  uint32_t tag() const { return r_.tag(); }
  void skip() {
    if (r_.wire_type() == protozero::pbf_wire_type::length_delimited) check_length();
    r_.skip();
  }

  std::string_view bytes() {
    expect(protozero::pbf_wire_type::length_delimited, "length-delimited");
    check_length();
    auto v = r_.get_view();
    return {v.data(), v.size()};
  }
  std::string str() { return std::string(bytes()); }
  Wire sub(const char* what) {
    auto b = bytes();
    return Wire(b.data(), b.size(), what);
  }
  int64_t i64() {
    expect(protozero::pbf_wire_type::varint, "varint");
    return r_.get_int64();
  }
  uint64_t u64() {
    expect(protozero::pbf_wire_type::varint, "varint");
    return r_.get_uint64();
  }
  int32_t i32() {
    expect(protozero::pbf_wire_type::varint, "varint");
    return r_.get_int32();
  }
  float f32() {
    expect(protozero::pbf_wire_type::fixed32, "fixed32");
    return r_.get_float();
  }
  double f64() {
    expect(protozero::pbf_wire_type::fixed64, "fixed64");
    return r_.get_double();
  }

  /// Repeated varint field, packed or not: appends to `out`.
  template <typename T>
  void repeated_varint(std::vector<T>& out) {
    if (r_.wire_type() == protozero::pbf_wire_type::length_delimited) {
      check_length();
      auto v = r_.get_view();
      // Decode varints one by one from a packed buffer.
      const char* d = v.data();
      const char* e = d + v.size();
      while (d != e) out.push_back(static_cast<T>(protozero::decode_varint(&d, e)));
    } else {
      expect(protozero::pbf_wire_type::varint, "varint");
      out.push_back(static_cast<T>(r_.get_uint64()));
    }
  }
  /// Repeated fixed-width field (float: fixed32, double: fixed64), packed or not.
  template <typename T>
  void repeated_fixed(std::vector<T>& out) {
    constexpr auto wt = sizeof(T) == 4 ? protozero::pbf_wire_type::fixed32
                                       : protozero::pbf_wire_type::fixed64;
    if (r_.wire_type() == protozero::pbf_wire_type::length_delimited) {
      check_length();
      const uint32_t field = r_.tag();  // debug builds of protozero reset it on get_view()
      auto v = r_.get_view();
      if (v.size() % sizeof(T) != 0)
        fail_model("malformed {}: packed field {} has {} bytes, not a multiple of {}", what_,
                   field, v.size(), sizeof(T));
      size_t n = v.size() / sizeof(T);
      if (n == 0) return;  // out.data() may be null: no memcpy of 0 bytes
      size_t old = out.size();
      out.resize(old + n);
      std::memcpy(out.data() + old, v.data(), v.size());
    } else {
      expect(wt, sizeof(T) == 4 ? "fixed32" : "fixed64");
      if constexpr (sizeof(T) == 4)
        out.push_back(static_cast<T>(r_.get_float()));
      else
        out.push_back(static_cast<T>(r_.get_double()));
    }
  }

 private:
  void expect(protozero::pbf_wire_type t, const char* name) {
    if (r_.wire_type() != t)
      fail_model("malformed {}: field {} has wire type {}, expected {}", what_, r_.tag(),
                 static_cast<int>(r_.wire_type()), name);
  }
  /// protozero reads lengths as 32 bits and would silently drop the high bits of a
  /// larger one; refuse those instead of misreading the rest of the message.
  void check_length() {
    auto rest = r_.data();
    const char* d = rest.data();
    uint64_t len = protozero::decode_varint(&d, rest.data() + rest.size());
    if (len > UINT32_MAX)
      fail_model("malformed {}: field {} claims a length of {} bytes, more than a protobuf "
                 "field can hold",
                 what_, r_.tag(), len);
  }
  protozero::pbf_reader r_;
  const char* what_;
};

}  // namespace onyx::format
