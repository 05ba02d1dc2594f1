// What a kernel sees when it runs: its node, inputs, preallocated outputs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancel.h"
#include "base/error.h"
#include "ir/graph.h"
#include "onyx/tensor.h"

namespace onyx {
class ThreadPool;
}
namespace onyx::runtime {
class RunContext;
}

namespace onyx::kernels {

/// Runs a subgraph attribute of the current node (If/Loop/Scan/SequenceMap).
/// Implemented by the runtime; a kernel calls it through KernelContext.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  /// Runs graph attribute `attr` of the node with `inputs` bound to the subgraph's
  /// formal inputs in order; returns its outputs in order.
  virtual std::vector<Value> run(const std::string& attr, std::vector<Value> inputs) = 0;
};

class KernelContext {
 public:
  /// `run` counts allocations against the run's limits; null: the default limits.
  /// `fast_paths` false keeps the reference kernels off their optimized branches.
  /// `inputs` must outlive the context.
  KernelContext(const ir::Node& node, const std::vector<const Value*>& inputs, std::vector<Value>* outputs,
                SubgraphRunner* sub, ThreadPool* pool, runtime::RunContext* run = nullptr,
                bool fast_paths = true)
      : node_(node), inputs_(inputs), outputs_(outputs), sub_(sub), pool_(pool), run_(run),
        fast_paths_(fast_paths) {}

  const ir::Node& node() const { return node_; }
  int opset() const { return node_.opset; }

  size_t num_inputs() const { return inputs_.size(); }
  /// True when input `i` is given (within range, not "" and not an empty optional).
  bool has_input(size_t i) const {
    return i < inputs_.size() && inputs_[i] != nullptr && !inputs_[i]->is_none();
  }
  /// Tensor input `i` (fails when absent or not a tensor).
  const Tensor& input(size_t i) const;
  /// Any input value (tensor, sequence, empty optional); nullptr when omitted.
  const Value* input_value(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  /// Integer tensor input as int64 values.
  std::vector<int64_t> input_ints(size_t i) const;

  size_t num_outputs() const { return outputs_->size(); }
  /// True when output `i` is requested (named) by the node.
  bool has_output(size_t i) const {
    return i < node_.outputs.size() && !node_.outputs[i].empty();
  }
  /// Output `i`, allocated by the executor from the shape function's result.
  Tensor& output(size_t i);
  /// For ops whose output shape depends on data the shape function cannot see
  /// (control flow, Unique, ...): allocate output `i` here (zero-filled, counted against
  /// the run's limits: an Error of code kLimit instead of an allocation that passes one).
  Tensor& alloc_output(size_t i, DType dt, Dims dims);
  /// A zero-filled tensor the kernel builds an output or a large intermediate in,
  /// counted against the run's limits like alloc_output.
  Tensor new_tensor(DType dt, const Dims& dims, size_t for_output = 0) const;
  /// Sets output `i` to any value (sequence, optional, or a tensor sharing memory).
  void set_output(size_t i, Value v);
  /// The type the shape function gave output `i` for this call (concrete where it could
  /// tell), or null when not known. Kernels that make their own outputs read it.
  const ir::TypeInfo* output_type(size_t i) const {
    return out_types_ && i < out_types_->size() ? &(*out_types_)[i] : nullptr;
  }
  void set_output_types(const std::vector<ir::TypeInfo>* t) { out_types_ = t; }

  // Attribute access (see ir::Node).
  int64_t attr_i(std::string_view n, int64_t def) const { return node_.attr_i(n, def); }
  float attr_f(std::string_view n, float def) const { return node_.attr_f(n, def); }
  std::string attr_s(std::string_view n, const std::string& def) const { return node_.attr_s(n, def); }
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const {
    return node_.attr_ints(n, std::move(def));
  }
  std::vector<float> attr_floats(std::string_view n, std::vector<float> def = {}) const {
    return node_.attr_floats(n, std::move(def));
  }
  bool has_attr(std::string_view n) const { return node_.has_attr(n); }

  std::vector<Value> run_subgraph(const std::string& attr, std::vector<Value> inputs);
  /// Throws Error(kLimit) when a loop of `count` iterations would pass the run's
  /// max_loop_iterations (for loops whose trip count is known before they start).
  void check_iterations(int64_t count) const;
  ThreadPool* pool() const { return pool_; }
  /// Whether optimized code paths may be taken (false: a reference session, the oracle).
  bool fast_paths() const { return fast_paths_; }

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    fail_msg(fmt::format(f, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_msg(const std::string& msg) const;

 private:
  const ir::Node& node_;
  const std::vector<const Value*>& inputs_;
  std::vector<Value>* outputs_;
  SubgraphRunner* sub_;
  ThreadPool* pool_;
  runtime::RunContext* run_;
  bool fast_paths_;
  const std::vector<ir::TypeInfo>* out_types_ = nullptr;
};

using KernelFn = void (*)(KernelContext&);

/// What a kernel factory sees when a node is planned: the node, the statically inferred
/// types of its inputs and outputs (possibly symbolic or unknown: null), the inputs whose
/// values are known at planning (initializers, folded constants: weights to prepack), the
/// reference kernel of the node (to fall back on), and the session's pool.
struct KernelInit {
  const ir::Node& node;
  std::vector<const ir::TypeInfo*> input_types;
  std::vector<const ir::TypeInfo*> output_types;
  std::vector<const Tensor*> constants;
  KernelFn reference = nullptr;
  ThreadPool* pool = nullptr;

  /// True when input `i` is given and its value is known at planning.
  bool is_constant(size_t i) const { return i < constants.size() && constants[i] != nullptr; }
  /// The static type of input `i`, or null when omitted / unknown.
  const ir::TypeInfo* input_type(size_t i) const {
    return i < input_types.size() ? input_types[i] : nullptr;
  }
};

/// A node's kernel as an object: created once when the session is planned (attributes
/// parsed, weights prepacked, scratch sized) and run many times. Several runs of one
/// session may call run() at the same moment: it must not change the object (all state
/// is read-only after creation; per-call scratch lives in the call).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) const = 0;
  /// Short name for inspection and benchmarks ("cpu.conv.gemm", "reference").
  virtual std::string_view name() const = 0;
  /// True when run() writes every element of every output it is given, so the executor
  /// need not zero them first.
  virtual bool overwrites_outputs() const { return false; }
  /// True when run() sets its outputs itself (views of its inputs, say), so the executor
  /// must not allocate them.
  virtual bool makes_own_outputs() const { return false; }
  /// An input whose buffer output 0 may take when that input is not used after this node
  /// (same dtype and size): run() must then read each element before writing the same
  /// element of the output. -1: never.
  virtual int inplace_input() const { return -1; }
};

/// Makes the kernel object for one node, or returns null to decline (a case the
/// optimized kernel does not take; the next candidate or the reference is used).
using KernelFactory = std::unique_ptr<Kernel> (*)(const KernelInit&);

/// A reference kernel function as a Kernel object.
class FnKernel final : public Kernel {
 public:
  explicit FnKernel(KernelFn fn) : fn_(fn) {}
  void run(KernelContext& ctx) const override { fn_(ctx); }
  std::string_view name() const override { return "reference"; }

 private:
  KernelFn fn_;
};

}  // namespace onyx::kernels
