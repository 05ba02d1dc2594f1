// Reading ONNX protobuf files into ir:: objects.
#pragma once
#include <map>
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

/// One external-data blob already in memory (the browser has no files): `size` bytes at
/// `data`, valid while `owner` lives (the loaded model keeps it).
struct ExternalBlob {
  std::shared_ptr<const void> owner;
  const void* data = nullptr;
  size_t size = 0;
};

/// External-data blobs by the location a model's tensors name ("model.onnx.data").
using ExternalBlobs = std::map<std::string, ExternalBlob>;

/// Loads a model from bytes in memory (copied) whose external data comes from `external`
/// instead of files; tensors view the blobs where aligned (not copied). The locations are
/// checked as load_model checks them (relative, no '..'; "./w.bin" finds "w.bin"), and a
/// location missing from `external` or a range past its blob's end throws onyx::Error
/// naming the tensor and the location.
std::shared_ptr<ir::Model> load_model_from_bytes(const void* data, size_t size,
                                                 const ExternalBlobs& external);

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
