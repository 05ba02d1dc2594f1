// Reading ONNX protobuf files into ir:: objects.
#pragma once
#include <memory>
#include <string>

#include "ir/graph.h"
#include "onyx/tensor.h"

namespace onyx::format {

/// Loads a model file. Tensors with raw data view the mmap'ed file where aligned;
/// external data is mmap'ed from files in the model's folder (paths that leave the
/// folder are refused). Throws onyx::Error naming the file and the fault.
std::shared_ptr<ir::Model> load_model(const std::string& path);

/// Loads a model from bytes already in memory (copied); external data is resolved
/// against `base_dir` ("" refuses external data).
std::shared_ptr<ir::Model> load_model_from_bytes(const void* data, size_t size,
                                                 const std::string& base_dir = "");

/// Decodes a serialized TensorProto (a .pb file holding one tensor).
Tensor read_tensor_proto(const void* data, size_t size);

/// Decodes a .pb value file: a TensorProto, SequenceProto or OptionalProto, chosen by
/// `type` (the declared type of the graph input/output it is for). Throws onyx::Error
/// (kUnsupported) for what onyx's Value cannot hold: a map (MapProto), a sequence of
/// anything but tensors, an optional of a map or an optional.
Value read_value_proto(const void* data, size_t size, const ir::TypeInfo& type);

/// Reads a whole .pb file as read_value_proto does.
Value read_value_file(const std::string& path, const ir::TypeInfo& type);

}  // namespace onyx::format
