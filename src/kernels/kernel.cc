#include "kernels/kernel.h"

#include "runtime/run_context.h"

namespace onyx::kernels {

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) fail("input {} is required but not given", i);
  if (!inputs_[i]->is_tensor()) fail("input {} must be a tensor", i);
  return inputs_[i]->tensor();
}

std::vector<int64_t> KernelContext::input_ints(size_t i) const {
  const Tensor& t = input(i);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64)
    out.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  else if (t.dtype() == DType::kInt32)
    for (int64_t k = 0; k < t.numel(); ++k) out.push_back(t.data<int32_t>()[k]);
  else
    fail("input {} must be int32 or int64, got {}", i, dtype_name(t.dtype()));
  return out;
}

Tensor& KernelContext::output(size_t i) {
  if (i >= outputs_->size()) fail("output {} does not exist", i);
  Value& v = (*outputs_)[i];
  if (!v.is_tensor()) fail("output {} was not allocated (shape not known before running)", i);
  return v.tensor();
}

Tensor KernelContext::new_tensor(DType dt, const Dims& dims, size_t for_output) const {
  if (run_) return run_->allocate(node_, for_output, dt, dims);
  static runtime::RunContext defaults(SessionOptions{}, nullptr);
  return defaults.allocate(node_, for_output, dt, dims);
}

Tensor& KernelContext::alloc_output(size_t i, DType dt, Dims dims) {
  if (i >= outputs_->size()) fail("output {} does not exist", i);
  (*outputs_)[i] = Value(new_tensor(dt, dims, i));
  return (*outputs_)[i].tensor();
}

void KernelContext::set_output(size_t i, Value v) {
  if (i >= outputs_->size()) fail("output {} does not exist", i);
  (*outputs_)[i] = std::move(v);
}

std::vector<Value> KernelContext::run_subgraph(const std::string& attr, std::vector<Value> inputs) {
  if (!sub_) fail("cannot run subgraph '{}' here", attr);
  return sub_->run(attr, std::move(inputs));
}

void KernelContext::check_iterations(int64_t count) const {
  if (run_) run_->check_iterations(node_, count);
}

void KernelContext::fail_msg(const std::string& msg) const {
  throw Error(ErrorCode::kRuntime, fmt::format("{}: {}", node_.describe(), msg));
}

}  // namespace onyx::kernels
