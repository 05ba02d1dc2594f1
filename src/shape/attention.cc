// Shape functions of the attention family: Attention, RotaryEmbedding, LinearAttention,
// CausalConvWithState, and ai.onnx.preview FlexAttention.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

bool is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

void require_float(const InferContext& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && !is_float(ctx.input_dtype(i)))
    ctx.fail("{} (input {}) must be a float tensor, got {}", what, i,
             dtype_name(ctx.input_dtype(i)));
}

ir::Dim dim_add(InferContext& ctx, const ir::Dim& a, const ir::Dim& b) {
  if (a.known() && b.known())
    return ir::Dim(checked_add(ctx, a.value, b.value, "the total sequence length"));
  if (a.known() && a.value == 0) return b;
  if (b.known() && b.value == 0) return a;
  return ctx.fresh_dim();
}

ir::Dim dim_mul(InferContext& ctx, const ir::Dim& a, int64_t k) {
  if (a.known()) return ir::Dim(checked_mul(ctx, a.value, k, "a head size times the head count"));
  if (k == 1) return a;
  return ctx.fresh_dim();
}

/// a / k, failing when a known `a` is not a multiple of k.
ir::Dim dim_div(InferContext& ctx, const ir::Dim& a, int64_t k, const char* what) {
  if (!a.known()) return k == 1 ? a : ctx.fresh_dim();
  if (a.value % k != 0) ctx.fail("{} ({}) is not a multiple of {}", what, a.value, k);
  return ir::Dim(a.value / k);
}

/// Fails when two known dims differ.
void same_dim(const InferContext& ctx, const ir::Dim& a, const ir::Dim& b, const char* what) {
  if (a.known() && b.known() && a.value != b.value)
    ctx.fail("{} do not match: {} vs {}", what, a.value, b.value);
}

/// A known dim if either one is known (they were checked equal), else `a`.
ir::Dim merge(const ir::Dim& a, const ir::Dim& b) {
  return a.known() ? a : b;
}

void require_rank(const InferContext& ctx, size_t i, size_t rank, const char* what) {
  if (ctx.has_shape(i) && ctx.input_rank(i) != rank)
    ctx.fail("{} (input {}) must be {}-D, got shape {}", what, i, rank,
             ir::shape_str(ctx.input_shape(i)));
}

// ---- Attention ----

