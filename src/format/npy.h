// numpy .npy files (format versions 1.0, 2.0 and 3.0): read into and write from tensors.
//
// Every onyx dtype can be written. Strings are numpy unicode arrays ('<U<n>', UTF-32LE
// code points, NUL-padded); bytes that are not UTF-8 are written the way Python's
// "surrogateescape" error handler decodes them (byte 0xXY as the lone surrogate U+DCXY),
// and read back to the same bytes, so every byte string survives the round trip
// (`s.encode("utf-8", "surrogateescape")` gives the bytes in Python). A string ending in
// a NUL byte cannot be held (numpy strips trailing NULs) and is refused.
// The dtypes numpy lacks are written as the raw bits onyx holds (npy_bits_dtype):
// bfloat16 as uint16, float8* as uint8, 4-bit and 2-bit types one element per byte
// (int4/int2 as int8 values, uint4/uint2/float4e2m1 as uint8); npy_as_declared turns
// such a file back into the declared type.
#pragma once
#include <string>

#include "onyx/tensor.h"

namespace onyx::format {

/// Parses .npy bytes. numpy's unicode ('<U<n>') and bytes ('|S<n>') arrays become
/// string tensors (trailing NULs stripped, as numpy does). Throws onyx::Error (naming
/// `what`) on a malformed header, an unsupported dtype (object arrays, big-endian),
/// Fortran order, a data size that does not match the shape, or a code point that is
/// not Unicode (above U+10FFFF, or a surrogate other than U+DC80..U+DCFF).
Tensor read_npy(const void* data, size_t size, const std::string& what = "npy");
Tensor read_npy_file(const std::string& path);

/// Serializes a tensor as .npy (version 1.0, or 2.0 when the header needs it;
/// little-endian, C order). Throws onyx::Error for a string that ends in a NUL byte.
std::string write_npy(const Tensor& t);
void write_npy_file(const std::string& path, const Tensor& t);

/// For a dtype numpy has no type for, the numpy-held dtype .npy files store its bits in
/// (kUint16 for bfloat16, kUint8 for float8* and uint4/uint2/float4e2m1, kInt8 for int4
/// and int2); kUndefined when numpy holds `t` itself (strings included).
DType npy_bits_dtype(DType t);

/// "float8e4m3fn values as their raw bits (uint8)": what a .npy file of `t` holds, for
/// notes to users; "" when numpy holds `t` itself.
std::string npy_bits_note(DType t);

/// A tensor read from .npy (or any file) as the element type a model declares: when
/// `declared` is a dtype numpy lacks and `t` holds its raw bits, the same bytes as
/// `declared`: uint16 for bfloat16, uint8 for float8*, an integer tensor whose values fit
/// for int4 [-8, 7], uint4 [0, 15], int2 [-2, 1], uint2 [0, 3], uint8 in [0, 15] for
/// float4e2m1. Otherwise `t` unchanged (a mismatch is left to the caller). Throws
/// onyx::Error naming `what` for a value out of range or bits of the wrong width.
Tensor npy_as_declared(const Tensor& t, DType declared, const std::string& what);

}  // namespace onyx::format
