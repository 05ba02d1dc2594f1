// Small helpers shared by the unit tests: catching onyx::Error, building tensors.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "onyx/error.h"
#include "onyx/tensor.h"

namespace onyx::test {

/// What a call threw: nothing, an onyx::Error (code and message), or something else.
struct Caught {
  enum class Kind { kNothing, kOnyxError, kOther };
  Kind kind = Kind::kNothing;
  ErrorCode code = ErrorCode::kRuntime;
  std::string message;
  bool is_error() const { return kind == Kind::kOnyxError; }
};

template <typename F>
Caught catch_error(F&& f) {
  Caught c;
  try {
    f();
  } catch (const Error& e) {
    c.kind = Caught::Kind::kOnyxError;
    c.code = e.code();
    c.message = e.what();
  } catch (const std::exception& e) {
    c.kind = Caught::Kind::kOther;
    c.message = std::string("non-onyx exception: ") + e.what();
  } catch (...) {
    c.kind = Caught::Kind::kOther;
    c.message = "unknown exception";
  }
  return c;
}

inline const char* code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kInvalidModel: return "kInvalidModel";
    case ErrorCode::kUnsupported: return "kUnsupported";
    case ErrorCode::kInvalidArgument: return "kInvalidArgument";
    case ErrorCode::kIo: return "kIo";
    case ErrorCode::kRuntime: return "kRuntime";
    case ErrorCode::kLimit: return "kLimit";
    case ErrorCode::kCancelled: return "kCancelled";
  }
  return "?";
}

/// Asserts `expr` throws onyx::Error with `code` and a message containing every one of
/// the given substrings; evaluates to the message.
inline ::testing::AssertionResult error_matches(const Caught& c, ErrorCode code,
                                                const std::vector<std::string>& parts) {
  if (c.kind == Caught::Kind::kNothing) return ::testing::AssertionFailure() << "nothing was thrown";
  if (c.kind == Caught::Kind::kOther) return ::testing::AssertionFailure() << c.message;
  if (c.code != code)
    return ::testing::AssertionFailure() << "code " << code_name(c.code) << ", expected "
                                         << code_name(code) << "; message: " << c.message;
  for (const auto& p : parts)
    if (c.message.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << c.message;
  return ::testing::AssertionSuccess() << c.message;
}

#define EXPECT_ONYX_ERROR(stmt, code, ...)                                                  \
  EXPECT_TRUE(::onyx::test::error_matches(::onyx::test::catch_error([&] { stmt; }), code, \
                                          {__VA_ARGS__}))

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A float tensor with the given values.
inline Tensor make_float(Dims dims, const std::vector<float>& v) {
  Tensor t(DType::kFloat, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size());
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}

template <typename T>
Tensor make_tensor(DType dt, Dims dims, const std::vector<T>& v) {
  Tensor t(dt, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size());
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

}  // namespace onyx::test