void infer_attention(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_float(ctx, i, i == 0 ? "Q" : i == 1 ? "K" : "V");
  require_float(ctx, 4, "past_key");
  require_float(ctx, 5, "past_value");
  if (ctx.has_input(4) != ctx.has_input(5))
    ctx.fail("past_key and past_value must be given together");
  if (ctx.has_input(6) && ctx.input_dtype(6) != DType::kInt64)
    ctx.fail("nonpad_kv_seqlen (input 6) must be int64, got {}", dtype_name(ctx.input_dtype(6)));
  if (ctx.has_input(3)) {
    DType m = ctx.input_dtype(3);
    if (m == DType::kString || m == DType::kUndefined || dtype_size(m) > 8)
      ctx.fail("attn_mask (input 3) must be bool or numeric, got {}", dtype_name(m));
    if (ctx.has_shape(3) && ctx.input_rank(3) > 4)
      ctx.fail("attn_mask must have rank <= 4, got shape {}", ir::shape_str(ctx.input_shape(3)));
  }
  const int64_t mode = ctx.attr_i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0..3, got {}", mode);
  const DType qt = ctx.input_dtype(0), vt = ctx.input_dtype(2);

  if (!ctx.has_shape(0) || !ctx.has_shape(1) || !ctx.has_shape(2)) {
    ctx.set_output_unranked(0, qt);
    for (size_t o = 1; o < 4; ++o)
      ctx.set_output(o, o == 2 ? vt : qt,
                     {ctx.fresh_dim(), ctx.fresh_dim(), ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const ir::Shape& q = ctx.input_shape(0);
  const ir::Shape& k = ctx.input_shape(1);
  const ir::Shape& v = ctx.input_shape(2);
  if ((q.size() != 3 && q.size() != 4) || k.size() != q.size() || v.size() != q.size())
    ctx.fail("Q, K and V must all be 3-D or all 4-D, got {}, {}, {}", ir::shape_str(q),
             ir::shape_str(k), ir::shape_str(v));
  const bool three_d = q.size() == 3;
  ir::Dim b, qh, sq, hd, kvh, skv, vd;
  if (three_d) {
    const int64_t nq = ctx.attr_i("q_num_heads", 0), nkv = ctx.attr_i("kv_num_heads", 0);
    if (nq <= 0 || nkv <= 0)
      ctx.fail("3-D Q, K, V need positive q_num_heads and kv_num_heads attributes, got {} and {}",
               nq, nkv);
    b = q[0];
    sq = q[1];
    qh = ir::Dim(nq);
    kvh = ir::Dim(nkv);
    hd = dim_div(ctx, q[2], nq, "Q hidden size");
    ir::Dim khd = dim_div(ctx, k[2], nkv, "K hidden size");
    same_dim(ctx, hd, khd, "head sizes of Q and K");
    hd = merge(hd, khd);
    vd = dim_div(ctx, v[2], nkv, "V hidden size");
    same_dim(ctx, k[1], v[1], "sequence lengths of K and V");
    skv = merge(k[1], v[1]);
    same_dim(ctx, q[0], k[0], "batch sizes of Q and K");
    same_dim(ctx, q[0], v[0], "batch sizes of Q and V");
  } else {
    b = q[0];
    qh = q[1];
    sq = q[2];
    hd = q[3];
    kvh = k[1];
    skv = k[2];
    vd = v[3];
    same_dim(ctx, q[3], k[3], "head sizes of Q and K");
    same_dim(ctx, k[1], v[1], "head counts of K and V");
    same_dim(ctx, k[2], v[2], "sequence lengths of K and V");
    same_dim(ctx, q[0], k[0], "batch sizes of Q and K");
    same_dim(ctx, q[0], v[0], "batch sizes of Q and V");
    kvh = merge(k[1], v[1]);
    skv = merge(k[2], v[2]);
  }
  if (qh.known() && kvh.known() && (kvh.value == 0 || qh.value % kvh.value != 0))
    ctx.fail("q_num_heads ({}) must be a multiple of kv_num_heads ({})", qh.value, kvh.value);

  ir::Dim total = skv;
  if (ctx.has_input(4)) {
    require_rank(ctx, 4, 4, "past_key");
    require_rank(ctx, 5, 4, "past_value");
    ir::Dim past = ctx.fresh_dim();
    if (ctx.has_shape(4) && ctx.has_shape(5)) {
      const ir::Shape& pk = ctx.input_shape(4);
      const ir::Shape& pv = ctx.input_shape(5);
      same_dim(ctx, pk[0], b, "batch sizes of past_key and Q");
      same_dim(ctx, pk[1], kvh, "head counts of past_key and K");
      same_dim(ctx, pk[3], hd, "head sizes of past_key and K");
      same_dim(ctx, pv[1], kvh, "head counts of past_value and V");
      same_dim(ctx, pv[3], vd, "head sizes of past_value and V");
      same_dim(ctx, pk[2], pv[2], "sequence lengths of past_key and past_value");
      past = merge(pk[2], pv[2]);
    }
    total = dim_add(ctx, past, skv);
  }
  if (ctx.has_input(6)) require_rank(ctx, 6, 1, "nonpad_kv_seqlen");

  if (three_d) {
    ir::Dim hidden =
        vd.known() ? ir::Dim(checked_mul(ctx, qh.value, vd.value, "q_num_heads * the V head size"))
                   : ctx.fresh_dim();
    ctx.set_output(0, qt, {b, sq, hidden});
  } else {
    ctx.set_output(0, qt, {b, qh, sq, vd});
  }
  if (ctx.has_output(1)) ctx.set_output(1, qt, {b, kvh, total, hd});
  if (ctx.has_output(2)) ctx.set_output(2, vt, {b, kvh, total, vd});
  if (ctx.has_output(3)) ctx.set_output(3, qt, {b, qh, sq, total});
}

// ---- RotaryEmbedding ----

void infer_rotary(InferContext& ctx) {
  require_float(ctx, 0, "X");
  require_float(ctx, 1, "cos_cache");
  require_float(ctx, 2, "sin_cache");
  if (ctx.has_input(3) && ctx.input_dtype(3) != DType::kInt64)
    ctx.fail("position_ids (input 3) must be int64, got {}", dtype_name(ctx.input_dtype(3)));
  if (ctx.attr_i("rotary_embedding_dim", 0) < 0) ctx.fail("rotary_embedding_dim must be >= 0");
  if (ctx.has_shape(0)) {
    size_t r = ctx.input_rank(0);
    if (r != 3 && r != 4)
      ctx.fail("X must be 3-D or 4-D, got shape {}", ir::shape_str(ctx.input_shape(0)));
    if (r == 3 && ctx.attr_i("num_heads", 0) <= 0)
      ctx.fail("a 3-D X needs a positive num_heads attribute");
  }
  const size_t cache_rank = ctx.has_input(3) ? 2 : 3;
  require_rank(ctx, 1, cache_rank, "cos_cache");
  require_rank(ctx, 2, cache_rank, "sin_cache");
  if (ctx.has_input(3)) require_rank(ctx, 3, 2, "position_ids");
  propagate(ctx, 0, 0);
}

// ---- LinearAttention ----

void infer_linear_attention(InferContext& ctx) {
  for (size_t i = 0; i < 6; ++i)
    require_float(ctx, i,
                  i == 0   ? "query"
                  : i == 1 ? "key"
                  : i == 2 ? "value"
                  : i == 3 ? "past_state"
                  : i == 4 ? "decay"
                           : "beta");
  const int64_t hq = ctx.attr_i("q_num_heads", 0), hkv = ctx.attr_i("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0)
    ctx.fail("q_num_heads and kv_num_heads must be positive, got {} and {}", hq, hkv);
  if (hq % hkv != 0) ctx.fail("q_num_heads ({}) must be a multiple of kv_num_heads ({})", hq, hkv);
  const std::string rule = ctx.attr_s("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("update_rule must be one of linear, gated, delta, gated_delta; got '{}'", rule);
  if ((rule == "gated" || rule == "gated_delta") && !ctx.has_input(4))
    ctx.fail("update_rule '{}' needs the decay input (input 4)", rule);
  if ((rule == "delta" || rule == "gated_delta") && !ctx.has_input(5))
    ctx.fail("update_rule '{}' needs the beta input (input 5)", rule);
  for (size_t i : {0, 1, 2, 4, 5})
    require_rank(ctx, i, 3,
                 i == 0   ? "query"
                 : i == 1 ? "key"
                 : i == 2 ? "value"
                 : i == 4 ? "decay"
                          : "beta");
  require_rank(ctx, 3, 4, "past_state");
  const DType qt = ctx.input_dtype(0);
  const DType st = ctx.has_input(3) ? ctx.input_dtype(3) : qt;
  if (!ctx.has_shape(0) || !ctx.has_shape(2)) {
    ctx.set_output(0, qt, {ctx.fresh_dim(), ctx.fresh_dim(), ctx.fresh_dim()});
    ctx.set_output(1, st, {ctx.fresh_dim(), ir::Dim(hkv), ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const ir::Shape& q = ctx.input_shape(0);
  const ir::Shape& v = ctx.input_shape(2);
  ir::Dim dk = dim_div(ctx, q[2], hq, "query hidden size");
  ir::Dim dv = dim_div(ctx, v[2], hkv, "value hidden size");
  same_dim(ctx, q[0], v[0], "batch sizes of query and value");
  same_dim(ctx, q[1], v[1], "sequence lengths of query and value");
  if (ctx.has_shape(1)) {
    const ir::Shape& k = ctx.input_shape(1);
    same_dim(
        ctx, k[2],
        dk.known() ? ir::Dim(checked_mul(ctx, dk.value, hkv, "kv_num_heads * d_k")) : ir::Dim(),
        "key hidden size and kv_num_heads * d_k");
    same_dim(ctx, q[0], k[0], "batch sizes of query and key");
    same_dim(ctx, q[1], k[1], "sequence lengths of query and key");
  }
  if (ctx.has_shape(3)) {
    const ir::Shape& p = ctx.input_shape(3);
    same_dim(ctx, p[0], q[0], "batch sizes of past_state and query");
    same_dim(ctx, p[1], ir::Dim(hkv), "past_state heads and kv_num_heads");
    same_dim(ctx, p[2], dk, "past_state d_k and query head size");
    same_dim(ctx, p[3], dv, "past_state d_v and value head size");
  }
  ctx.set_output(0, qt, {q[0], q[1], dim_mul(ctx, dv, hq)});
  if (ctx.has_output(1)) ctx.set_output(1, st, {q[0], ir::Dim(hkv), dk, dv});
}

// ---- CausalConvWithState ----

void infer_causal_conv(InferContext& ctx) {
  for (size_t i = 0; i < 4; ++i)
    require_float(ctx, i, i == 0 ? "input" : i == 1 ? "weight" : i == 2 ? "bias" : "past_state");
  const std::string act = ctx.attr_s("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    ctx.fail("activation must be 'none', 'silu' or 'swish', got '{}'", act);
  require_rank(ctx, 0, 3, "input");
  require_rank(ctx, 1, 3, "weight");
  require_rank(ctx, 2, 1, "bias");
  require_rank(ctx, 3, 3, "past_state");
  const DType dt = ctx.input_dtype(0);
  propagate(ctx, 0, 0);
  ir::Dim b = ctx.fresh_dim(), c = ctx.fresh_dim(), km1 = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    b = ctx.input_shape(0)[0];
    c = ctx.input_shape(0)[1];
  }
  if (ctx.has_shape(1)) {
    const ir::Shape& w = ctx.input_shape(1);
    same_dim(ctx, w[0], c, "weight channels and input channels");
    if (w[1].known() && w[1].value != 1)
      ctx.fail("weight must have shape (channels, 1, k), got {}", ir::shape_str(w));
    if (w[2].known()) {
      if (w[2].value < 1) ctx.fail("kernel size must be >= 1, got {}", w[2].value);
      km1 = ir::Dim(w[2].value - 1);
    }
    c = merge(c, w[0]);
  }
  if (ctx.has_shape(2)) same_dim(ctx, ctx.input_shape(2)[0], c, "bias length and channels");
  if (ctx.has_shape(3)) {
    const ir::Shape& p = ctx.input_shape(3);
    same_dim(ctx, p[0], b, "past_state batch and input batch");
    same_dim(ctx, p[1], c, "past_state channels and input channels");
    same_dim(ctx, p[2], km1, "past_state length and kernel size - 1");
    km1 = merge(km1, p[2]);
  }
  if (ctx.has_output(1)) ctx.set_output(1, dt, {b, c, km1});
}

// ---- FlexAttention ----

void infer_flex_attention(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_float(ctx, i, i == 0 ? "Q" : i == 1 ? "K" : "V");
  for (size_t i = 0; i < 3; ++i) require_rank(ctx, i, 4, i == 0 ? "Q" : i == 1 ? "K" : "V");
  const DType qt = ctx.input_dtype(0);
  if (!ctx.has_shape(0) || !ctx.has_shape(2)) {
    ctx.set_output(0, qt, {ctx.fresh_dim(), ctx.fresh_dim(), ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const ir::Shape& q = ctx.input_shape(0);
  const ir::Shape& v = ctx.input_shape(2);
  if (ctx.has_shape(1)) {
    const ir::Shape& k = ctx.input_shape(1);
    same_dim(ctx, q[3], k[3], "head sizes of Q and K");
    same_dim(ctx, k[1], v[1], "head counts of K and V");
    same_dim(ctx, k[2], v[2], "sequence lengths of K and V");
    same_dim(ctx, q[0], k[0], "batch sizes of Q and K");
  }
  same_dim(ctx, q[0], v[0], "batch sizes of Q and V");
  if (q[1].known() && v[1].known() && (v[1].value == 0 || q[1].value % v[1].value != 0))
    ctx.fail("Q heads ({}) must be a multiple of K/V heads ({})", q[1].value, v[1].value);
  ctx.set_output(0, qt, {q[0], q[1], q[2], v[3]});
}

}  // namespace

void register_attention_shapes(ShapeRegistry& r) {
  r.add("", "Attention", infer_attention);
  r.add("", "RotaryEmbedding", infer_rotary);
  r.add("", "LinearAttention", infer_linear_attention);
  r.add("", "CausalConvWithState", infer_causal_conv);
  r.add("ai.onnx.preview", "FlexAttention", infer_flex_attention);
}

}  // namespace onyx::shape
