#include "base/checked.h"

#include <limits>

#include "base/error.h"

namespace onyx {

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!mul_fits(a, b, r)) fail_model("{} overflows 64 bits ({} * {})", what, a, b);
  return r;
}

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!add_fits(a, b, r)) fail_model("{} overflows 64 bits ({} + {})", what, a, b);
  return r;
}

int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (!sub_fits(a, b, r)) fail_model("{} overflows 64 bits ({} - {})", what, a, b);
  return r;
}

int64_t checked_product(const std::vector<int64_t>& v, std::string_view what) {
  int64_t p = 1;
  for (int64_t x : v) {
    if (x < 0) fail_model("{}: negative value {}", what, x);
    if (!mul_fits(p, x, p))
      fail_model("{}: the product of its {} values overflows 64 bits", what, v.size());
  }
  return p;
}

size_t checked_count(std::initializer_list<int64_t> factors, std::string_view what) {
  int64_t p = 1;
  for (int64_t x : factors) {
    if (x < 0) fail_model("{}: negative factor {}", what, x);
    if (!mul_fits(p, x, p)) fail_model("{} has more elements than fit in 64 bits", what);
  }
  if (static_cast<uint64_t>(p) > std::numeric_limits<size_t>::max())
    fail_model("{} has more elements ({}) than this machine can address", what, p);
  return static_cast<size_t>(p);
}

size_t checked_bytes(int64_t count, size_t elem_bytes, std::string_view what) {
  if (count < 0) fail_model("{}: negative element count {}", what, count);
  if (elem_bytes && static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / elem_bytes)
    fail_model("{}: {} elements of {} bytes do not fit in memory", what, count, elem_bytes);
  return static_cast<size_t>(count) * elem_bytes;
}

void check_rank(int64_t rank, std::string_view what) {
  if (rank < 0 || rank > kMaxRank)
    fail_model("{} has rank {}; onyx allows at most {} axes", what, rank, kMaxRank);
}

}  // namespace onyx
