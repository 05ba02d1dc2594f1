// Reference kernels of the attention family: Attention, RotaryEmbedding, LinearAttention,
// CausalConvWithState, and ai.onnx.preview FlexAttention.
//
// Values are computed in double. Where the ONNX function body of an op materializes an
// intermediate tensor in the input type (scaled Q and K, Q*K^T, softcap, softmax ...),
// the value is rounded to that type at the same point, so that float16 / bfloat16 results
// follow the reference to the last unit.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/doubles.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The values of a numeric or bool tensor as doubles.
std::vector<double> load(const Tensor& t) {
  if (t.dtype() != DType::kBool) return load_doubles(t, "attention kernels");
  std::vector<double> v(static_cast<size_t>(t.numel()));
  const uint8_t* p = t.data<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = p[i] ? 1.0 : 0.0;
  return v;
}

/// Writes doubles into a float tensor (v holds at least t.numel() values; every output
/// of this family has the float type of its inputs).
void store(Tensor& t, const std::vector<double>& v) {
  store_doubles(t, v, "attention kernels");
}

/// Rounds a double to the nearest value of a float type (storage rounding).
using RoundFn = double (*)(double);
double round_none(double x) {
  return x;
}
double round_f32(double x) {
  return static_cast<double>(static_cast<float>(x));
}
double round_f16(double x) {
  return static_cast<double>(static_cast<float>(Float16(static_cast<float>(x))));
}
double round_bf16(double x) {
  return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(x))));
}

RoundFn rounder(const KernelContext& ctx, DType t) {
  switch (t) {
    case DType::kDouble:
      return round_none;
    case DType::kFloat:
      return round_f32;
    case DType::kFloat16:
      return round_f16;
    case DType::kBFloat16:
      return round_bf16;
    default:
      ctx.fail("expected a float type, got {}", dtype_name(t));
  }
}

/// Precision named by a softmax_precision attribute, or `def` when absent.
DType softmax_precision(const KernelContext& ctx, DType def) {
  if (!ctx.has_attr("softmax_precision")) return def;
  int64_t code = ctx.attr_i("softmax_precision", 1);
  if (code != static_cast<int64_t>(DType::kFloat) && code != static_cast<int64_t>(DType::kDouble) &&
      code != static_cast<int64_t>(DType::kFloat16) &&
      code != static_cast<int64_t>(DType::kBFloat16))
    ctx.fail("softmax_precision {} is not a float data type (1, 10, 11 or 16)", code);
  return static_cast<DType>(code);
}

/// Softmax of x[0..n) in place; each result rounded by `r`. A row of only -inf gives
/// NaN, as the ONNX Softmax does.
void softmax_row(double* x, int64_t n, RoundFn r) {
  double m = kNegInf;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - m);
    sum += x[j];
  }
  for (int64_t j = 0; j < n; ++j) x[j] = r(x[j] / sum);
}

/// sqrt(scale) as the function bodies compute it: in float, then cast to the input type.
double sqrt_scale(const KernelContext& ctx, int64_t head_size, RoundFn r) {
  float scale = ctx.has_attr("scale") ? ctx.attr_f("scale", 1.0f)
                                      : 1.0f / std::sqrt(static_cast<float>(head_size));
  return r(static_cast<double>(std::sqrt(scale)));
}

/// Reorders packed (B, S, H*D) data into (B, H, S, D).
std::vector<double> split_heads(const std::vector<double>& x, int64_t b, int64_t s, int64_t h,
                                int64_t d) {
  std::vector<double> y(x.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t hi = 0; hi < h; ++hi)
        for (int64_t di = 0; di < d; ++di)
          y[static_cast<size_t>(((bi * h + hi) * s + si) * d + di)] =
              x[static_cast<size_t>(((bi * s + si) * h + hi) * d + di)];
  return y;
}

/// (B, H, P, D) ++ (B, H, S, D) along the sequence axis.
std::vector<double> concat_seq(const std::vector<double>& past, const std::vector<double>& cur,
                               int64_t bh, int64_t p, int64_t s, int64_t d) {
  std::vector<double> y(static_cast<size_t>(bh * (p + s) * d));
  for (int64_t i = 0; i < bh; ++i) {
    std::copy(past.begin() + i * p * d, past.begin() + (i + 1) * p * d,
              y.begin() + i * (p + s) * d);
    std::copy(cur.begin() + i * s * d, cur.begin() + (i + 1) * s * d,
              y.begin() + i * (p + s) * d + p * d);
  }
  return y;
}

