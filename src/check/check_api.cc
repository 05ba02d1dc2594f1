// The public check API (include/onyx/check.h) over check::check_model.
#include "onyx/check.h"

#include <algorithm>

#include "onyx/error.h"
#include "check/validate.h"
#include "format/loader.h"

namespace onyx {

size_t CheckReport::errors() const {
  return static_cast<size_t>(std::count_if(problems.begin(), problems.end(), [](const CheckProblem& p) { return p.is_error; }));
}

size_t CheckReport::warnings() const { return problems.size() - errors(); }

CheckReport check_model_file(const std::string& path, const std::vector<std::string>& providers) {
  const std::vector<std::string>& known = check::known_providers();
  for (const std::string& p : providers)
    if (std::find(known.begin(), known.end(), p) == known.end())
      throw Error(ErrorCode::kInvalidArgument, "check: unknown provider '" + p + "'; known: cpu, wasm");
  check::Options opts;
  opts.providers = providers;
  const std::shared_ptr<ir::Model> model = format::load_model(path);
  const check::Report r = check::check_model(*model, opts);
  CheckReport out;
  out.nodes = r.nodes;
  out.providers = providers;
  for (const check::Problem& p : r.problems)
    out.problems.push_back({p.severity == check::Problem::Severity::kError, p.where, p.node, p.op_type, p.domain, p.opset,
                            p.message});
  for (const check::ProviderReport& pr : r.providers)
    for (const check::Unsupported& u : pr.unsupported)
      out.unsupported.push_back({pr.provider, u.where, u.node, u.op_type, u.domain, u.opset, u.input_types, u.reason});
  return out;
}

}  // namespace onyx
