// numpy .npy files (format versions 1.0, 2.0 and 3.0): read into and write from tensors.
#pragma once
#include <string>

#include "onyx/tensor.h"

namespace onyx::format {

/// Parses .npy bytes. Throws onyx::Error (naming `what`) on a malformed header, an
/// unsupported dtype, Fortran order, or a data size that does not match the shape.
Tensor read_npy(const void* data, size_t size, const std::string& what = "npy");
Tensor read_npy_file(const std::string& path);

/// Serializes a tensor as .npy (version 1.0, little-endian, C order).
std::string write_npy(const Tensor& t);
void write_npy_file(const std::string& path, const Tensor& t);

}  // namespace onyx::format
