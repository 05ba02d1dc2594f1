// Model bytes -> load -> Session::create with tight resource limits -> Session::run on
// small random inputs made from the declared input types (inputs.h: symbolic dims 0..4,
// every dtype, strings, sequences, optionals). The values are drawn from a generator
// seeded by the input's hash, so a saved input replays the same run.
//
// A watchdog sets RunOptions::terminate after kRunSeconds: a model may legitimately ask
// for much work within the limits (a large convolution of small tensors), and the flag
// ends it inside the node (the kernels poll it: base/cancel.h). Constant folding at
// creation stops at its time budget. What runs past libFuzzer's -timeout even so is a
// loop that polls nothing: a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/loader.h"
#include "fuzz_util.h"
#include "inputs.h"
#include "ir/graph.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"

namespace {
constexpr int kRunSeconds = 10;
/// Inputs larger than this (a declared fixed shape) are not made: the run is skipped.
constexpr int64_t kMaxInputElements = int64_t{1} << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* watchdog = new onyx::fuzz::Watchdog(kRunSeconds);
  std::unique_ptr<onyx::Session> session;
  onyx::fuzz::expect_error_only([&] {
    auto model = onyx::format::load_model_from_bytes(data, size);
    onyx::SessionOptions opts;
    opts.threads = 1;
    opts.max_tensor_bytes = uint64_t{64} << 20;
    opts.max_run_bytes = uint64_t{256} << 20;
    opts.max_loop_iterations = 1000;
    session = onyx::session_from_model(model, opts);
  });
  if (!session) return 0;

  onyx::fuzz::InputMaker maker(onyx::fuzz::input_hash(data, size));
  std::vector<std::pair<std::string, onyx::Value>> feeds;
  const auto& inputs = onyx::session_model(*session).graph->inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool optional = session->inputs()[i].has_default ||
                          inputs[i].type.kind == onyx::ir::TypeInfo::Kind::kOptional;
    // An input with a default (an initializer) is left out now and then.
    if (session->inputs()[i].has_default && maker.below(2)) continue;
    onyx::Value v;
    if (!maker.value(inputs[i].type, v, kMaxInputElements)) {
      if (optional) continue;
      return 0;  // no value can be made (too large, a map): nothing to run
    }
    feeds.emplace_back(inputs[i].name, std::move(v));
  }
  onyx::RunOptions ro;
  watchdog->arm(&ro);
  onyx::fuzz::expect_error_only([&] { (void)session->run(feeds, ro); });
  watchdog->disarm();
  return 0;
}
