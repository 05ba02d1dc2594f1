// What onyx's own tools and tests need of a Session beyond the public API: planning a
// model already loaded (or built in memory), and the ir::Model behind a session.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "onyx/session.h"

namespace onyx {

struct SessionAccess {
  static std::unique_ptr<Session> create(std::shared_ptr<ir::Model> model, const SessionOptions& opts);
  static const ir::Model& model(const Session& s);
};

/// Plans an already loaded model. Throws onyx::Error naming the fault.
inline std::unique_ptr<Session> session_from_model(std::shared_ptr<ir::Model> model,
                                                   const SessionOptions& opts = {}) {
  return SessionAccess::create(std::move(model), opts);
}

/// The model a session was planned from (as loaded, before optimization).
inline const ir::Model& session_model(const Session& s) { return SessionAccess::model(s); }

}  // namespace onyx
