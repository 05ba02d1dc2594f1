// Reference kernels of the misc family.
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_misc(Registry& r) { (void)r; }

}  // namespace onyx::kernels