void expect_dims(const KernelContext& ctx, const Tensor& t, const Dims& want, const char* what) {
  if (t.dims() != want)
    ctx.fail("{} has shape {}, expected {}", what, dims_str(t.dims()), dims_str(want));
}

// ---- Attention ----

void attention(KernelContext& ctx) {
  const Tensor& qt = ctx.input(0);
  const Tensor& kt = ctx.input(1);
  const Tensor& vt = ctx.input(2);
  const size_t rank = qt.rank();
  if ((rank != 3 && rank != 4) || kt.rank() != rank || vt.rank() != rank)
    ctx.fail("Q, K and V must all be 3-D or all 4-D, got {}, {}, {}", dims_str(qt.dims()),
             dims_str(kt.dims()), dims_str(vt.dims()));
  const bool three_d = rank == 3;
  int64_t b, qh, sq, hd, kvh, skv, vd;
  if (three_d) {
    qh = ctx.attr_i("q_num_heads", 0);
    kvh = ctx.attr_i("kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0) ctx.fail("3-D inputs need positive q_num_heads and kv_num_heads");
    b = qt.dim(0);
    sq = qt.dim(1);
    skv = kt.dim(1);
    if (qt.dim(2) % qh != 0 || kt.dim(2) % kvh != 0 || vt.dim(2) % kvh != 0)
      ctx.fail("hidden sizes {}, {}, {} are not multiples of the head counts {}, {}", qt.dim(2),
               kt.dim(2), vt.dim(2), qh, kvh);
    hd = qt.dim(2) / qh;
    vd = vt.dim(2) / kvh;
    expect_dims(ctx, kt, {b, skv, checked_mul(kvh, hd, "kv_num_heads * the head size")}, "K");
    expect_dims(ctx, vt, {b, skv, checked_mul(kvh, vd, "kv_num_heads * the V head size")}, "V");
  } else {
    b = qt.dim(0);
    qh = qt.dim(1);
    sq = qt.dim(2);
    hd = qt.dim(3);
    kvh = kt.dim(1);
    skv = kt.dim(2);
    vd = vt.dim(3);
    expect_dims(ctx, kt, {b, kvh, skv, hd}, "K");
    expect_dims(ctx, vt, {b, kvh, skv, vd}, "V");
  }
  if (kvh <= 0 || qh % kvh != 0)
    ctx.fail("q_num_heads ({}) must be a multiple of kv_num_heads ({})", qh, kvh);
  const int64_t group = qh / kvh;

  std::vector<double> q = load(qt), k = load(kt), v = load(vt);
  if (three_d) {
    q = split_heads(q, b, sq, qh, hd);
    k = split_heads(k, b, skv, kvh, hd);
    v = split_heads(v, b, skv, kvh, vd);
  }
  int64_t past = 0;
  if (ctx.has_input(4) != ctx.has_input(5))
    ctx.fail("past_key and past_value must be given together");
  if (ctx.has_input(4)) {
    const Tensor& pk = ctx.input(4);
    const Tensor& pv = ctx.input(5);
    if (pk.rank() != 4) ctx.fail("past_key must be 4-D, got {}", dims_str(pk.dims()));
    past = pk.dim(2);
    expect_dims(ctx, pk, {b, kvh, past, hd}, "past_key");
    expect_dims(ctx, pv, {b, kvh, past, vd}, "past_value");
    k = concat_seq(load(pk), k, b * kvh, past, skv, hd);
    v = concat_seq(load(pv), v, b * kvh, past, skv, vd);
  }
  const int64_t total = past + skv;
  if (ctx.has_output(1)) store(ctx.output(1), k);
  if (ctx.has_output(2)) store(ctx.output(2), v);

  const RoundFn r = rounder(ctx, qt.dtype());
  const RoundFn rs = rounder(ctx, softmax_precision(ctx, qt.dtype()));

  // Additive bias from attn_mask, broadcast to (B, Hq, Sq, total). From opset 24 a
  // shorter last axis is padded with -inf up to total; before, it broadcasts (1) or
  // matches.
  std::vector<double> mask;
  int64_t ms[4] = {0, 0, 0, 0}, mlen = 0;
  if (ctx.has_input(3)) {
    const Tensor& mt = ctx.input(3);
    if (mt.rank() > 4) ctx.fail("attn_mask must have rank <= 4, got {}", dims_str(mt.dims()));
    Dims md(4 - mt.rank(), 1);
    md.insert(md.end(), mt.dims().begin(), mt.dims().end());
    const int64_t want[4] = {b, qh, sq, total};
    for (int a = 0; a < 3; ++a)
      if (md[a] != 1 && md[a] != want[a])
        ctx.fail("attn_mask {} cannot be broadcast to (batch {}, heads {}, q_len {}, total_len {})",
                 dims_str(mt.dims()), b, qh, sq, total);
    const bool pads = ctx.opset() >= 24 && mt.rank() > 0;
    if (md[3] > total || (!pads && md[3] != 1 && md[3] != total))
      ctx.fail("attn_mask's last axis ({}) does not fit the total sequence length {}{}", md[3],
               total,
               pads ? "" : " (broadcast needs 1 or equal; padding a shorter mask needs opset 24)");
    const bool bcast_last = md[3] == 1 && !pads;
    mlen = bcast_last ? total : md[3];
    ms[3] = bcast_last ? 0 : 1;
    ms[2] = md[2] == 1 ? 0 : md[3];
    ms[1] = md[1] == 1 ? 0 : md[2] * md[3];
    ms[0] = md[0] == 1 ? 0 : md[1] * md[2] * md[3];
    mask = load(mt);
    if (mt.dtype() == DType::kBool)
      for (double& m : mask) m = m != 0 ? 0.0 : kNegInf;
    else
      for (double& m : mask) m = r(m);
  }
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) {
    nonpad = ctx.input_ints(6);
    if (static_cast<int64_t>(nonpad.size()) != b)
      ctx.fail("nonpad_kv_seqlen has {} values, expected one per batch ({})", nonpad.size(), b);
  }
  const bool causal = ctx.attr_i("is_causal", 0) != 0;
  const bool has_bias = ctx.has_input(3) || causal || !nonpad.empty();
  const float softcap_attr = ctx.attr_f("softcap", 0.0f);
  const double softcap = r(softcap_attr);
  const int64_t mode = ctx.attr_i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0..3, got {}", mode);
  const bool want_qk = ctx.has_output(3);

  const double sf = sqrt_scale(ctx, hd, r);
  for (double& x : q) x = r(x * sf);
  std::vector<double> ks(k);
  for (double& x : ks) x = r(x * sf);

  std::vector<double> y(static_cast<size_t>(b * qh * sq * vd));
  std::vector<double> qk_out(want_qk ? static_cast<size_t>(b * qh * sq * total) : 0);
  std::vector<double> row(static_cast<size_t>(total));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < qh; ++h) {
      const int64_t kh = h / group;
      const double* kbase = ks.data() + (bi * kvh + kh) * total * hd;
      const double* vbase = v.data() + (bi * kvh + kh) * total * vd;
      for (int64_t i = 0; i < sq; ++i) {
        const double* qrow = q.data() + ((bi * qh + h) * sq + i) * hd;
        double* qk_row = want_qk ? qk_out.data() + ((bi * qh + h) * sq + i) * total : nullptr;
        for (int64_t j = 0; j < total; ++j) {
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) s += qrow[d] * kbase[j * hd + d];
          s = r(s);
          if (qk_row && mode == 0) qk_row[j] = s;
          if (softcap_attr != 0.0f) s = r(r(std::tanh(r(s / softcap))) * softcap);
          if (qk_row && mode == 1) qk_row[j] = s;
          if (has_bias) {
            double bias = 0;
            if (!mask.empty())
              bias = j < mlen
                         ? mask[static_cast<size_t>(bi * ms[0] + h * ms[1] + i * ms[2] + j * ms[3])]
                         : kNegInf;
            if (causal && j > i + past) bias += kNegInf;
            if (!nonpad.empty() && j >= nonpad[static_cast<size_t>(bi)]) bias += kNegInf;
            s = r(s + bias);
          }
          if (qk_row && mode == 2) qk_row[j] = s;
          row[static_cast<size_t>(j)] = rs(s);
        }
        softmax_row(row.data(), total, rs);
        for (double& p : row) p = r(p);
        if (qk_row && mode == 3) std::copy(row.begin(), row.end(), qk_row);
        double* yrow = y.data() + ((bi * qh + h) * sq + i) * vd;
        for (int64_t e = 0; e < vd; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j)
            acc += row[static_cast<size_t>(j)] * vbase[j * vd + e];
          yrow[e] = acc;
        }
      }
    }
  if (three_d) {
    // (B, Hq, Sq, Dv) -> (B, Sq, Hq*Dv)
    std::vector<double> packed(y.size());
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < qh; ++h)
        for (int64_t i = 0; i < sq; ++i)
          for (int64_t e = 0; e < vd; ++e)
            packed[static_cast<size_t>(((bi * sq + i) * qh + h) * vd + e)] =
                y[static_cast<size_t>(((bi * qh + h) * sq + i) * vd + e)];
    y.swap(packed);
  }
  store(ctx.output(0), y);
  if (want_qk) store(ctx.output(3), qk_out);
}

