// String helpers shared by the string family's shape functions (whose output sizes
// depend on the data) and its reference kernels.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace onyx::kernels {

/// Python's str.isspace for the ASCII range (plus the information separators
/// 0x1c..0x1f, which Python also counts as whitespace).
inline bool is_split_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/// Python's str.split(delim, maxsplit): an empty `delim` splits on runs of whitespace
/// and drops leading/trailing whitespace; maxsplit < 0 means no limit.
inline std::vector<std::string_view> split_string(std::string_view s, std::string_view delim,
                                                  int64_t maxsplit) {
  std::vector<std::string_view> out;
  if (!delim.empty()) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(delim, pos);
      if (hit == std::string_view::npos) break;
      out.push_back(s.substr(pos, hit - pos));
      pos = hit + delim.size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  size_t i = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && is_split_space(static_cast<unsigned char>(s[i]))) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // the rest, leading whitespace removed and trailing whitespace kept
      out.push_back(s.substr(i));
      break;
    }
    size_t j = i;
    while (j < n && !is_split_space(static_cast<unsigned char>(s[j]))) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// ---- case mapping (UTF-8) ----
// Covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic: the locale-independent
// part of what StringNormalizer needs. Other code points are left as they are.

inline char32_t case_map(char32_t c, bool upper) {
  if (upper) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
    if (c == 0xff) return 0x178;
    if (c >= 0x100 && c <= 0x17f) {
      // Latin Extended-A alternates upper/lower by parity, with the parity flipping
      // in 0x139..0x148 and 0x179..0x17e.
      const bool flipped = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
      if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f) return c;
      if (flipped ? (c & 1) == 0 : (c & 1) == 1) return c - 1;
      return c;
    }
    if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
    if (c == 0x3c2) return 0x3a3;  // final sigma
    if (c >= 0x430 && c <= 0x44f) return c - 32;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    return c;
  }
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f) {
    const bool flipped = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f) return c;
    if (flipped ? (c & 1) == 1 : (c & 1) == 0) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

inline void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

/// Upper- or lower-cases UTF-8 text. Bytes that are not valid UTF-8 pass through.
inline std::string change_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(case_map(b, upper)));
      ++i;
      continue;
    }
    // Only 2-byte sequences hold mapped letters (U+0080..U+07FF); longer ones are copied.
    if ((b & 0xe0) == 0xc0 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xc0) == 0x80) {
      const char32_t c = (static_cast<char32_t>(b & 0x1f) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3f);
      if (c >= 0x80) {
        utf8_append(out, case_map(c, upper));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
    ++i;
  }
  return out;
}

/// StringNormalizer's stopword filter: the indexes of `x` that are not stopwords.
/// Case-insensitive matching compares lower-cased forms.
inline std::vector<size_t> string_normalizer_keep(const std::string* x, size_t n,
                                                  const std::vector<std::string>& stopwords,
                                                  bool case_sensitive) {
  std::unordered_set<std::string> stop;
  for (const std::string& w : stopwords) stop.insert(case_sensitive ? w : change_case(w, false));
  std::vector<size_t> keep;
  for (size_t i = 0; i < n; ++i) {
    const bool hit = case_sensitive ? stop.count(x[i]) > 0 : stop.count(change_case(x[i], false)) > 0;
    if (!hit) keep.push_back(i);
  }
  return keep;
}

// ---- RegexFullMatch: RE2 syntax onto std::wregex (ECMAScript) ----

/// Decodes UTF-8 into code points (one wchar_t each); invalid bytes map to U+FFFD.
inline std::wstring utf8_to_wide(std::string_view s) {
  std::wstring out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto t = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (t & 0xc0) == 0x80;
      c = (c << 6) | (t & 0x3f);
    }
    if (!ok) {
      out.push_back(static_cast<wchar_t>(0xfffd));
      ++i;
      continue;
    }
    out.push_back(static_cast<wchar_t>(c));
    i += static_cast<size_t>(len);
  }
  return out;
}

/// An RE2 pattern rewritten for std::wregex (ECMAScript grammar).
struct TranslatedRegex {
  std::wstring pattern;
  bool icase = false;
  std::string error;  ///< non-empty: the pattern uses RE2 syntax that has no equivalent here
};

/// Rewrites the RE2 constructs that ECMAScript spells differently: a leading (?i) / (?s)
/// flag group, (?P<name>...) named groups, \A and \z. Constructs without an
/// equivalent (\p{..} classes, \Q..\E, \C, other inline flags) are reported.
inline TranslatedRegex translate_re2(std::string_view pat) {
  TranslatedRegex r;
  bool dotall = false;
  size_t i = 0;
  if (pat.substr(0, 2) == "(?") {
    size_t j = 2;
    bool flags = true;
    std::string f;
    while (j < pat.size() && pat[j] != ')') {
      if (pat[j] != 'i' && pat[j] != 's') flags = false;
      f.push_back(pat[j]);
      ++j;
    }
    if (flags && j < pat.size() && !f.empty()) {
      r.icase = f.find('i') != std::string::npos;
      dotall = f.find('s') != std::string::npos;
      i = j + 1;
    }
  }
  std::string out;
  bool in_class = false;
  for (; i < pat.size(); ++i) {
    const char c = pat[i];
    if (c == '\\' && i + 1 < pat.size()) {
      const char e = pat[i + 1];
      if (e == 'p' || e == 'P' || e == 'Q' || e == 'E' || e == 'C') {
        r.error = std::string("RE2 escape \\") + e + " is not supported";
        return r;
      }
      if (!in_class && e == 'A') out += '^';
      else if (!in_class && e == 'z') out += '$';
      else {
        out += c;
        out += e;
      }
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // a ']' (or '^]') right after '[' is a literal in RE2
      if (i + 1 < pat.size() && pat[i + 1] == '^') out += pat[++i];
      if (i + 1 < pat.size() && pat[i + 1] == ']') {
        out += "\\]";
        ++i;
      }
      continue;
    }
    if (c == '(' && pat.substr(i, 4) == "(?P<") {
      const size_t close = pat.find('>', i);
      if (close == std::string_view::npos) {
        r.error = "unterminated (?P<name> group";
        return r;
      }
      out += '(';
      i = close;
      continue;
    }
    if (c == '(' && pat.substr(i, 2) == "(?" && pat.substr(i, 3) != "(?:" &&
        pat.substr(i, 3) != "(?=" && pat.substr(i, 3) != "(?!") {
      r.error = "inline flags other than a leading (?i) / (?s) are not supported";
      return r;
    }
    if (c == '.' && dotall) {
      out += "[\\s\\S]";
      continue;
    }
    out += c;
  }
  r.pattern = utf8_to_wide(out);
  return r;
}

}  // namespace onyx::kernels
