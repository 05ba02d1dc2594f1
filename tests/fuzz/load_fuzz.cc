// Model bytes -> format::load_model_from_bytes (the reader of every command), then the
// static checks of `onyx check` (check::check_model: schemas, types, shape inference with
// small constants folded). ModelProto-aware mutations: model_mutator.h, mutator_hooks.cc.
#include <cstddef>
#include <cstdint>

#include "check/validate.h"
#include "format/loader.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<onyx::ir::Model> model;
  onyx::fuzz::expect_error_only([&] { model = onyx::format::load_model_from_bytes(data, size); });
  // check_model never throws for a loaded model: every fault is a Problem in its report.
  // One that reports a standard-library exception caught inside is a finding.
  if (!model) return 0;
  for (const auto& p : onyx::check::check_model(*model).problems)
    if (onyx::fuzz::wraps_std_exception(p.message)) onyx::fuzz::finding("check_model", p.message);
  return 0;
}
