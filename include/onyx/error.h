// Public error type of onyx. Every failure that reaches a user is an onyx::Error
// whose message names the place (file, node, input) and what was expected.
#pragma once
#include <stdexcept>
#include <string>

namespace onyx {

/// Category of an error, so callers can react without parsing the text.
enum class ErrorCode {
  kInvalidModel,     ///< the file is not a valid ONNX model (malformed protobuf, bad graph)
  kUnsupported,      ///< valid model, but an op/opset/dtype onyx cannot run
  kInvalidArgument,  ///< bad input given at run time (name, dtype, shape)
  kIo,               ///< file could not be read or written
  kRuntime,          ///< failure while executing a node
  kLimit,            ///< a resource limit of SessionOptions was reached (names the option)
  kCancelled,        ///< the run was stopped through RunOptions::terminate
};

/// The one exception type thrown by onyx.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace onyx
