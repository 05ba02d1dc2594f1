// The switch between the optimized kernel paths (src/simd/ GEMM, src/kernels/cpu/) and
// their reference twins. On by default; the twin tests turn it off to run the same
// model through the reference kernels as the oracle.
#pragma once

namespace onyx::kernels::cpu {

/// Whether optimized paths may take the cases they support.
bool fast_paths_enabled();
/// Turns the optimized paths on or off for the whole process (tests only).
void set_fast_paths_enabled(bool on);

}  // namespace onyx::kernels::cpu
