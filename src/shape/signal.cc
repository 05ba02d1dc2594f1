// Shape functions of the signal family: DFT, STFT, HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix.
#include "shape/infer.h"

namespace onyx::shape {

namespace {

bool is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool is_int(DType t) {
  return t == DType::kInt32 || t == DType::kInt64;
}

/// A scalar (or 1-element) int32/int64 input's value: true and `v` set when known.
bool scalar_int(const InferContext& ctx, size_t i, const char* what, int64_t& v) {
  if (!is_int(ctx.input_dtype(i)))
    ctx.fail("{} (input {}) must be int32 or int64, got {}", what, i,
             dtype_name(ctx.input_dtype(i)));
  if (ctx.has_shape(i) && ctx.input_rank(i) > 1)
    ctx.fail("{} (input {}) must be a scalar, got shape {}", what, i,
             ir::shape_str(ctx.input_shape(i)));
  std::vector<int64_t> vals;
  if (!ctx.input_ints(i, vals)) return false;
  if (vals.size() != 1) ctx.fail("{} (input {}) must hold one value, got {}", what, i, vals.size());
  v = vals[0];
  return true;
}

/// The output_datatype attribute, checked to be a numeric type.
DType output_datatype(const InferContext& ctx) {
  int64_t code = ctx.attr_i("output_datatype", 1);
  if (code < 1 || code > kMaxDTypeCode || !dtype_valid(static_cast<int32_t>(code)))
    ctx.fail("output_datatype {} is not a valid data type", code);
  DType t = static_cast<DType>(code);
  if (!(is_float(t) || dtype_is_integer(t)) || dtype_bits(t) < 8)
    ctx.fail("output_datatype {} ({}) is not a supported numeric type", code, dtype_name(t));
  return t;
}

// ---- DFT ----

void infer_dft(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float(dt)) ctx.fail("input must be a float tensor, got {}", dtype_name(dt));
  const bool onesided = ctx.attr_i("onesided", 0) != 0;
  const bool inverse = ctx.attr_i("inverse", 0) != 0;
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  if (r < 2)
    ctx.fail("input must have rank >= 2 (signal dims + a last dim of 1 or 2), got {}",
             ir::shape_str(x));
  const ir::Dim& last = x.back();
  if (last.known() && last.value != 1 && last.value != 2)
    ctx.fail("the last dim holds real/imaginary parts and must be 1 or 2, got {}", last.value);
  if (onesided && inverse && last.known() && last.value != 2)
    ctx.fail("an inverse one-sided DFT (IRFFT) needs complex input (last dim 2)");

  bool axis_known = true;
  int64_t axis;
  if (ctx.opset() < 20) {
    axis = ctx.attr_i("axis", 1);
  } else {
    axis = -2;
    if (ctx.has_input(2)) {
      if (ctx.input_dtype(2) != DType::kInt64) ctx.fail("axis (input 2) must be int64");
      axis_known = scalar_int(ctx, 2, "axis", axis);
    }
  }
  ir::Shape out = x;
  out.back() = ir::Dim(onesided && inverse ? 1 : 2);
  if (!axis_known) {
    for (int64_t i = 0; i + 1 < r; ++i) out[i] = ctx.fresh_dim();
    ctx.set_output(0, dt, out);
    return;
  }
  if (axis < -r || axis > r - 2 || axis == -1)
    ctx.fail("axis {} is out of range [{}, -2] U [0, {}] for rank {}", axis, -r, r - 2, r);
  if (axis < 0) axis += r;

