#include "base/cancel.h"

#include "base/error.h"

namespace onyx::detail {

void throw_cancelled(const CancelToken& t) { throw Error(ErrorCode::kCancelled, t.what); }

}  // namespace onyx::detail
