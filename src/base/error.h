// Helpers to raise onyx::Error with formatted messages.
#pragma once
#include <fmt/format.h>

#include "onyx/error.h"

namespace onyx {

template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(code, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_model(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorCode::kInvalidModel, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_unsupported(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorCode::kUnsupported, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_arg(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_runtime(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorCode::kRuntime, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace onyx
