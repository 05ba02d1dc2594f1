// fmt's compiled part, built once for the whole project.
//
// Debian's libfmt-dev ships headers and a shared library; onyx used to define
// FMT_HEADER_ONLY so that the core builds the same natively and for WebAssembly (which
// has no libfmt to link). That compiled fmt's implementation (format-inl.h: float
// formatting, vformat, the locale helpers) into every file that includes <fmt/format.h>,
// about 3 s of each of ~200 translation units, in each of the five builds `make test`
// makes (native, TSan, fuzz, two WebAssembly). Here it is compiled once, into onyx_core,
// for every build alike; no library dependency is added.
// No std::locale: onyx never formats with the `L` (locale) specifier, and the locale
// facets it pulled in were 88 KB of the .wasm (3,046,018 -> 2,957,780 bytes).
#define FMT_STATIC_THOUSANDS_SEPARATOR ','
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The templates <fmt/format.h> declares `extern template` (and so leaves to the library),
// for char: onyx formats no wide strings.
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
// Shortest round-trip float formatting, declared in <fmt/format.h> and defined only in
// format-inl.h.
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
}  // namespace detail
FMT_END_NAMESPACE
