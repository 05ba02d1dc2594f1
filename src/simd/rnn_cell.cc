// Recurrent cell gate passes (see rnn_cell.h), compiled once per SIMD target through
// Highway's foreach_target.h; Highway's contrib/math supplies Exp, Expm1, Log1p and Tanh.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/rnn_cell.cc"
#if defined(__EMSCRIPTEN__) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "simd/rnn_cell.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = decltype(hn::Zero(DF()));

/// 1 / (1 + exp(-x)); the exponent is capped where Exp stays valid (the result is then
/// below 1e-38, as the limit 0 should be).
HWY_INLINE VF sigmoid(DF d, VF x) {
  const VF one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(x), hn::Set(d, 88.0f)))));
}

HWY_INLINE VF activate(DF d, const RnnActivation& a, VF x) {
  const VF zero = hn::Zero(d);
  switch (a.kind) {
    case RnnAct::kRelu:
      return hn::Max(x, zero);
    case RnnAct::kTanh:
      return hn::Tanh(d, x);
    case RnnAct::kSigmoid:
      return sigmoid(d, x);
    case RnnAct::kAffine:
      return hn::MulAdd(hn::Set(d, a.alpha), x, hn::Set(d, a.beta));
    case RnnAct::kLeakyRelu:
      return hn::IfThenElse(hn::Ge(x, zero), x, hn::Mul(hn::Set(d, a.alpha), x));
    case RnnAct::kThresholdedRelu:
      return hn::IfThenElseZero(hn::Gt(x, hn::Set(d, a.alpha)), x);
    case RnnAct::kScaledTanh:
      return hn::Mul(hn::Set(d, a.alpha), hn::Tanh(d, hn::Mul(hn::Set(d, a.beta), x)));
    case RnnAct::kHardSigmoid:
      return hn::Min(hn::Set(d, 1.0f),
                     hn::Max(zero, hn::MulAdd(hn::Set(d, a.alpha), x, hn::Set(d, a.beta))));
    case RnnAct::kElu: {
      const VF neg = hn::Mul(hn::Set(d, a.alpha), hn::Expm1(d, hn::Max(x, hn::Set(d, -88.0f))));
      return hn::IfThenElse(hn::Ge(x, zero), x, neg);
    }
    case RnnAct::kSoftsign:
      return hn::Div(x, hn::Add(hn::Set(d, 1.0f), hn::Abs(x)));
    case RnnAct::kSoftplus: {
      const VF big = hn::Set(d, 30.0f);
      const VF small = hn::Log1p(d, hn::Exp(d, hn::Min(x, big)));
      return hn::IfThenElse(hn::Gt(x, big), x, small);
    }
  }
  return x;
}

HWY_INLINE VF clip(DF d, float c, VF x) {
  if (!(c > 0)) return x;
  return hn::Min(hn::Max(x, hn::Set(d, -c)), hn::Set(d, c));
}

/// x[j] + r[j] (+ bias[j]).
HWY_INLINE VF pre(DF d, const float* x, const float* r, const float* bias, int64_t j) {
  VF v = hn::Add(hn::LoadU(d, x + j), hn::LoadU(d, r + j));
  return bias ? hn::Add(v, hn::LoadU(d, bias + j)) : v;
}

void RnnCell(const CellParams& p, const float* x, const float* r, const float* bias, float* h) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = 0; j < p.hidden; j += L)
    hn::StoreU(activate(d, p.f, clip(d, p.clip, pre(d, x, r, bias, j))), d, h + j);
}

/// activate, out of line (LstmCell's path for activations other than the defaults).
HWY_NOINLINE VF activate_call(DF d, const RnnActivation& a, VF x) {
  return activate(d, a, x);
}

/// ONNX's default LSTM activations: f = Sigmoid, g = h = Tanh, inline.
struct LstmDefaultActs {
  HWY_INLINE VF f(DF d, VF x) const { return sigmoid(d, x); }
  HWY_INLINE VF g(DF d, VF x) const { return hn::Tanh(d, x); }
  HWY_INLINE VF h(DF d, VF x) const { return hn::Tanh(d, x); }
};

/// Any activations: a call each (activate's every kind inlined at the cell's five uses
/// made LstmCell 19 KB of wasm, which V8 optimized during the reader's first run).
struct LstmAnyActs {
  const CellParams& p;
  HWY_INLINE VF f(DF d, VF x) const { return activate_call(d, p.f, x); }
  HWY_INLINE VF g(DF d, VF x) const { return activate_call(d, p.g, x); }
  HWY_INLINE VF h(DF d, VF x) const { return activate_call(d, p.h, x); }
};

template <class Acts>
HWY_NOINLINE void LstmCellImpl(const CellParams& p, const Acts& act, bool input_forget,
                               const float* x, const float* r, const float* bias,
                               const float* peep, float* c, float* h) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), H = p.hidden;
  const VF one = hn::Set(d, 1.0f);
  for (int64_t j = 0; j < H; j += L) {
    const VF cv = hn::LoadU(d, c + j);
    VF pi = pre(d, x, r, bias, j), po = pre(d, x, r, bias, H + j);
    VF pf = pre(d, x, r, bias, 2 * H + j);
    const VF pc = pre(d, x, r, bias, 3 * H + j);
    if (peep) {
      pi = hn::MulAdd(hn::LoadU(d, peep + j), cv, pi);
      pf = hn::MulAdd(hn::LoadU(d, peep + 2 * H + j), cv, pf);
    }
    const VF i = act.f(d, clip(d, p.clip, pi));
    const VF f = input_forget ? hn::Sub(one, i) : act.f(d, clip(d, p.clip, pf));
    const VF cn = hn::MulAdd(f, cv, hn::Mul(i, act.g(d, clip(d, p.clip, pc))));
    if (peep) po = hn::MulAdd(hn::LoadU(d, peep + H + j), cn, po);
    const VF o = act.f(d, clip(d, p.clip, po));
    hn::StoreU(cn, d, c + j);
    hn::StoreU(hn::Mul(o, act.h(d, clip(d, p.clip, cn))), d, h + j);
  }
}

