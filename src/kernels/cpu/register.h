// Registration of the optimized kernel families (src/kernels/cpu/): each adds kernel
// factories (Registry::add_optimized) that the planner tries before the reference.
#pragma once
#include "kernels/registry.h"

namespace onyx::kernels::cpu {

void register_views(Registry& r);        // views.cc
void register_transpose(Registry& r);    // transpose.cc: Transpose as batched 2-D transposes
void register_elementwise(Registry& r);  // elementwise.cc: broadcast binary ops, Pow
void register_activation(Registry& r);   // activation.cc: unary math and activations
void register_softmax(Registry& r);      // softmax.cc: Softmax, LogSoftmax
void register_norm(Registry& r);         // norm.cc: Layer/Batch/Instance/GroupNormalization
void register_reduce(Registry& r);       // reduce.cc: ReduceSum/Mean/Max/Min
void register_pool(Registry& r);         // pool.cc: MaxPool, AveragePool, global pools
void register_pad(Registry& r);          // pad.cc: Pad (constant mode)
void register_concat(Registry& r);       // concat.cc: Concat
void register_resize(Registry& r);       // resize.cc: Resize nearest and linear, 2-D
void register_conv(Registry& r);         // conv.cc (Conv, FusedConv), conv_transpose.cc
void register_matmul(Registry& r);       // matmul.cc: MatMul, Gemm, FusedMatMul, FusedGemm
void register_rnn(Registry& r);          // rnn.cc: RNN, GRU, LSTM
void register_attention(Registry& r);    // attention.cc: ai.onyx Attention, ONNX Attention

}  // namespace onyx::kernels::cpu
