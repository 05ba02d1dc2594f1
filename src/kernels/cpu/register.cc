#include "kernels/cpu/register.h"

namespace onyx::kernels {

void register_cpu(Registry& r) {
  cpu::register_views(r);
  cpu::register_transpose(r);
  cpu::register_conv(r);
  cpu::register_matmul(r);
  cpu::register_elementwise(r);
  cpu::register_activation(r);
  cpu::register_softmax(r);
  cpu::register_norm(r);
  cpu::register_reduce(r);
  cpu::register_pool(r);
  cpu::register_pad(r);
  cpu::register_concat(r);
  cpu::register_resize(r);
  cpu::register_rnn(r);
  cpu::register_attention(r);
}

}  // namespace onyx::kernels
