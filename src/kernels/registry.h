// The kernel registry: (domain, op type, opset range, dtypes) -> kernel function.
// Families register explicitly (register_<family>), no static initializers.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace onyx::kernels {

/// One kernel: runs `op` of `domain` for models importing that domain at a version
/// in [since, until], when the dtype of input `type_input` is in `dtypes` (empty:
/// any dtype; type_input < 0: the dtype is not constrained by an input).
/// `wasm` false: the WebAssembly build leaves the kernel out (`wasm_reason` says why);
/// Registry::add drops such kernels when built with Emscripten, and `onyx check
/// --provider wasm` reports the nodes that need them.
/// Two kinds of kernels share the table: reference kernels (`fn`, the spec-complete
/// oracle every node falls back on) and optimized ones (`factory` set, `optimized`
/// true), which make a Kernel object per node at planning and may decline a node.
struct KernelDef {
  std::string domain;
  std::string op;
  int since = 1;
  int until = 1000;
  std::vector<DType> dtypes;
  int type_input = 0;
  KernelFn fn = nullptr;
  std::string provider = "cpu";
  bool wasm = true;
  std::string wasm_reason;
  KernelFactory factory = nullptr;
  bool optimized = false;
  int priority = 0;  ///< optimized candidates are tried highest first
};

class Registry {
 public:
  void add(KernelDef def);
  /// Convenience: same op over an opset range with a dtype list.
  void add(std::string_view domain, std::string_view op, int since, int until,
           std::vector<DType> dtypes, KernelFn fn, int type_input = 0);
  /// Convenience: an optimized kernel (a factory) for an op over an opset range.
  void add_optimized(std::string_view domain, std::string_view op, int since, int until,
                     std::vector<DType> dtypes, KernelFactory factory, int priority = 0,
                     int type_input = 0);
  /// The reference kernel for a node, or nullptr. `dtype` is the dtype of its type_input
  /// (or kUndefined when unknown / not applicable).
  const KernelDef* find(std::string_view domain, std::string_view op, int opset, DType dtype) const;
  /// The optimized kernels that may take a node, highest priority first.
  std::vector<const KernelDef*> find_optimized(std::string_view domain, std::string_view op, int opset,
                                               DType dtype) const;
  /// True when some kernel exists for (domain, op) at any opset/dtype.
  bool knows(std::string_view domain, std::string_view op) const;
  const std::vector<KernelDef>& all() const { return defs_; }

 private:
  std::vector<KernelDef> defs_;
};

/// The registry with every reference family registered (built once).
const Registry& default_registry();

/// Lists of dtypes that kernels commonly accept.
std::vector<DType> float_types();    ///< float, double, float16, bfloat16
std::vector<DType> numeric_types();  ///< float_types + all 8..64-bit integers
std::vector<DType> all_types();      ///< every dtype incl. bool and string

// One registration function per reference family (src/kernels/reference/<family>.cc).
void register_elementwise(Registry& r);
void register_logic(Registry& r);
void register_cast(Registry& r);
void register_matmul(Registry& r);
void register_conv(Registry& r);
void register_pool(Registry& r);
void register_norm(Registry& r);
void register_reduce(Registry& r);
void register_tensor(Registry& r);
void register_gather(Registry& r);
void register_resize(Registry& r);
void register_rnn(Registry& r);
void register_control(Registry& r);
void register_sequence(Registry& r);
void register_quant(Registry& r);
void register_misc(Registry& r);
void register_attention(Registry& r);
void register_signal(Registry& r);
void register_string(Registry& r);
void register_random(Registry& r);
void register_ml(Registry& r);
/// The ai.onyx fused ops the graph optimizer makes (src/kernels/reference/fused.cc).
void register_fused(Registry& r);

// The optimized kernels (src/kernels/cpu/).
void register_cpu(Registry& r);

}  // namespace onyx::kernels
