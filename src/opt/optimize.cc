// The pass manager: runs the passes of a level in a fixed order, round after round,
// until a round changes nothing (or max_rounds is reached).
#include "opt/optimize.h"

#include <map>
#include <optional>

#include "fmt/format.h"
#include "opt/pass.h"

namespace onyx::opt {
namespace {

using PassFn = int64_t (*)(PassContext&);

struct PassDef {
  const char* name;
  PassFn fn;
  bool fused_only;  ///< creates ai.onyx ops only: not part of kBasic
};

// The order matters only for speed (each round runs them all again until nothing
// changes): no-ops and constants first so that patterns see constants; attention
// before the MatMul fusions (its MatMuls would otherwise become FusedMatMul); the
// residual Add before activations (Conv + Add + Relu: the Add joins the Conv first,
// then the Relu joins both); dead nodes last.
constexpr PassDef kPasses[] = {
    {"eliminate_noops", eliminate_noops, false},
    {"fold_constants", fold_constants, false},
    {"cancel_transpose_reshape", cancel_transpose_reshape, false},
    {"fold_batch_norm", fold_batch_norm, false},
    {"fuse_layer_norm", fuse_layer_norm, false},
    {"fuse_gelu", fuse_gelu, false},
    {"fuse_attention", fuse_attention, true},
    {"fuse_matmul_add", fuse_matmul_add, false},
    {"fuse_residual_add", fuse_residual_add, true},
    {"fuse_activation", fuse_activation, true},
    {"eliminate_dead_nodes", eliminate_dead_nodes, false},
};

bool runs_at(const PassDef& p, GraphOptimization level, bool fused_ops) {
  if (level == GraphOptimization::kNone) return false;
  return !p.fused_only || (level == GraphOptimization::kAll && fused_ops);
}

// The layout pass runs once, after the others have converged: it changes no pattern they
// look for but would hide the ones they had not yet fused behind Transposes.
constexpr PassDef kLayoutPass = {"to_channels_last", to_channels_last, true};

bool layout_runs(const OptimizeOptions& o) {
  return runs_at(kLayoutPass, o.level, o.fused_ops) && o.channels_last && !o.reference_kernels;
}

}  // namespace

std::vector<std::string> pass_names(GraphOptimization level, bool fused_ops) {
  std::vector<std::string> out;
  for (const PassDef& p : kPasses)
    if (runs_at(p, level, fused_ops)) out.emplace_back(p.name);
  if (runs_at(kLayoutPass, level, fused_ops)) out.emplace_back(kLayoutPass.name);
  return out;
}

OptimizeReport optimize_graph(ir::Graph& g, const OptimizeOptions& opts) {
  OptimizeReport r;
  r.nodes_before = r.nodes_after = static_cast<int64_t>(g.nodes.size());
  if (opts.level == GraphOptimization::kNone) return r;
  std::vector<const PassDef*> passes;
  for (const PassDef& p : kPasses)
    if (runs_at(p, opts.level, opts.fused_ops)) {
      passes.push_back(&p);
      PassStats s;
      s.pass = p.name;
      r.passes.push_back(s);
    }
  if (!well_formed(g) || !sort_topologically(g)) return r;  // the planner says what is wrong
  std::unordered_map<std::string, ir::TypeInfo> types = infer_types(g);
  std::map<std::string, int64_t> created;
  // One index of the graph serves the passes that follow each other without changing it:
  // it is committed and built again only after a pass edited the graph (building and
  // committing it for each of the ~30 pass runs was half the optimizer's time on small
  // models, which matters in WebAssembly's baseline code at cold start).
  std::optional<PassContext> ctx;
  double fold_left = opts.fold_max_seconds;
  auto commit = [&] {
    for (const auto& [op, count] : ctx->commit()) created[op] += count;
    ctx.reset();
  };
  for (int round = 0; round < opts.max_rounds; ++round) {
    bool changed = false;
    for (size_t i = 0; i < passes.size(); ++i) {
      PassStats& s = r.passes[i];
      const int64_t before = static_cast<int64_t>(g.nodes.size());
      if (s.runs == 0) s.nodes_before = before;
      if (!ctx) {
        ctx.emplace(g, opts, types);
        if (opts.fold_max_seconds > 0) ctx->set_fold_seconds_left(&fold_left);
      }
      const int64_t n = passes[i]->fn(*ctx);
      if (n > 0 || ctx->edited()) commit();
      ++s.runs;
      s.rewrites += n;
      s.nodes_after = static_cast<int64_t>(g.nodes.size());
      s.delta += s.nodes_after - before;
      if (n > 0) {
        changed = true;
        types = infer_types(g);
      }
    }
    r.rounds = round + 1;
    if (!changed) break;
  }
  if (ctx) commit();  // value_info entries of names the graph does not define go
  if (layout_runs(opts)) {
    PassStats s;
    s.pass = kLayoutPass.name;
    s.nodes_before = static_cast<int64_t>(g.nodes.size());
    ctx.emplace(g, opts, types);
    s.rewrites = kLayoutPass.fn(*ctx);
    commit();
    s.runs = 1;
    s.nodes_after = static_cast<int64_t>(g.nodes.size());
    s.delta = s.nodes_after - s.nodes_before;
    r.passes.push_back(s);
  }
  r.nodes_after = static_cast<int64_t>(g.nodes.size());
  // A node made by one pass and replaced by another does not count.
  std::map<std::string, int64_t> present;
  for (const auto& n : g.nodes)
    ++present[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
  for (const auto& [op, count] : created) {
    auto it = present.find(op);
    if (it != present.end()) r.created.emplace_back(op, std::min(count, it->second));
  }
  return r;
}

std::shared_ptr<ir::Graph> optimize_for_session(const ir::Model& model,
                                                std::shared_ptr<ir::Graph> graph,
                                                const SessionOptions& opts) {
  if (opts.optimize == GraphOptimization::kNone) return graph;
  if (graph == model.graph) graph = std::make_shared<ir::Graph>(*model.graph);
  OptimizeOptions oo;
  oo.level = opts.optimize;
  auto def = model.opset_imports.find("");
  oo.default_opset = def == model.opset_imports.end() ? 0 : def->second;
  oo.reference_kernels = opts.reference_kernels;
  optimize_graph(*graph, oo);
  return graph;
}

std::string report_text(const OptimizeReport& r) {
  std::string out;
  for (const PassStats& s : r.passes) {
    if (s.rewrites == 0) continue;
    out +=
        fmt::format("  {}: {} rewrite{}, {:+} node{}\n", s.pass, s.rewrites,
                    s.rewrites == 1 ? "" : "s", s.delta, s.delta == 1 || s.delta == -1 ? "" : "s");
  }
  if (out.empty()) out = "  no pass changed anything\n";
  std::string made;
  for (const auto& [op, n] : r.created)
    made += fmt::format("{}{} x{}", made.empty() ? "" : ", ", op, n);
  out += fmt::format("  {} -> {} nodes in {} round{}{}\n", r.nodes_before, r.nodes_after, r.rounds,
                     r.rounds == 1 ? "" : "s", made.empty() ? "" : "; made " + made);
  return out;
}

}  // namespace onyx::opt
