// Writing ir:: models back to ONNX protobuf (ModelProto), for `onyx optimize`.
#pragma once
#include <string>

#include "ir/graph.h"

namespace onyx::format {

/// Serializes `model` with `graph` as its main graph into ModelProto bytes. Every tensor
/// is written in raw_data (little-endian; sub-byte types packed; strings in string_data),
/// external data is written inline. The model's functions are not written (`graph` is
/// expected to have them inlined); its opset imports are, plus "ai.onyx" version 1 when
/// some node uses that domain. Throws onyx::Error (kUnsupported) when the result would
/// pass protobuf's 2 GiB message limit.
std::string write_model(const ir::Model& model, const ir::Graph& graph);

/// write_model into a file (replaced when it exists). Throws onyx::Error (kIo).
void write_model_file(const std::string& path, const ir::Model& model, const ir::Graph& graph);

}  // namespace onyx::format
