// Pass eliminate_dead_nodes: removes nodes none of whose outputs is read (by a node, a
// subgraph or as a graph output), then initializers nothing reads. Kept whatever their
// outputs: random ops (they draw from a generator), and ops of domains other than the
// default and ai.onyx (a custom op may have effects onyx cannot see).
#include <set>

#include "kernels/reference/fused.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

bool removable(const ir::Node& n) {
  static const std::set<std::string, std::less<>> kRandom = {"RandomNormal",  "RandomNormalLike",
                                                             "RandomUniform", "RandomUniformLike",
                                                             "Bernoulli",     "Multinomial"};
  if (n.domain.empty()) return !kRandom.count(n.op_type);
  return n.domain == kernels::kOnyxDomain;
}

}  // namespace

int64_t eliminate_dead_nodes(PassContext& ctx) {
  int64_t rewrites = 0;
  // Backwards, so a chain whose end is unused goes in one sweep.
  for (size_t i = ctx.size(); i-- > 0;) {
    if (!ctx.alive(i) || !removable(ctx.node(i))) continue;
    bool read = false;
    for (const auto& o : ctx.node(i).outputs)
      if (!o.empty() && (ctx.pinned(o) || ctx.use_count(o) > 0)) read = true;
    if (read) continue;
    ctx.remove(i);
    ++rewrites;
  }
  ctx.drop_unused_initializers();
  return rewrites;
}

}  // namespace onyx::opt
