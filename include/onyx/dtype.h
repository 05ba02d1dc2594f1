// Element types of ONNX tensors (codes equal TensorProto.DataType) and their sizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onyx {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

/// Largest valid code.
constexpr int32_t kMaxDTypeCode = 26;

/// True when `code` names a known element type (excluding kUndefined).
bool dtype_valid(int32_t code);

/// Lower-case ONNX name: "float", "int64", "float16", "float8e4m3fn" ...
std::string_view dtype_name(DType t);

/// numpy-style descriptor name used in .npy headers, or "" when numpy has none.
std::string_view dtype_numpy(DType t);

/// Bits per element (4 for int4/uint4/float4, 2 for int2/uint2; strings report 0).
int dtype_bits(DType t);

/// Bytes to hold `count` elements (packed sub-byte types round up). Strings: 0.
size_t dtype_storage_bytes(DType t, size_t count);

/// Bytes per element in the in-memory layout onyx uses. Sub-byte types are stored
/// one element per byte (unpacked) in memory; strings are std::string objects.
size_t dtype_size(DType t);

bool dtype_is_float(DType t);    ///< float, double, float16, bfloat16, float8*, float4
bool dtype_is_integer(DType t);  ///< signed or unsigned integers incl. 4/2-bit
bool dtype_is_signed(DType t);

}  // namespace onyx
