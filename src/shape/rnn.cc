// Shape functions of the rnn family: RNN, GRU, LSTM.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

bool is_float_dtype(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

// Fails when `d` is known and differs from `want` (when that is known too).
void expect_dim(const InferContext& ctx, const ir::Dim& d, const ir::Dim& want,
                const char* what) {
  if (d.known() && want.known() && d.value != want.value)
    ctx.fail("{} is {}, expected {}", what, d.value, want.value);
}

ir::Dim dim_mul(const InferContext& ctx, const ir::Dim& d, int64_t k) {
  return d.known() ? ir::Dim(checked_mul(ctx, d.value, k, "hidden_size times the gate count"))
                   : ir::Dim();
}

// Shared by RNN (gates = 1), GRU (3) and LSTM (4).
void infer_recurrent(InferContext& ctx, int64_t gates, bool lstm) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float_dtype(dt))
    ctx.fail("X must be float, double, float16 or bfloat16, got {}", dtype_name(dt));
  for (size_t i : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(6), size_t(7)}) {
    if (i >= 6 && !lstm) break;
    if (ctx.has_input(i) && ctx.input_dtype(i) != dt)
      ctx.fail("input {} has dtype {}, expected {} like X", i, dtype_name(ctx.input_dtype(i)),
               dtype_name(dt));
  }

  std::string dir = ctx.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.fail("direction must be forward, reverse or bidirectional, got '{}'", dir);
  const int64_t nd = dir == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attr_i("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, got {}", layout);
  if (ctx.has_attr("activations")) {
    size_t per_dir = lstm ? 3 : (gates == 3 ? 2 : 1);
    size_t n = ctx.node().attr_strings("activations").size();
    if (n != per_dir && n != per_dir * static_cast<size_t>(nd))
      ctx.fail("activations has {} entries, expected {} ({} per direction)", n,
               per_dir * static_cast<size_t>(nd), per_dir);
  }

  ir::Dim seq, batch, input, hidden;
  if (ctx.has_shape(0)) {
    const ir::Shape& x = ctx.input_shape(0);
    if (x.size() != 3)
      ctx.fail("X must have rank 3 ({}), got rank {}",
               layout == 0 ? "[seq_length, batch_size, input_size]"
                           : "[batch_size, seq_length, input_size]",
               x.size());
    seq = layout == 0 ? x[0] : x[1];
    batch = layout == 0 ? x[1] : x[0];
    input = x[2];
  }
  if (ctx.has_attr("hidden_size")) {
    int64_t h = ctx.attr_i("hidden_size", 0);
    if (h <= 0) ctx.fail("hidden_size must be positive, got {}", h);
    hidden = ir::Dim(h);
  }
  if (ctx.has_shape(2)) {
    const ir::Shape& r = ctx.input_shape(2);
    if (r.size() != 3)
      ctx.fail("R must have rank 3 [num_directions, {}*hidden_size, hidden_size], got rank {}",
               gates, r.size());
    if (!hidden.known()) hidden = r[2];
    expect_dim(ctx, r[0], ir::Dim(nd), "R dim 0 (num_directions)");
    expect_dim(ctx, r[1], dim_mul(ctx, hidden, gates), "R dim 1 (gates*hidden_size)");
    expect_dim(ctx, r[2], hidden, "R dim 2 (hidden_size)");
  }
  if (ctx.has_shape(1)) {
    const ir::Shape& w = ctx.input_shape(1);
    if (w.size() != 3)
      ctx.fail("W must have rank 3 [num_directions, {}*hidden_size, input_size], got rank {}",
               gates, w.size());
    if (!hidden.known() && w[1].known()) {
      if (w[1].value % gates != 0)
        ctx.fail("W dim 1 is {}, not a multiple of {} gates", w[1].value, gates);
      hidden = ir::Dim(w[1].value / gates);
    }
    expect_dim(ctx, w[0], ir::Dim(nd), "W dim 0 (num_directions)");
    expect_dim(ctx, w[1], dim_mul(ctx, hidden, gates), "W dim 1 (gates*hidden_size)");
    expect_dim(ctx, w[2], input, "W dim 2 (input_size of X)");
  }
  if (ctx.has_shape(3)) {
    const ir::Shape& b = ctx.input_shape(3);
    if (b.size() != 2)
      ctx.fail("B must have rank 2 [num_directions, {}*hidden_size], got rank {}", 2 * gates,
               b.size());
    expect_dim(ctx, b[0], ir::Dim(nd), "B dim 0 (num_directions)");
    expect_dim(ctx, b[1], dim_mul(ctx, hidden, 2 * gates), "B dim 1 (2*gates*hidden_size)");
  }
  if (ctx.has_shape(4)) {
    const ir::Shape& s = ctx.input_shape(4);
    if (s.size() != 1) ctx.fail("sequence_lens must have rank 1 [batch_size], got rank {}", s.size());
    expect_dim(ctx, s[0], batch, "sequence_lens length (batch_size)");
  }
  for (size_t i = 5; i <= (lstm ? 6u : 5u); ++i) {
    if (!ctx.has_shape(i)) continue;
    const ir::Shape& s = ctx.input_shape(i);
    const char* name = i == 5 ? "initial_h" : "initial_c";
    if (s.size() != 3) ctx.fail("{} must have rank 3, got rank {}", name, s.size());
    expect_dim(ctx, layout == 0 ? s[0] : s[1], ir::Dim(nd), "initial state num_directions");
    expect_dim(ctx, layout == 0 ? s[1] : s[0], batch, "initial state batch_size");
    expect_dim(ctx, s[2], hidden, "initial state hidden_size");
  }
  if (lstm && ctx.has_shape(7)) {
    const ir::Shape& p = ctx.input_shape(7);
    if (p.size() != 2)
      ctx.fail("P must have rank 2 [num_directions, 3*hidden_size], got rank {}", p.size());
    expect_dim(ctx, p[0], ir::Dim(nd), "P dim 0 (num_directions)");
    expect_dim(ctx, p[1], dim_mul(ctx, hidden, 3), "P dim 1 (3*hidden_size)");
  }

  if (layout == 0) {
    ctx.set_output(0, dt, {seq, ir::Dim(nd), batch, hidden});
    ctx.set_output(1, dt, {ir::Dim(nd), batch, hidden});
    if (lstm) ctx.set_output(2, dt, {ir::Dim(nd), batch, hidden});
  } else {
    ctx.set_output(0, dt, {batch, seq, ir::Dim(nd), hidden});
    ctx.set_output(1, dt, {batch, ir::Dim(nd), hidden});
    if (lstm) ctx.set_output(2, dt, {batch, ir::Dim(nd), hidden});
  }
}

void infer_rnn(InferContext& ctx) { infer_recurrent(ctx, 1, false); }
void infer_gru(InferContext& ctx) { infer_recurrent(ctx, 3, false); }
void infer_lstm(InferContext& ctx) { infer_recurrent(ctx, 4, true); }

}  // namespace

void register_rnn_shapes(ShapeRegistry& r) {
  r.add("", "RNN", infer_rnn);
  r.add("", "GRU", infer_gru);
  r.add("", "LSTM", infer_lstm);
}

}  // namespace onyx::shape