/// One time step of an LSTM (see rnn_cell.h); the default activations through their own
/// function, so a JIT (WebAssembly) compiles only the variant a model runs.
void LstmCell(const CellParams& p, bool input_forget, const float* x, const float* r,
              const float* bias, const float* peep, float* c, float* h) {
  if (p.f.kind == RnnAct::kSigmoid && p.g.kind == RnnAct::kTanh && p.h.kind == RnnAct::kTanh)
    LstmCellImpl(p, LstmDefaultActs{}, input_forget, x, r, bias, peep, c, h);
  else
    LstmCellImpl(p, LstmAnyActs{p}, input_forget, x, r, bias, peep, c, h);
}

void GruCellLbr(const CellParams& p, const float* x, const float* r, const float* bias,
                const float* rbh, float* h) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), H = p.hidden;
  for (int64_t j = 0; j < H; j += L) {
    const VF z = activate(d, p.f, clip(d, p.clip, pre(d, x, r, bias, j)));
    const VF rg = activate(d, p.f, clip(d, p.clip, pre(d, x, r, bias, H + j)));
    VF rn = hn::LoadU(d, r + 2 * H + j);
    if (rbh) rn = hn::Add(rn, hn::LoadU(d, rbh + j));
    VF xh = hn::LoadU(d, x + 2 * H + j);
    if (bias) xh = hn::Add(xh, hn::LoadU(d, bias + 2 * H + j));
    const VF n = activate(d, p.g, clip(d, p.clip, hn::MulAdd(rg, rn, xh)));
    const VF hv = hn::LoadU(d, h + j);
    hn::StoreU(hn::MulAdd(z, hn::Sub(hv, n), n), d, h + j);
  }
}

void GruCellGates(const CellParams& p, const float* x, const float* r, const float* bias,
                  const float* h, float* z, float* rh) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), H = p.hidden;
  for (int64_t j = 0; j < H; j += L) {
    hn::StoreU(activate(d, p.f, clip(d, p.clip, pre(d, x, r, bias, j))), d, z + j);
    const VF rg = activate(d, p.f, clip(d, p.clip, pre(d, x, r, bias, H + j)));
    hn::StoreU(hn::Mul(rg, hn::LoadU(d, h + j)), d, rh + j);
  }
}

void GruCellUpdate(const CellParams& p, const float* x, const float* rn, const float* bias,
                   const float* z, float* h) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), H = p.hidden;
  const float* bh = bias ? bias + 2 * H : nullptr;
  for (int64_t j = 0; j < H; j += L) {
    const VF n = activate(d, p.g, clip(d, p.clip, pre(d, x + 2 * H, rn, bh, j)));
    const VF hv = hn::LoadU(d, h + j);
    hn::StoreU(hn::MulAdd(hn::LoadU(d, z + j), hn::Sub(hv, n), n), d, h + j);
  }
}

int64_t CellLanes() {
  return static_cast<int64_t>(hn::Lanes(DF()));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::simd {

HWY_EXPORT(RnnCell);
HWY_EXPORT(LstmCell);
HWY_EXPORT(GruCellLbr);
HWY_EXPORT(GruCellGates);
HWY_EXPORT(GruCellUpdate);
HWY_EXPORT(CellLanes);

int64_t cell_lanes() {
  return HWY_DYNAMIC_DISPATCH(CellLanes)();
}

void rnn_cell(const CellParams& p, const float* x, const float* r, const float* bias, float* h) {
  HWY_DYNAMIC_DISPATCH(RnnCell)(p, x, r, bias, h);
}

void lstm_cell(const CellParams& p, bool input_forget, const float* x, const float* r,
               const float* bias, const float* peephole, float* c, float* h) {
  HWY_DYNAMIC_DISPATCH(LstmCell)(p, input_forget, x, r, bias, peephole, c, h);
}

void gru_cell_lbr(const CellParams& p, const float* x, const float* r, const float* bias,
                  const float* rbh, float* h) {
  HWY_DYNAMIC_DISPATCH(GruCellLbr)(p, x, r, bias, rbh, h);
}

void gru_cell_gates(const CellParams& p, const float* x, const float* r, const float* bias,
                    const float* h, float* z, float* rh) {
  HWY_DYNAMIC_DISPATCH(GruCellGates)(p, x, r, bias, h, z, rh);
}

void gru_cell_update(const CellParams& p, const float* x, const float* rn, const float* bias,
                     const float* z, float* h) {
  HWY_DYNAMIC_DISPATCH(GruCellUpdate)(p, x, rn, bias, z, h);
}

}  // namespace onyx::simd
#endif  // HWY_ONCE
