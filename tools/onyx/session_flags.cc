#include "tools/onyx/session_flags.h"

#include <cctype>
#include <cmath>

#include "base/error.h"
#include "runtime/run_context.h"
#include "tools/onyx/util.h"

namespace onyx::cli {

uint64_t parse_bytes(const std::string& text, const std::string& what) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  std::string num = text.substr(0, i), unit = text.substr(i);
  bool ok = !num.empty() && num.front() != '.' && num.back() != '.' && num.find('.') == num.rfind('.');
  double v = ok ? std::strtod(num.c_str(), nullptr) : 0;
  double scale = 0;
  const std::pair<const char*, double> units[] = {
      {"", 1}, {"B", 1}, {"K", 1024.0}, {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
      {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"T", 1099511627776.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (const auto& [u, f] : units)
    if (unit == u) scale = f;
  double bytes = v * scale;
  if (!ok || scale == 0 || !(bytes < 1.8e19) || bytes != std::floor(bytes))
    fail_arg("{}: expected a byte count such as 0 (no limit), 1048576, 512MiB or 2GiB, got '{}'", what, text);
  return static_cast<uint64_t>(bytes);
}

void add_session_flags(CLI::App* sub, SessionFlags& f) {
  SessionOptions d;
  sub->add_option("--max-tensor-bytes", f.max_tensor_bytes,
                  "largest tensor one node may create, e.g. 512MiB; 0: no limit (default " +
                      runtime::format_bytes(d.max_tensor_bytes) + ")");
  sub->add_option("--max-run-bytes", f.max_run_bytes,
                  "most bytes the tensors of one run may hold at once; 0: no limit (default " +
                      runtime::format_bytes(d.max_run_bytes) + ")");
  sub->add_option("--max-loop-iterations", f.max_loop_iterations,
                  "most iterations one Loop/Scan node may run; 0: no limit (default " +
                      std::to_string(d.max_loop_iterations) + ")")
      ->transform(integer_in(0, INT64_MAX));
}

void apply_session_flags(const SessionFlags& f, SessionOptions& so) {
  if (!f.max_tensor_bytes.empty()) so.max_tensor_bytes = parse_bytes(f.max_tensor_bytes, "--max-tensor-bytes");
  if (!f.max_run_bytes.empty()) so.max_run_bytes = parse_bytes(f.max_run_bytes, "--max-run-bytes");
  if (f.max_loop_iterations >= 0) so.max_loop_iterations = f.max_loop_iterations;
}

}  // namespace onyx::cli
