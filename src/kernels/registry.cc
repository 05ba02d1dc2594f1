#include "kernels/registry.h"

#include <algorithm>

namespace onyx::kernels {

void Registry::add(KernelDef def) {
#ifdef __EMSCRIPTEN__
  if (!def.wasm) return;
#endif
  defs_.push_back(std::move(def));
}

void Registry::add(std::string_view domain, std::string_view op, int since, int until,
                   std::vector<DType> dtypes, KernelFn fn, int type_input) {
  KernelDef d;
  d.domain = std::string(domain);
  d.op = std::string(op);
  d.since = since;
  d.until = until;
  d.dtypes = std::move(dtypes);
  d.type_input = type_input;
  d.fn = fn;
  add(std::move(d));
}

void Registry::add_optimized(std::string_view domain, std::string_view op, int since, int until,
                             std::vector<DType> dtypes, KernelFactory factory, int priority,
                             int type_input) {
  KernelDef d;
  d.domain = std::string(domain);
  d.op = std::string(op);
  d.since = since;
  d.until = until;
  d.dtypes = std::move(dtypes);
  d.type_input = type_input;
  d.factory = factory;
  d.optimized = true;
  d.priority = priority;
  add(std::move(d));
}

namespace {
bool matches(const KernelDef& d, std::string_view domain, std::string_view op, int opset, DType dtype) {
  if (d.op != op || d.domain != domain || opset < d.since || opset > d.until) return false;
  return d.dtypes.empty() || dtype == DType::kUndefined || d.type_input < 0 ||
         std::find(d.dtypes.begin(), d.dtypes.end(), dtype) != d.dtypes.end();
}
}  // namespace

const KernelDef* Registry::find(std::string_view domain, std::string_view op, int opset,
                                DType dtype) const {
  for (const KernelDef& d : defs_)
    if (!d.optimized && matches(d, domain, op, opset, dtype)) return &d;
  return nullptr;
}

std::vector<const KernelDef*> Registry::find_optimized(std::string_view domain, std::string_view op,
                                                       int opset, DType dtype) const {
  std::vector<const KernelDef*> out;
  if (dtype == DType::kUndefined) return out;
  for (const KernelDef& d : defs_)
    if (d.optimized && matches(d, domain, op, opset, dtype)) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelDef* a, const KernelDef* b) { return a->priority > b->priority; });
  return out;
}

bool Registry::knows(std::string_view domain, std::string_view op) const {
  for (const KernelDef& d : defs_)
    if (!d.optimized && d.op == op && d.domain == domain) return true;
  return false;
}

std::vector<DType> float_types() {
  return {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16};
}

std::vector<DType> numeric_types() {
  auto v = float_types();
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUint8,
                  DType::kUint16, DType::kUint32, DType::kUint64})
    v.push_back(t);
  return v;
}

std::vector<DType> all_types() {
  std::vector<DType> v;
  for (int32_t c = 1; c <= kMaxDTypeCode; ++c) v.push_back(static_cast<DType>(c));
  return v;
}

const Registry& default_registry() {
  static const Registry reg = [] {
    Registry r;
    register_elementwise(r);
    register_logic(r);
    register_cast(r);
    register_matmul(r);
    register_conv(r);
    register_pool(r);
    register_norm(r);
    register_reduce(r);
    register_tensor(r);
    register_gather(r);
    register_resize(r);
    register_rnn(r);
    register_control(r);
    register_sequence(r);
    register_quant(r);
    register_misc(r);
    register_attention(r);
    register_signal(r);
    register_string(r);
    register_random(r);
    register_ml(r);
    register_fused(r);
    register_cpu(r);
    return r;
  }();
  return reg;
}

}  // namespace onyx::kernels
