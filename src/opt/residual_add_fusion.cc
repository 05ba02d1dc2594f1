// Pass fuse_residual_add: Add(Conv(...), z) -> ai.onyx FusedConv(X, W, B, Z = z), the
// residual connection of a ResNet block (a later Relu then joins it through
// fuse_activation: Y = Relu(Conv + Z)). Also a FusedConv without activation and without
// Z. Conditions: the Conv's output read by the Add only; z of the Conv output's shape
// (same rank, each dim equal: known and the same, or the same symbol) and dtype, so the
// Add does not broadcast; float types. When both operands are such Convs, the first is
// fused. The fused node takes the Add's output name.
#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

bool same_shape(const ir::Shape& a, const ir::Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].known() != b[k].known()) return false;
    if (a[k].known() ? a[k].value != b[k].value : (a[k].param.empty() || a[k].param != b[k].param))
      return false;
  }
  return true;
}

bool takes_z(const ir::Node& p) {
  if (is_op(p, "Conv")) return true;
  return p.domain == kernels::kOnyxDomain && p.op_type == "FusedConv" &&
         p.attr_s("activation", "").empty() && (p.inputs.size() < 4 || p.inputs[3].empty());
}

}  // namespace

int64_t fuse_residual_add(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& add = ctx.node(i);
    if (!is_op(add, "Add") || add.inputs.size() != 2 || add.opset < 7 ||
        add.inputs[0] == add.inputs[1])
      continue;
    const ir::Shape* out = ctx.shape(add.outputs[0]);
    const DType dt = ctx.dtype(add.outputs[0]);
    if (!out || (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kFloat16 &&
                 dt != DType::kBFloat16))
      continue;
    for (int side = 0; side < 2; ++side) {
      const std::string y = add.inputs[side], z = add.inputs[1 - side];
      const int p = ctx.producer(y);
      if (p < 0 || !takes_z(ctx.node(p)) || given_outputs(ctx.node(p)) != 1) continue;
      if (sole_user(ctx, y) != static_cast<int>(i)) continue;
      const ir::Shape* ys = ctx.shape(y);
      const ir::Shape* zs = ctx.shape(z);
      if (!ys || !zs || !same_shape(*ys, *zs) || !same_shape(*ys, *out) || ctx.dtype(z) != dt ||
          ctx.dtype(y) != dt)
        continue;
      const std::string result = add.outputs[0];
      ctx.remove(i);
      ir::Node f = ctx.node(p);
      f.op_type = "FusedConv";
      f.domain = std::string(kernels::kOnyxDomain);
      f.opset = 1;
      f.inputs.resize(4);
      f.inputs[3] = z;
      f.outputs = {result};
      ctx.replace(static_cast<size_t>(p), std::move(f));
      ++rewrites;
      break;
    }
  }
  return rewrites;
}

}  // namespace onyx::opt
