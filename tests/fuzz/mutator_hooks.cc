// libFuzzer's custom mutator and crossover for the targets whose bytes are an ONNX
// protobuf message: the structure-aware mutations of model_mutator.h. Compiled into the
// libFuzzer build only, once per target, with ONYX_FUZZ_ROOT naming the root message
// type (kModel, kTensor); the replay build (replay_main.cc) has no mutator.
#include <cstddef>
#include <cstdint>

#include "model_mutator.h"

#ifndef ONYX_FUZZ_ROOT
#error "ONYX_FUZZ_ROOT must name the root message type (kModel or kTensor)"
#endif

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return onyx::fuzz::mutate_proto(data, size, max_size, seed, onyx::fuzz::RootType::ONYX_FUZZ_ROOT);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                                            uint8_t* out, size_t max_out_size, unsigned int seed) {
  return onyx::fuzz::cross_over_proto(data1, size1, data2, size2, out, max_out_size, seed,
                                      onyx::fuzz::RootType::ONYX_FUZZ_ROOT);
}