// ---- RotaryEmbedding ----

void rotary_embedding(KernelContext& ctx) {
  const Tensor& xt = ctx.input(0);
  int64_t b, s, h, d;
  const bool three_d = xt.rank() == 3;
  if (three_d) {
    h = ctx.attr_i("num_heads", 0);
    if (h <= 0) ctx.fail("a 3-D input needs a positive num_heads attribute");
    b = xt.dim(0);
    s = xt.dim(1);
    if (xt.dim(2) % h != 0)
      ctx.fail("hidden size {} is not a multiple of num_heads {}", xt.dim(2), h);
    d = xt.dim(2) / h;
  } else if (xt.rank() == 4) {
    b = xt.dim(0);
    h = xt.dim(1);
    s = xt.dim(2);
    d = xt.dim(3);
  } else {
    ctx.fail("X must be 3-D or 4-D, got {}", dims_str(xt.dims()));
  }
  int64_t rd = ctx.attr_i("rotary_embedding_dim", 0);
  if (rd == 0) rd = d;
  if (rd < 0 || rd > d || rd % 2 != 0)
    ctx.fail("rotary_embedding_dim {} must be even and at most the head size {}", rd, d);
  const int64_t half = rd / 2;
  const bool interleaved = ctx.attr_i("interleaved", 0) != 0;
  const Tensor& ct = ctx.input(1);
  const Tensor& st = ctx.input(2);
  if (ct.dims() != st.dims())
    ctx.fail("cos_cache {} and sin_cache {} differ in shape", dims_str(ct.dims()),
             dims_str(st.dims()));
  std::vector<int64_t> pos;
  if (ctx.has_input(3)) {
    const Tensor& pt = ctx.input(3);
    expect_dims(ctx, pt, {b, s}, "position_ids");
    if (ct.rank() != 2 || ct.dim(1) != half)
      ctx.fail("with position_ids, cos_cache must have shape (max_position, {}), got {}", half,
               dims_str(ct.dims()));
    pos = ctx.input_ints(3);
    for (int64_t p : pos)
      if (p < 0 || p >= ct.dim(0))
        ctx.fail("position id {} is outside the cache of {} positions", p, ct.dim(0));
  } else {
    expect_dims(ctx, ct, {b, s, half}, "cos_cache (without position_ids)");
  }
  const std::vector<double> x = load(xt), cs = load(ct), sn = load(st);
  const RoundFn r = rounder(ctx, xt.dtype());
  std::vector<double> y(x);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si) {
      const int64_t crow = pos.empty() ? bi * s + si : pos[static_cast<size_t>(bi * s + si)];
      const double* c = cs.data() + crow * half;
      const double* sv = sn.data() + crow * half;
      for (int64_t hi = 0; hi < h; ++hi) {
        const int64_t base = three_d ? ((bi * s + si) * h + hi) * d : ((bi * h + hi) * s + si) * d;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = base + (interleaved ? 2 * k : k);
          const int64_t i2 = base + (interleaved ? 2 * k + 1 : k + half);
          const double x1 = x[static_cast<size_t>(i1)], x2 = x[static_cast<size_t>(i2)];
          y[static_cast<size_t>(i1)] = r(r(c[k] * x1) - r(sv[k] * x2));
          y[static_cast<size_t>(i2)] = r(r(sv[k] * x1) + r(c[k] * x2));
        }
      }
    }
  store(ctx.output(0), y);
}

