// What a pass works with: the graph, an index of who produces and who reads each value
// (kept up to date by the edit functions), the static types of the values, and the
// constants. A pass finds its patterns through the index, edits through PassContext only,
// and the pass manager (optimize.cc) calls commit() after it: removed nodes go, the node
// list is sorted topologically again, and value_info entries of values that no longer
// exist are dropped.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "opt/optimize.h"

namespace onyx::opt {

/// One input slot of a node that reads a value.
struct Use {
  size_t node;
  size_t slot;
};

class PassContext {
 public:
  /// Indexes `g`. `types` holds the static types of its values (see infer_types); the
  /// pass keeps it right for the values it creates (set_type).
  PassContext(ir::Graph& g, const OptimizeOptions& opts,
              std::unordered_map<std::string, ir::TypeInfo>& types);

  ir::Graph& graph() { return g_; }
  const OptimizeOptions& options() const { return opts_; }
  /// Seconds of constant folding left to the whole optimization (shared by its rounds;
  /// null: no limit). See OptimizeOptions::fold_max_seconds.
  double* fold_seconds_left() const { return fold_left_; }
  void set_fold_seconds_left(double* left) { fold_left_ = left; }
  /// True when the ai.onyx fused ops may be created (level kAll with fused_ops).
  bool fused_allowed() const { return opts_.level == GraphOptimization::kAll && opts_.fused_ops; }

  // ---- nodes ----
  /// Node slots, including removed ones (check alive()).
  size_t size() const { return g_.nodes.size(); }
  ir::Node& node(size_t i) { return g_.nodes[i]; }
  const ir::Node& node(size_t i) const { return g_.nodes[i]; }
  bool alive(size_t i) const { return !removed_[i]; }

  // ---- values ----
  /// Index of the node producing `v`, or -1 (a graph input, an initializer, undefined).
  int producer(const std::string& v) const;
  /// The node slots reading `v` (one entry per input slot).
  const std::vector<Use>& uses(const std::string& v) const;
  /// Readers of `v` besides node inputs: graph outputs and subgraphs that capture it.
  bool pinned(const std::string& v) const {
    return outputs_.count(v) > 0 || captured_.count(v) > 0;
  }
  bool is_graph_output(const std::string& v) const { return outputs_.count(v) > 0; }
  /// True when a subgraph of some node reads `v` from this graph.
  bool captured(const std::string& v) const { return captured_.count(v) > 0; }
  /// True when `v` is read only by node `n` (in one or more of its slots) and not pinned.
  bool only_used_by(const std::string& v, size_t n) const;
  /// Number of input slots reading `v` (graph outputs and captures not counted).
  size_t use_count(const std::string& v) const { return uses(v).size(); }
  /// The value of `v` when it is a constant: an initializer that is not a graph input
  /// (an input with a default may be fed). Null otherwise.
  const Tensor* constant(const std::string& v) const;
  /// A constant holding one element (any rank) of a float type or an integer type, as
  /// double; nullopt when `v` is not such a constant.
  std::optional<double> scalar(const std::string& v) const;
  /// The static type of `v`, or null when not known.
  const ir::TypeInfo* type(const std::string& v) const;
  /// The static shape of `v` when it is a tensor of known rank, else null.
  const ir::Shape* shape(const std::string& v) const;
  /// The element type of `v`, or kUndefined.
  DType dtype(const std::string& v) const;
  /// The rank of `v`, or -1 when not known.
  int64_t rank(const std::string& v) const;

  // ---- edits ----
  /// Makes input `slot` of node `n` read `v` ("" omits it).
  void set_input(size_t n, size_t slot, const std::string& v);
  /// Makes every node input reading `from` read `to` instead. `from` must not be pinned.
  void replace_uses(const std::string& from, const std::string& to);
  /// Removes node `n` (its outputs must have no readers left, or be redefined).
  void remove(size_t n);
  /// Appends a node (placed by commit's topological sort); returns its index.
  size_t add(ir::Node n);
  /// Puts `n` in the place of node `i` (which keeps its position in the order): the
  /// usual way a fusion installs its node in place of the pattern's last one, after
  /// removing the others.
  void replace(size_t i, ir::Node n);
  /// Renames output `k` of node `n` to `v` (a name no other node defines).
  void set_output(size_t n, size_t k, const std::string& v);
  /// Adds a constant under a fresh name derived from `hint`; returns the name.
  std::string add_constant(const std::string& hint, Tensor t);
  /// Makes the initializer `v` hold `t` (v must be a constant read by nothing else, or a
  /// new one); adds it when absent.
  void set_constant(const std::string& v, Tensor t);
  /// A value name not used anywhere in the graph, derived from `hint`.
  std::string fresh_name(const std::string& hint);
  /// Records the static type of a value a pass created.
  void set_type(const std::string& v, ir::TypeInfo t) { types_[v] = std::move(t); }
  /// Counts a node the pass created (for the report).
  void count_created(const ir::Node& n);

  /// Removes initializers nothing reads (not graph inputs, outputs or captures); returns
  /// how many. Call it last in a pass: it renumbers the constant index.
  size_t drop_unused_initializers();

  /// True once an edit method above changed the graph (edits through node(i) are not
  /// seen: a pass that makes them counts them as rewrites).
  bool edited() const { return edited_; }

  /// Drops removed nodes, restores topological order, drops stale value_info entries.
  /// Returns the op types created (for the report).
  std::map<std::string, int64_t> commit();

 private:
  void index_node(size_t i);
  void unindex_input(size_t n, size_t slot);

