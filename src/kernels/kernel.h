// What a kernel sees when it runs: its node, inputs, preallocated outputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

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
  KernelContext(const ir::Node& node, std::vector<const Value*> inputs, std::vector<Value>* outputs,
                SubgraphRunner* sub, ThreadPool* pool, runtime::RunContext* run = nullptr)
      : node_(node), inputs_(std::move(inputs)), outputs_(outputs), sub_(sub), pool_(pool), run_(run) {}

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

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    fail_msg(fmt::format(f, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_msg(const std::string& msg) const;

 private:
  const ir::Node& node_;
  std::vector<const Value*> inputs_;
  std::vector<Value>* outputs_;
  SubgraphRunner* sub_;
  ThreadPool* pool_;
  runtime::RunContext* run_;
};

using KernelFn = void (*)(KernelContext&);

}  // namespace onyx::kernels
