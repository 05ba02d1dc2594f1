// Values (tensors, sequences, optionals) to and from files: ONNX protobuf (.pb, the way
// the ONNX test data stores values: TensorProto, SequenceProto, OptionalProto) and the
// numpy forms `onyx run` writes (a .npy per tensor, a folder of numbered files per
// sequence, a marker file per empty optional), each readable back by read_value_path.
//
// onyx's Value has no map kind (no kernel takes or makes maps), so MapProto is neither
// written nor read: a value declared as a map, or a sequence of maps, is refused.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onyx/tensor.h"

namespace onyx::format {

/// TensorProto bytes of `t`: dims, data_type, name (when not empty), and the values in
/// raw_data (little-endian; 4-bit types packed two to a byte and 2-bit types four to a
/// byte, low bits first, as onnx.proto says) or, for strings, string_data.
std::string write_tensor_proto(const Tensor& t, const std::string& name = "");

/// The bytes of `v` as the ONNX test data stores the value of a graph input or output
/// declared as `type`: an OptionalProto when `type` is optional (empty, or holding the
/// tensor or sequence), a SequenceProto of tensor_values for a sequence, else a
/// TensorProto. When `type` is unknown the value's kind decides (an empty value is an
/// empty OptionalProto). Throws onyx::Error (kInvalidArgument) when the value's kind
/// does not fit `type`, or for a map type.
std::string write_value_proto(const Value& v, const ir::TypeInfo& type,
                              const std::string& name = "");

/// How `onyx run --output-format` writes values.
enum class ValueFormat {
  kNpy,  ///< <stem>.npy; a sequence as the folder <stem>/ of 0.npy, 1.npy ...; an empty
         ///< optional as the marker file <stem>.none; a non-empty optional as what it holds
  kPb,   ///< <stem>.pb holding write_value_proto
};

/// The marker file's suffix for an empty optional in the numpy form.
inline constexpr const char* kNoneSuffix = ".none";

/// What write_value_files wrote.
struct WrittenValue {
  std::string path;                ///< the file, or the folder of a sequence in the numpy form
  std::vector<std::string> items;  ///< a sequence folder's files, in order
};

/// Writes `v` (the graph value `name`, declared as `type`) under `dir` in `format`.
/// First removes what an earlier write of `stem` may have left in another form
/// (<stem>.npy, <stem>.pb, <stem>.none, and the numbered .npy/.pb files of <stem>/), so
/// `dir` holds one form of the value. Refuses to write over anything but a regular file.
/// Throws onyx::Error (kIo) when a file cannot be written, (kInvalidArgument) when the
/// value cannot be held in `format` (a string ending in NUL as .npy).
WrittenValue write_value_files(const std::string& dir, const std::string& stem, const Value& v,
                               const ir::TypeInfo& type, const std::string& name,
                               ValueFormat format);

/// Reads a value for a graph input or output declared as `type` from `path`, in any form
/// write_value_files writes: a .pb file (TensorProto, SequenceProto or OptionalProto as
/// `type` says), a .npy file, a folder of 0.npy/0.pb, 1.npy ... files (a sequence; an
/// empty folder is an empty sequence), or a <name>.none marker (an empty optional; its
/// content is not read). A .npy or .pb file holding the raw bits of a dtype numpy lacks
/// is read as the declared dtype (npy_as_declared). `what` names the value in errors
/// ("input 'x'"). Throws onyx::Error for a form that does not fit `type` (a folder for a
/// tensor, a marker for a value that is not optional, a .npy for a sequence) or a
/// malformed file or folder.
Value read_value_path(const std::string& path, const ir::TypeInfo& type, const std::string& what);

/// `v` with each tensor read as `type` declares it (npy_as_declared on the tensor, the
/// sequence's items or the optional's content).
Value value_as_declared(const Value& v, const ir::TypeInfo& type, const std::string& what);

}  // namespace onyx::format