  ir::Dim n = x[axis];
  if (ctx.has_input(1)) {
    int64_t len;
    if (scalar_int(ctx, 1, "dft_length", len)) {
      if (len <= 0) ctx.fail("dft_length must be positive, got {}", len);
      n = ir::Dim(len);
    } else {
      n = ctx.fresh_dim();
    }
  } else if (onesided && inverse) {
    if (n.known() && n.value < 2) ctx.fail("IRFFT needs at least 2 input bins along axis {}", axis);
    n = n.known() ? ir::Dim(checked_mul(ctx, 2, n.value - 1, "the IRFFT length 2 * (bins - 1)"))
                  : ctx.fresh_dim();
  }
  if (n.known() && n.value <= 0) ctx.fail("the DFT length along axis {} must be positive", axis);
  if (onesided && !inverse)
    out[axis] = n.known() ? ir::Dim(n.value / 2 + 1) : ctx.fresh_dim();
  else
    out[axis] = n;
  ctx.set_output(0, dt, out);
}

// ---- STFT ----

void infer_stft(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!is_float(dt)) ctx.fail("signal must be a float tensor, got {}", dtype_name(dt));
  const bool onesided = ctx.attr_i("onesided", 1) != 0;
  ir::Dim b = ctx.fresh_dim(), len = ctx.fresh_dim();
  if (ctx.has_shape(0)) {
    const ir::Shape& s = ctx.input_shape(0);
    if (s.size() != 3)
      ctx.fail("signal must be 3-D [batch][length][1 or 2], got {}", ir::shape_str(s));
    if (s[2].known() && s[2].value != 1 && s[2].value != 2)
      ctx.fail("the signal's last dim must be 1 (real) or 2 (complex), got {}", s[2].value);
    if (onesided && s[2].known() && s[2].value == 2)
      ctx.fail("onesided output is not possible for a complex signal; set onesided=0");
    b = s[0];
    len = s[1];
  }
  int64_t step = 0;
  const bool step_known = scalar_int(ctx, 1, "frame_step", step);
  if (step_known && step <= 0) ctx.fail("frame_step must be positive, got {}", step);
  ir::Dim fl = ctx.fresh_dim();
  if (ctx.has_input(2)) {
    if (!is_float(ctx.input_dtype(2))) ctx.fail("window must be a float tensor");
    if (ctx.has_shape(2)) {
      const ir::Shape& w = ctx.input_shape(2);
      if (w.size() != 1) ctx.fail("window must be 1-D, got {}", ir::shape_str(w));
      fl = w[0];
    }
  }
  if (ctx.has_input(3)) {
    int64_t v;
    if (scalar_int(ctx, 3, "frame_length", v)) {
      if (v <= 0) ctx.fail("frame_length must be positive, got {}", v);
      if (fl.known() && fl.value != v)
        ctx.fail("frame_length {} differs from the window length {}", v, fl.value);
      fl = ir::Dim(v);
    }
  } else if (!ctx.has_input(2)) {
    ctx.fail(
        "one of window (input 2) and frame_length (input 3) is needed to know the frame length");
  }
  ir::Dim frames = ctx.fresh_dim();
  if (fl.known() && len.known() && step_known) {
    if (fl.value > len.value)
      ctx.fail("frame length {} exceeds the signal length {}", fl.value, len.value);
    frames = ir::Dim((len.value - fl.value) / step + 1);
  }
  ir::Dim bins = fl.known() ? ir::Dim(onesided ? fl.value / 2 + 1 : fl.value) : ctx.fresh_dim();
  ctx.set_output(0, dt, {b, frames, bins, ir::Dim(2)});
}

// ---- windows ----

void infer_window(InferContext& ctx) {
  DType out = output_datatype(ctx);
  int64_t size;
  if (scalar_int(ctx, 0, "size", size)) {
    if (size < 0) ctx.fail("size must be >= 0, got {}", size);
    ctx.set_output(0, out, {ir::Dim(size)});
  } else {
    ctx.set_output(0, out, {ctx.fresh_dim()});
  }
}

void infer_mel(InferContext& ctx) {
  DType out = output_datatype(ctx);
  int64_t mel = 0, dft = 0, rate = 0;
  bool mel_known = scalar_int(ctx, 0, "num_mel_bins", mel);
  bool dft_known = scalar_int(ctx, 1, "dft_length", dft);
  scalar_int(ctx, 2, "sample_rate", rate);
  for (size_t i = 3; i < 5; ++i)
    if (!is_float(ctx.input_dtype(i)))
      ctx.fail("{} (input {}) must be a float scalar",
               i == 3 ? "lower_edge_hertz" : "upper_edge_hertz", i);
  if (mel_known && mel <= 0) ctx.fail("num_mel_bins must be positive, got {}", mel);
  if (dft_known && dft <= 0) ctx.fail("dft_length must be positive, got {}", dft);
  ctx.set_output(0, out,
                 {dft_known ? ir::Dim(dft / 2 + 1) : ctx.fresh_dim(),
                  mel_known ? ir::Dim(mel) : ctx.fresh_dim()});
}

}  // namespace

void register_signal_shapes(ShapeRegistry& r) {
  r.add("", "DFT", infer_dft);
  r.add("", "STFT", infer_stft);
  r.add("", "HannWindow", infer_window);
  r.add("", "HammingWindow", infer_window);
  r.add("", "BlackmanWindow", infer_window);
  r.add("", "MelWeightMatrix", infer_mel);
}

}  // namespace onyx::shape
