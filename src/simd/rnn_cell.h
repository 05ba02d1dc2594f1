// Fused gate arithmetic of the recurrent cells (RNN, GRU, LSTM) for one batch row and one
// time step: bias add, clip, activations and the state update in one vectorized pass
// over the gate buffers. Natively the widest SIMD target the CPU has; SIMD128 in the
// WebAssembly build. The matrix products come from the GEMM (sgemm_panels, small_gemm).
//
// Every function reads and writes whole vectors: it may read up to cell_lanes() - 1
// floats past the end of each array it is given (gate rows included), and writes that
// far past the end of the state arrays (h, c, z, rh), so callers pad their buffers.
#pragma once
#include <cstdint>

namespace onyx::simd {

/// The activation functions of the ONNX recurrent ops.
enum class RnnAct : uint8_t {
  kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh,
  kHardSigmoid, kElu, kSoftsign, kSoftplus
};

/// One activation with its parameters (as the ONNX op defines them).
struct RnnActivation {
  RnnAct kind = RnnAct::kSigmoid;
  float alpha = 0, beta = 0;
};

/// Floats every cell function may read or write past the end of an array.
int64_t cell_lanes();

/// What the cells share: the hidden size, the clip threshold (<= 0: none) and the
/// activations f, g, h of the op (h is LSTM's only).
struct CellParams {
  int64_t hidden = 0;
  float clip = 0;
  RnnActivation f, g, h;
};

/// RNN: h = f(clip(x + r + bias)); x, r, bias [H] (bias may be null).
void rnn_cell(const CellParams& p, const float* x, const float* r, const float* bias, float* h);

/// LSTM in the ONNX gate order i, o, f, c: x and r [4H] (input and recurrent
/// projections), bias [4H] (Wb + Rb, or null), peephole [3H] (i, o, f; or null).
/// Updates c and h in place:
/// i = f(clip(xi + ri + bi + pi c)), f = input_forget ? 1 - i : f(clip(xf + rf + bf + pf c)),
/// c' = f c + i g(clip(xc + rc + bc)), o = f(clip(xo + ro + bo + po c')), h = o h(clip(c')).
void lstm_cell(const CellParams& p, bool input_forget, const float* x, const float* r,
               const float* bias, const float* peephole, float* c, float* h);

/// GRU with linear_before_reset, gate order z, r, h: x and r [3H], bias [3H] (Wb + Rb for
/// z and r, Wbh for h; or null), rbh [H] (Rbh, or null). h updated in place:
/// z = f(clip(xz + rz + bz)), r = f(clip(xr + rr + br)), n = g(clip(xh + bh + r (rh + rbh))),
/// h = (1 - z) n + z h.
void gru_cell_lbr(const CellParams& p, const float* x, const float* r, const float* bias,
                  const float* rbh, float* h);

/// GRU without linear_before_reset, first half: from x [3H], r [2H] (the z and r parts of
/// h R^T) and bias [3H] (or null), writes z [H] and rh = r (.) h [H].
void gru_cell_gates(const CellParams& p, const float* x, const float* r, const float* bias,
                    const float* h, float* z, float* rh);

/// Second half: n = g(clip(xh + bh + rn)) with rn = (r (.) h) Rh^T [H], then
/// h = (1 - z) n + z h in place. x and bias as for gru_cell_gates.
void gru_cell_update(const CellParams& p, const float* x, const float* rn, const float* bias,
                     const float* z, float* h);

}  // namespace onyx::simd
