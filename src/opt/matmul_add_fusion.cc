// Pass fuse_matmul_add: MatMul(A, B) followed by Add(., C) with a constant C, the MatMul's
// output read by that Add only.
//   A of rank 2, B of rank 2, C of shape [N], [1, N], [M, 1], [M, N], [1] or a scalar
//   (broadcasting into [M, N] without growing it)         -> Gemm(A, B, C)   (kBasic)
//   otherwise, with the ai.onyx ops allowed: A of any rank, B of rank >= 2, C of N values
//   with only 1s before them (rank <= the output's)        -> FusedMatMul(A, B, C as [N])
// Float types only (Gemm's integer types would change how overflow wraps). The fused node
// takes the Add's output name.
#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

bool dim_is(const ir::Dim& d, int64_t v) {
  return d.known() && d.value == v;
}

/// C fits Gemm: rank <= 2, each extent 1 or the output's (known) extent.
bool gemm_bias_fits(const Tensor& c, const ir::Shape& y) {
  if (c.rank() > 2 || y.size() != 2) return false;
  const int64_t cm = c.rank() == 2 ? c.dim(0) : 1, cn = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  return (cm == 1 || dim_is(y[0], cm)) && (cn == 1 || dim_is(y[1], cn));
}

/// C is N values with only 1s before them, N the output's last extent; rank <= output's.
bool vector_bias_fits(const Tensor& c, const ir::Shape& y) {
  if (c.rank() < 1 || c.rank() > y.size() || y.empty() || !dim_is(y.back(), c.dim(c.rank() - 1)))
    return false;
  for (size_t k = 0; k + 1 < c.rank(); ++k)
    if (c.dim(k) != 1) return false;
  return true;
}

}  // namespace

int64_t fuse_matmul_add(PassContext& ctx) {
  int64_t rewrites = 0;
  for (size_t i = 0; i < ctx.size(); ++i) {
    if (!ctx.alive(i)) continue;
    const ir::Node& mm = ctx.node(i);
    if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || given_outputs(mm) != 1) continue;
    const std::string y = mm.outputs[0];
    const auto& uses = ctx.uses(y);
    if (uses.size() != 1 || !ctx.only_used_by(y, uses[0].node)) continue;
    const size_t ai = uses[0].node;
    const ir::Node& add = ctx.node(ai);
    if (!is_op(add, "Add") || add.inputs.size() != 2 || add.opset < 7) continue;
    const std::string c = add.inputs[1 - uses[0].slot];
    const Tensor* ct = ctx.constant(c);
    const ir::Shape* ys = ctx.shape(y);
    const DType dt = ctx.dtype(y);
    if (!ct || !ys || c == y || ct->dtype() != dt) continue;
    if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kFloat16 &&
        dt != DType::kBFloat16)
      continue;
    const int64_t ra = ctx.rank(mm.inputs[0]), rb = ctx.rank(mm.inputs[1]);
    const std::string out = add.outputs[0];
    if (ra == 2 && rb == 2 && mm.opset >= 7 && gemm_bias_fits(*ct, *ys)) {
      ctx.remove(ai);
      ir::Node& g = ctx.node(i);
      g.op_type = "Gemm";
      ctx.set_input(i, 2, c);
      ctx.set_output(i, 0, out);
      ctx.count_created(g);
      ++rewrites;
      continue;
    }
    if (!ctx.fused_allowed() || ra < 1 || rb < 2 || !vector_bias_fits(*ct, *ys)) continue;
    std::string bias = c;
    if (ct->rank() != 1) bias = ctx.add_constant(c, ct->reshaped({ct->numel()}));
    ctx.remove(ai);
    ir::Node& f = ctx.node(i);
    f.op_type = "FusedMatMul";
    f.domain = std::string(kernels::kOnyxDomain);
    f.opset = 1;
    ctx.set_input(i, 2, bias);
    ctx.set_output(i, 0, out);
    ctx.count_created(f);
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