// ---- LinearAttention ----

void linear_attention(KernelContext& ctx) {
  const Tensor& qt = ctx.input(0);
  const Tensor& kt = ctx.input(1);
  const Tensor& vt = ctx.input(2);
  const int64_t hq = ctx.attr_i("q_num_heads", 0), hkv = ctx.attr_i("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("q_num_heads ({}) must be a positive multiple of kv_num_heads ({})", hq, hkv);
  if (qt.rank() != 3 || kt.rank() != 3 || vt.rank() != 3)
    ctx.fail("query, key and value must be 3-D (B, T, H*D), got {}, {}, {}", dims_str(qt.dims()),
             dims_str(kt.dims()), dims_str(vt.dims()));
  const int64_t b = qt.dim(0), t = qt.dim(1);
  if (qt.dim(2) % hq != 0)
    ctx.fail("query hidden size {} is not a multiple of q_num_heads {}", qt.dim(2), hq);
  if (vt.dim(2) % hkv != 0)
    ctx.fail("value hidden size {} is not a multiple of kv_num_heads {}", vt.dim(2), hkv);
  const int64_t dk = qt.dim(2) / hq, dv = vt.dim(2) / hkv, group = hq / hkv;
  expect_dims(ctx, kt, {b, t, checked_mul(hkv, dk, "kv_num_heads * d_k")}, "key");
  expect_dims(ctx, vt, {b, t, checked_mul(hkv, dv, "kv_num_heads * d_v")}, "value");
  const std::string rule = ctx.attr_s("update_rule", "gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear")
    ctx.fail("update_rule must be one of linear, gated, delta, gated_delta; got '{}'", rule);

  std::vector<double> decay, beta;
  bool decay_per_key = false, beta_per_head = false;
  if (gated) {
    if (!ctx.has_input(4)) ctx.fail("update_rule '{}' needs the decay input", rule);
    const Tensor& g = ctx.input(4);
    if (g.dims() == Dims{b, t, hkv * dk})
      decay_per_key = true;
    else if (g.dims() != Dims{b, t, hkv})
      ctx.fail("decay has shape {}, expected ({}, {}, {}) or ({}, {}, {})", dims_str(g.dims()), b,
               t, hkv * dk, b, t, hkv);
    decay = load(g);
  }
  if (delta) {
    if (!ctx.has_input(5)) ctx.fail("update_rule '{}' needs the beta input", rule);
    const Tensor& bt = ctx.input(5);
    if (bt.dims() == Dims{b, t, hkv})
      beta_per_head = true;
    else if (bt.dims() != Dims{b, t, 1})
      ctx.fail("beta has shape {}, expected ({}, {}, {}) or ({}, {}, 1)", dims_str(bt.dims()), b, t,
               hkv, b, t);
    beta = load(bt);
  }
  std::vector<double> state(
      checked_count({b, hkv, dk, dv}, "the state (batch * kv_num_heads * d_k * d_v)"), 0.0);
  if (ctx.has_input(3)) {
    const Tensor& ps = ctx.input(3);
    expect_dims(ctx, ps, {b, hkv, dk, dv}, "past_state");
    state = load(ps);
  }
  const float scale_attr = ctx.attr_f("scale", 0.0f);
  const double scale = scale_attr != 0.0f
                           ? static_cast<double>(scale_attr)
                           : static_cast<double>(1.0f / std::sqrt(static_cast<float>(dk)));
  const std::vector<double> q = load(qt), k = load(kt), v = load(vt);
  std::vector<double> out(static_cast<size_t>(b * t * hq * dv));
  std::vector<double> diff(static_cast<size_t>(dv));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ti = 0; ti < t; ++ti) {
      const int64_t bt = bi * t + ti;
      for (int64_t h = 0; h < hkv; ++h) {
        double* st = state.data() + (bi * hkv + h) * dk * dv;
        const double* kv = k.data() + (bt * hkv + h) * dk;
        const double* vv = v.data() + (bt * hkv + h) * dv;
        if (gated)
          for (int64_t i = 0; i < dk; ++i) {
            const double g = std::exp(
                decay[static_cast<size_t>(decay_per_key ? (bt * hkv + h) * dk + i : bt * hkv + h)]);
            for (int64_t j = 0; j < dv; ++j) st[i * dv + j] *= g;
          }
        if (delta) {
          const double be = beta[static_cast<size_t>(beta_per_head ? bt * hkv + h : bt)];
          for (int64_t j = 0; j < dv; ++j) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += st[i * dv + j] * kv[i];
            diff[static_cast<size_t>(j)] = be * (vv[j] - retrieved);
          }
        } else {
          std::copy(vv, vv + dv, diff.begin());
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) st[i * dv + j] += kv[i] * diff[static_cast<size_t>(j)];
        for (int64_t g = 0; g < group; ++g) {
          const int64_t qh = h * group + g;
          const double* qv = q.data() + (bt * hq + qh) * dk;
          double* o = out.data() + (bt * hq + qh) * dv;
          for (int64_t j = 0; j < dv; ++j) {
            double acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qv[i] * st[i * dv + j];
            o[j] = scale * acc;
          }
        }
      }
    }
  store(ctx.output(0), out);
  if (ctx.has_output(1)) store(ctx.output(1), state);
}

