// Checked integer arithmetic and limits for values that come from a model file or an
// input: dims, integer attributes, lengths. Overflow is an onyx::Error, never UB.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace onyx {

/// The most axes a tensor or a declared shape may have (what ONNX tooling assumes).
/// Checked before any per-axis work, so a length read from a file never becomes a loop
/// or a vector of that many dims.
inline constexpr int64_t kMaxRank = 64;

/// An empty tensor's other axes may be as long as int64 allows. Ops that make one
/// output entry per slice along such an axis (SplitToSequence, Unique with an axis) of
/// an empty input refuse more than this many slices rather than build them from nothing.
inline constexpr int64_t kMaxEmptySlices = int64_t{1} << 20;

/// `out = a * b`; false (and `out` unspecified) when that overflows int64.
inline bool mul_fits(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}
/// `out = a + b`; false when that overflows int64.
inline bool add_fits(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_add_overflow(a, b, &out);
}
/// `out = a - b`; false when that overflows int64.
inline bool sub_fits(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_sub_overflow(a, b, &out);
}

/// a * b; throws onyx::Error (kInvalidModel) naming `what` ("blocksize * blocksize")
/// and both values when the product overflows int64.
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);
/// a + b; throws like checked_mul on overflow.
int64_t checked_add(int64_t a, int64_t b, std::string_view what);
/// a - b; throws like checked_mul on overflow.
int64_t checked_sub(int64_t a, int64_t b, std::string_view what);
/// Product of `v` (1 when empty); throws naming `what` on a negative value or overflow.
int64_t checked_product(const std::vector<int64_t>& v, std::string_view what);
/// Product of `factors` as an element count for a buffer (size_t); throws naming `what`
/// on a negative factor or overflow. For scratch sized from dims of different tensors,
/// whose product no allocated tensor bounds.
size_t checked_count(std::initializer_list<int64_t> factors, std::string_view what);
/// `count * elem_bytes` as a size_t byte count; throws naming `what` when it does not fit.
size_t checked_bytes(int64_t count, size_t elem_bytes, std::string_view what);

/// Throws onyx::Error (kInvalidModel) naming `what` when `rank` is negative or above
/// kMaxRank. Call it before building anything with one entry per axis.
void check_rank(int64_t rank, std::string_view what);

}  // namespace onyx
