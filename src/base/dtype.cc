#include "onyx/dtype.h"

#include <string>

namespace onyx {

bool dtype_valid(int32_t code) { return code >= 1 && code <= kMaxDTypeCode; }

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat: return "float";
    case DType::kUint8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUint16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kDouble: return "double";
    case DType::kUint32: return "uint32";
    case DType::kUint64: return "uint64";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat8E4M3FN: return "float8e4m3fn";
    case DType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::kFloat8E5M2: return "float8e5m2";
    case DType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::kUint4: return "uint4";
    case DType::kInt4: return "int4";
    case DType::kFloat4E2M1: return "float4e2m1";
    case DType::kFloat8E8M0: return "float8e8m0";
    case DType::kUint2: return "uint2";
    case DType::kInt2: return "int2";
  }
  return "unknown";
}

std::string_view dtype_numpy(DType t) {
  switch (t) {
    case DType::kFloat: return "<f4";
    case DType::kUint8: return "|u1";
    case DType::kInt8: return "|i1";
    case DType::kUint16: return "<u2";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kBool: return "|b1";
    case DType::kFloat16: return "<f2";
    case DType::kDouble: return "<f8";
    case DType::kUint32: return "<u4";
    case DType::kUint64: return "<u8";
    case DType::kComplex64: return "<c8";
    case DType::kComplex128: return "<c16";
    default: return "";
  }
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::kUint4:
    case DType::kInt4:
    case DType::kFloat4E2M1: return 4;
    case DType::kUint2:
    case DType::kInt2: return 2;
    case DType::kString:
    case DType::kUndefined: return 0;
    default: return static_cast<int>(dtype_size(t) * 8);
  }
}

size_t dtype_storage_bytes(DType t, size_t count) {
  int bits = dtype_bits(t);
  return (count * static_cast<size_t>(bits) + 7) / 8;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kInt32:
    case DType::kUint32: return 4;
    case DType::kDouble:
    case DType::kInt64:
    case DType::kUint64:
    case DType::kComplex64: return 8;
    case DType::kComplex128: return 16;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUint16: return 2;
    case DType::kString: return sizeof(std::string);
    case DType::kUndefined: return 0;
    default: return 1;  // 8-bit types, bool, and unpacked sub-byte types
  }
}

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kFloat4E2M1: return true;
    default: return false;
  }
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kUint8:
    case DType::kInt8:
    case DType::kUint16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUint32:
    case DType::kUint64:
    case DType::kUint4:
    case DType::kInt4:
    case DType::kUint2:
    case DType::kInt2: return true;
    default: return false;
  }
}

bool dtype_is_signed(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kInt4:
    case DType::kInt2: return true;
    default: return dtype_is_float(t);
  }
}

}  // namespace onyx
