// Registration of the optimized kernel families (src/kernels/cpu/): each adds kernel
// factories (Registry::add_optimized) that the planner tries before the reference.
#pragma once
#include "kernels/registry.h"

namespace onyx::kernels::cpu {

void register_views(Registry& r);        // views.cc
void register_elementwise(Registry& r);  // elementwise.cc: broadcast binary ops, Pow
void register_activation(Registry& r);   // activation.cc: unary math and activations

}  // namespace onyx::kernels::cpu