  ir::Graph& g_;
  const OptimizeOptions& opts_;
  double* fold_left_ = nullptr;
  std::vector<bool> removed_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<Use>> uses_;
  std::unordered_map<std::string, size_t> inits_;  ///< initializer name -> index
  std::set<std::string> graph_inputs_;
  std::set<std::string> outputs_;
  std::set<std::string> captured_;
  std::set<std::string> names_;  ///< every name the graph uses, for fresh_name
  std::unordered_map<std::string, ir::TypeInfo>& types_;
  std::map<std::string, int64_t> created_;
  int64_t fresh_ = 0;
  bool edited_ = false;
};

/// Static types of the values of `g` (graph inputs, initializers, node outputs), inferred
/// in node order by the shape functions with the constants' values. Declared value_info
/// is not trusted (a folded Shape must be right): values whose type inference cannot
/// tell are absent. Never throws for a node it cannot infer.
std::unordered_map<std::string, ir::TypeInfo> infer_types(const ir::Graph& g);

/// Restores topological order (stable: nodes already in order keep it). Returns false,
/// leaving `g` as it was, when the graph has a cycle.
bool sort_topologically(ir::Graph& g);

/// True when `g` is a graph the planner accepts as far as names go: every value defined
/// once (an input with a default counts once), every node input, captured name and
/// graph output defined; every node of a known op with as many inputs and outputs as its
/// schema allows. The optimizer leaves any other graph (or one with a cycle)
/// alone, so that the planner reports what is wrong with it as it would unoptimized.
bool well_formed(const ir::Graph& g);

// ---- helpers shared by the passes ----

/// A new node of the default domain at `opset` (or of ai.onyx at opset 1 when `domain`
/// is "ai.onyx").
ir::Node make_node(std::string op, std::vector<std::string> inputs,
                   std::vector<std::string> outputs, std::string name, int64_t opset,
                   std::string domain = "");
ir::Attribute make_attr_i(std::string name, int64_t v);
ir::Attribute make_attr_f(std::string name, float v);
ir::Attribute make_attr_s(std::string name, std::string v);
ir::Attribute make_attr_ints(std::string name, std::vector<int64_t> v);
ir::Attribute make_attr_floats(std::string name, std::vector<float> v);
/// Sets (adds or replaces) an attribute of `n`.
void set_attr(ir::Node& n, ir::Attribute a);
/// Removes attribute `name` of `n` when present.
void erase_attr(ir::Node& n, std::string_view name);
/// True when `n` is a default-domain node of type `op`.
inline bool is_op(const ir::Node& n, std::string_view op) {
  return n.domain.empty() && n.op_type == op;
}
/// True when `n` has a graph attribute (If, Loop, Scan, ...).
bool has_subgraph(const ir::Node& n);
/// Number of inputs actually given (trailing "" not counted).
size_t given_inputs(const ir::Node& n);
/// Number of outputs actually requested (trailing "" not counted).
size_t given_outputs(const ir::Node& n);
/// Removes node `n` whose output `out` equals its input `in` (an Identity, say): readers
/// of `out` read `in`. When `out` is pinned (a graph output) the producer of `in` is made
/// to produce `out` instead, if `in` is a node output nothing else pins. Returns false
/// (and changes nothing) when neither is possible.
bool bypass(PassContext& ctx, size_t n, const std::string& in, const std::string& out);
/// The node reading `v` when exactly one node input slot reads it and `v` is not pinned;
/// -1 otherwise.
int sole_user(const PassContext& ctx, const std::string& v);
/// The node producing `v` when it is a default-domain node of type `op`, else -1.
int producer_of(const PassContext& ctx, const std::string& v, std::string_view op);
/// Constant integer values of `v` (int32/int64 initializer), or nullopt.
std::optional<std::vector<int64_t>> const_ints(const PassContext& ctx, const std::string& v);
/// The axes of a Squeeze/Unsqueeze/Reduce* node: the `axes` attribute, or its input 1 when
/// constant; nullopt when given by a non-constant input. `present` tells whether any
/// axes are given at all.
std::optional<std::vector<int64_t>> node_axes(const PassContext& ctx, const ir::Node& n,
                                              bool& present);
/// True when the float scalar `v` is within a relative 1e-6 (and absolute 1e-12) of `want`.
bool near(double v, double want, double rel = 1e-6);

// ---- the passes (one file each); each returns the number of rewrites it made ----
int64_t eliminate_noops(PassContext& ctx);           // noop_elimination.cc
int64_t fold_constants(PassContext& ctx);            // constant_folding.cc
int64_t eliminate_dead_nodes(PassContext& ctx);      // dead_node_elimination.cc
int64_t cancel_transpose_reshape(PassContext& ctx);  // transpose_reshape_cancellation.cc
int64_t fold_batch_norm(PassContext& ctx);           // batchnorm_folding.cc
int64_t fuse_matmul_add(PassContext& ctx);           // matmul_add_fusion.cc
int64_t fuse_layer_norm(PassContext& ctx);           // layernorm_fusion.cc
int64_t fuse_gelu(PassContext& ctx);                 // gelu_fusion.cc
int64_t fuse_attention(PassContext& ctx);            // attention_fusion.cc
int64_t fuse_residual_add(PassContext& ctx);         // residual_add_fusion.cc
int64_t fuse_activation(PassContext& ctx);           // activation_fusion.cc
int64_t to_channels_last(PassContext& ctx);          // channels_last.cc (once, last)

}  // namespace onyx::opt