// ---- CausalConvWithState ----

void causal_conv_with_state(KernelContext& ctx) {
  const Tensor& xt = ctx.input(0);
  const Tensor& wt = ctx.input(1);
  if (xt.rank() != 3)
    ctx.fail("input must be 3-D (batch, channels, length), got {}", dims_str(xt.dims()));
  const int64_t b = xt.dim(0), c = xt.dim(1), len = xt.dim(2);
  if (wt.rank() != 3 || wt.dim(0) != c || wt.dim(1) != 1 || wt.dim(2) < 1)
    ctx.fail("weight has shape {}, expected ({}, 1, k) with k >= 1", dims_str(wt.dims()), c);
  const int64_t kw = wt.dim(2), km1 = kw - 1;
  const std::string act = ctx.attr_s("activation", "none");
  const bool silu = act == "silu" || act == "swish";
  if (!silu && act != "none")
    ctx.fail("activation must be 'none', 'silu' or 'swish', got '{}'", act);
  std::vector<double> bias(static_cast<size_t>(c), 0.0);
  if (ctx.has_input(2)) {
    expect_dims(ctx, ctx.input(2), {c}, "bias");
    bias = load(ctx.input(2));
  }
  std::vector<double> past(checked_count({b, c, km1}, "the state (batch * channels * (k - 1))"),
                           0.0);
  if (ctx.has_input(3)) {
    expect_dims(ctx, ctx.input(3), {b, c, km1}, "past_state");
    past = load(ctx.input(3));
  }
  const std::vector<double> x = load(xt), w = load(wt);
  const RoundFn r = rounder(ctx, xt.dtype());
  const int64_t plen = len + km1;
  std::vector<double> y(x.size()), present(past.size()), padded(static_cast<size_t>(plen));
  for (int64_t bc = 0; bc < b * c; ++bc) {
    const int64_t ch = bc % c;
    std::copy(past.begin() + bc * km1, past.begin() + (bc + 1) * km1, padded.begin());
    std::copy(x.begin() + bc * len, x.begin() + (bc + 1) * len, padded.begin() + km1);
    for (int64_t ti = 0; ti < len; ++ti) {
      double acc = bias[static_cast<size_t>(ch)];
      for (int64_t j = 0; j < kw; ++j)
        acc += w[static_cast<size_t>(ch * kw + j)] * padded[static_cast<size_t>(ti + j)];
      acc = r(acc);
      if (silu) acc = acc / (1.0 + std::exp(-acc));
      y[static_cast<size_t>(bc * len + ti)] = acc;
    }
    std::copy(padded.begin() + len, padded.end(), present.begin() + bc * km1);
  }
  store(ctx.output(0), y);
  if (ctx.has_output(1)) store(ctx.output(1), present);
}

