// A structure-aware mutator for ONNX protobuf messages (ModelProto, TensorProto): decodes
// the wire format into a tree using the field layout of onnx.proto, changes one thing a
// byte flip rarely reaches intact — a dim, an attribute's int/float/list, an opset
// version, a data_type, a tensor's dims against its data, a node's inputs/outputs or
// op_type, a whole node, attribute or subgraph copied, dropped or moved — and encodes
// the tree again. Inputs that do not decode fall back to libFuzzer's byte mutations.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace onyx::fuzz {

/// The message type of the root of the bytes being mutated.
enum class RootType { kModel, kTensor };

/// One mutation of `data` (`size` bytes, buffer of `max_size`) in place; returns the new
/// size (at most `max_size`). The same seed gives the same result.
size_t mutate_proto(uint8_t* data, size_t size, size_t max_size, unsigned int seed, RootType root);

/// Copies a random node, initializer, attribute, value info or subgraph of `data2` into
/// a place of the same message type in `data1`; writes the result to `out`.
size_t cross_over_proto(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                        uint8_t* out, size_t max_out_size, unsigned int seed, RootType root);

/// Re-encodes `data` through the tree without mutating it ("" when it does not decode):
/// a self-check that decoding and encoding keep every byte.
std::string reencode_proto(const uint8_t* data, size_t size, RootType root);

}  // namespace onyx::fuzz

/// libFuzzer's byte-level mutator (defined by libFuzzer).
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);
