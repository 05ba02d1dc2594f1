// Shape functions of the misc family.
#include "shape/infer.h"

namespace onyx::shape {

void register_misc_shapes(ShapeRegistry& r) { (void)r; }

}  // namespace onyx::shape
