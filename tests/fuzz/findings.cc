#include <cstdio>
#include <cstdlib>

#include "fuzz_util.h"

namespace onyx::fuzz {
namespace {

/// Where `needle` is in `hay` from `from` on (npos if nowhere), compared a character at a
/// time: no memcmp or strstr, whose sanitizer hooks would hand the markers to libFuzzer.
size_t find(std::string_view hay, std::string_view needle, size_t from = 0) {
  for (size_t i = from; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && hay[i + k] == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}

/// True when `what` begins at `pos` as a wrapped exception's text does: at the start or
/// after ": ", with nothing quoted after it (libstdc++'s texts quote nothing, while the
/// library's messages quote the names and strings of the input, which may hold anything).
bool wrapped_at(std::string_view msg, size_t pos) {
  if (pos != 0 && (pos < 2 || msg[pos - 2] != ':' || msg[pos - 1] != ' ')) return false;
  for (size_t i = pos; i < msg.size(); ++i)
    if (msg[i] == '\'') return false;
  return true;
}

}  // namespace

bool wraps_std_exception(std::string_view msg) {
  // The library's own texts for what it caught from the standard library.
  static const std::string_view kCatchAll[] = {
      "out of memory", "a length in the file is too large", "type inference failed",
      "the check stopped early",
  };
  // How libstdc++'s exceptions begin their what().
  static const std::string_view kStd[] = {
      "vector::", "basic_string", "cannot create std::", "_Map_base::at", "map::at", "bitset::",
      "deque::", "array::at", "string_view::", "std::", "stoi", "stol", "stoul", "stoll", "stoull",
      "stof", "stod", "bad optional access", "bad_function_call", "bad_array_new_length",
  };
  for (std::string_view m : kCatchAll)
    if (find(msg, m) != std::string_view::npos) return true;
  for (std::string_view m : kStd)
    for (size_t p = find(msg, m); p != std::string_view::npos; p = find(msg, m, p + 1))
      if (wrapped_at(msg, p)) return true;
  return false;
}

void finding(const char* what, std::string_view msg) {
  std::fprintf(stderr, "==FUZZ FINDING== %s: %.*s\n", what, static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace onyx::fuzz
