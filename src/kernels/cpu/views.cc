// Reshape-like ops as views: Reshape, Flatten, Squeeze, Unsqueeze and Identity give their
// input's buffer new dims instead of copying it (the reference kernels copy). Safe because
// no kernel writes into its inputs and Session::run copies an output that shares memory
// with a feed, a constant or another output.
#include "kernels/cpu/register.h"

namespace onyx::kernels::cpu {
namespace {

class ViewKernel final : public Kernel {
 public:
  void run(KernelContext& ctx) const override {
    const Value* v = ctx.input_value(0);
    if (!v) ctx.fail("input 0 is required");
    if (!v->is_tensor()) {  // Identity of a sequence or optional: pass it on
      ctx.set_output(0, *v);
      return;
    }
    const ir::TypeInfo* t = ctx.output_type(0);
    if (!t || !t->is_tensor() || !t->has_shape || !ir::shape_known(t->shape))
      ctx.fail("the output shape is not known before running (a view needs it)");
    ctx.set_output(0, Value(v->tensor().reshaped(ir::shape_dims(t->shape))));
  }
  std::string_view name() const override { return "cpu.view"; }
  bool makes_own_outputs() const override { return true; }
};

std::unique_ptr<Kernel> make_view(const KernelInit&) { return std::make_unique<ViewKernel>(); }

}  // namespace

void register_views(Registry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    r.add_optimized("", op, 1, 1000, {}, make_view);
}

}  // namespace onyx::kernels::cpu
