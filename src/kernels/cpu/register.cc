#include "kernels/cpu/register.h"

namespace onyx::kernels {

void register_cpu(Registry& r) {
  cpu::register_views(r);
  cpu::register_rnn(r);
}

}  // namespace onyx::kernels