// ---- FlexAttention ----

/// A tensor of float type `dt` holding `v`.
Tensor make_tensor(DType dt, const Dims& dims, const std::vector<double>& v) {
  Tensor t(dt, dims);
  store(t, v);
  return t;
}

/// Runs modifier subgraph `attr` on x (shape dims, type dt) and reads back its output.
void run_modifier(KernelContext& ctx, const char* attr, DType dt, const Dims& dims,
                  std::vector<double>& x) {
  std::vector<Value> outs = ctx.run_subgraph(attr, {Value(make_tensor(dt, dims, x))});
  if (outs.size() != 1 || !outs[0].is_tensor())
    ctx.fail("subgraph '{}' must produce exactly one tensor", attr);
  const Tensor& o = outs[0].tensor();
  if (o.dims() != dims || o.dtype() != dt)
    ctx.fail("subgraph '{}' returned {} {}, expected {} {} (same as its input)", attr,
             dtype_name(o.dtype()), dims_str(o.dims()), dtype_name(dt), dims_str(dims));
  x = load(o);
}

void flex_attention(KernelContext& ctx) {
  const Tensor& qt = ctx.input(0);
  const Tensor& kt = ctx.input(1);
  const Tensor& vt = ctx.input(2);
  if (qt.rank() != 4 || kt.rank() != 4 || vt.rank() != 4)
    ctx.fail("Q, K and V must be 4-D, got {}, {}, {}", dims_str(qt.dims()), dims_str(kt.dims()),
             dims_str(vt.dims()));
  const int64_t b = qt.dim(0), hq = qt.dim(1), l = qt.dim(2), e = qt.dim(3);
  const int64_t hkv = kt.dim(1), s = kt.dim(2), ev = vt.dim(3);
  expect_dims(ctx, kt, {b, hkv, s, e}, "K");
  expect_dims(ctx, vt, {b, hkv, s, ev}, "V");
  if (hkv <= 0 || hq % hkv != 0)
    ctx.fail("Q heads ({}) must be a multiple of K/V heads ({})", hq, hkv);
  const int64_t group = hq / hkv;
  const DType sp =
      softmax_precision(ctx, qt.dtype() == DType::kDouble ? DType::kDouble : DType::kFloat);
  const RoundFn r = rounder(ctx, qt.dtype());
  const RoundFn rs = rounder(ctx, sp);

  std::vector<double> q = load(qt), k = load(kt), v = load(vt);
  const double sf = sqrt_scale(ctx, e, r);
  for (double& x : q) x = r(x * sf);
  for (double& x : k) x = r(x * sf);
  for (double& x : v) x = rs(x);
  const Dims sdims{b, hq, l, s};
  std::vector<double> scores(
      checked_count({b, hq, l, s}, "the attention scores (batch * heads * q_len * kv_len)"));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const double* kbase = k.data() + (bi * hkv + h / group) * s * e;
      for (int64_t i = 0; i < l; ++i) {
        const double* qrow = q.data() + ((bi * hq + h) * l + i) * e;
        double* out = scores.data() + ((bi * hq + h) * l + i) * s;
        for (int64_t j = 0; j < s; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < e; ++d) acc += qrow[d] * kbase[j * e + d];
          out[j] = rs(r(acc));
        }
      }
    }
  if (ctx.node().attr_g("score_mod")) run_modifier(ctx, "score_mod", sp, sdims, scores);
  for (int64_t row = 0; row < b * hq * l; ++row) softmax_row(scores.data() + row * s, s, rs);
  if (ctx.node().attr_g("prob_mod")) run_modifier(ctx, "prob_mod", sp, sdims, scores);
  std::vector<double> y(static_cast<size_t>(b * hq * l * ev));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const double* vbase = v.data() + (bi * hkv + h / group) * s * ev;
      for (int64_t i = 0; i < l; ++i) {
        const double* p = scores.data() + ((bi * hq + h) * l + i) * s;
        double* yrow = y.data() + ((bi * hq + h) * l + i) * ev;
        for (int64_t d = 0; d < ev; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j) acc += p[j] * vbase[j * ev + d];
          yrow[d] = rs(acc);
        }
      }
    }
  store(ctx.output(0), y);
}

}  // namespace

void register_attention(Registry& r) {
  r.add("", "Attention", 23, 1000, float_types(), attention);
  r.add("", "RotaryEmbedding", 23, 1000, float_types(), rotary_embedding);
  r.add("", "LinearAttention", 27, 1000, float_types(), linear_attention);
  r.add("", "CausalConvWithState", 27, 1000, float_types(), causal_conv_with_state);
  r.add("ai.onnx.preview", "FlexAttention", 1, 1000, float_types(), flex_attention);
}

}  // namespace onyx::kernels
