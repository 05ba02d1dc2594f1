// Registration of the optimized kernel families (src/kernels/cpu/): each adds kernel
// factories (Registry::add_optimized) that the planner tries before the reference.
#pragma once
#include "kernels/registry.h"

namespace onyx::kernels::cpu {

void register_views(Registry& r);  // views.cc
void register_rnn(Registry& r);    // rnn.cc: RNN, GRU, LSTM

}  // namespace onyx::kernels::cpu
