// The graph optimizer: rewrite passes over the main graph of a model (functions already
// inlined), run in a fixed order until none changes anything. Each pass is one file of
// src/opt/ and is listed, with what it rewrites, in docs/ARCHITECTURE.md.
//
// Every pass keeps the graph valid: in SSA form and topological order, graph outputs
// with their names and types, value_info of the values that remain, and values that a
// subgraph (If/Loop/Scan body) reads from the outer scope are never removed or renamed.
// Passes rewrite the main graph only, never inside subgraphs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onyx/session.h"

namespace onyx::opt {

struct OptimizeOptions {
  GraphOptimization level = GraphOptimization::kAll;
  /// Opset of the default domain the model imports (decides, e.g., whether a
  /// LayerNormalization pattern becomes the ONNX op or the ai.onyx one).
  int64_t default_opset = 0;
  /// With level kAll: allow the ai.onyx fused ops (false: level kAll rewrites as kBasic).
  bool fused_ops = true;
  /// Largest tensor constant folding may create; a bigger result stays a node.
  uint64_t fold_max_bytes = uint64_t{64} << 20;
  /// Seconds constant folding may take over the whole optimization (0: no limit). A node
  /// still computing when they are spent is stopped inside its kernel (base/cancel.h)
  /// and stays a node; later candidates are not tried.
  double fold_max_seconds = 2.0;
  /// Constant folding and pattern checks run kernels on reference paths only.
  bool reference_kernels = false;
  /// With fused ops: run the depthwise-separable parts of CNNs channels last
  /// (to_channels_last, after the other passes; never with reference_kernels).
  bool channels_last = true;
  /// Rounds of the whole pass list at most (each round runs every pass once).
  int max_rounds = 8;
};

/// What one pass did over the whole optimization (summed over rounds).
struct PassStats {
  std::string pass;
  int64_t runs = 0;          ///< times the pass ran
  int64_t rewrites = 0;      ///< rewrites it made (one per pattern replaced / node removed)
  int64_t nodes_before = 0;  ///< graph size before its first run
  int64_t nodes_after = 0;   ///< graph size after its last run
  int64_t delta = 0;         ///< nodes the pass itself added over all its runs (< 0: removed)
};

struct OptimizeReport {
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  int rounds = 0;
  std::vector<PassStats> passes;  ///< in run order, every pass of the level
  /// Op types of the nodes the passes created, with counts ("ai.onyx.FusedConv" -> 12).
  std::vector<std::pair<std::string, int64_t>> created;
};

/// The passes of a level in the order they run.
std::vector<std::string> pass_names(GraphOptimization level, bool fused_ops = true);

/// Rewrites `g` in place. With level kNone it does nothing. Throws onyx::Error only for
/// a graph that is invalid anyway (the planner would refuse it too).
OptimizeReport optimize_graph(ir::Graph& g, const OptimizeOptions& opts);

/// The graph a session plans: `graph` (the model's main graph, functions inlined)
/// optimized at opts.optimize, with the model's default-domain opset. When `graph` is the
/// model's own graph it is copied first, so the model stays as loaded.
std::shared_ptr<ir::Graph> optimize_for_session(const ir::Model& model,
                                                std::shared_ptr<ir::Graph> graph,
                                                const SessionOptions& opts);

/// One line per pass that changed something, for the CLI ("fuse_conv_activation: 17
/// rewrites, 49 -> 32 nodes").
std::string report_text(const OptimizeReport& r);

}  // namespace onyx::opt
