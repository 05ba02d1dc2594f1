// TensorProto / value-proto bytes (the .pb files of the ONNX test data, `onyx run --input
// x.pb`) -> format::read_tensor_proto and format::read_value_proto for each kind of
// declared type: tensor, sequence of tensors, optional tensor, optional sequence.
#include <cstddef>
#include <cstdint>

#include "format/loader.h"
#include "fuzz_util.h"
#include "ir/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using onyx::ir::TypeInfo;
  using onyx::fuzz::expect_error_only;
  static const TypeInfo kTypes[] = {
      TypeInfo::tensor_unranked(onyx::DType::kFloat),
      TypeInfo::sequence_of(TypeInfo::tensor_unranked(onyx::DType::kFloat)),
      TypeInfo::sequence_of(TypeInfo{}),
      TypeInfo::optional_of(TypeInfo::tensor_unranked(onyx::DType::kInt64)),
      TypeInfo::optional_of(TypeInfo::sequence_of(TypeInfo::tensor_unranked(onyx::DType::kString))),
  };
  expect_error_only([&] { (void)onyx::format::read_tensor_proto(data, size); });
  for (const TypeInfo& t : kTypes)
    expect_error_only([&] { (void)onyx::format::read_value_proto(data, size, t); });
  return 0;
}
