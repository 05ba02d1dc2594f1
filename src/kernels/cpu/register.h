// Registration of the optimized kernel families (src/kernels/cpu/): each adds kernel
// factories (Registry::add_optimized) that the planner tries before the reference.
#pragma once
#include "kernels/registry.h"

namespace onyx::kernels::cpu {

void register_views(Registry& r);  // views.cc
void register_conv(Registry& r);   // conv.cc (Conv, FusedConv), conv_transpose.cc
void register_matmul(Registry& r);  // matmul.cc: MatMul, Gemm, FusedMatMul, FusedGemm

}  // namespace onyx::kernels::cpu
