// Shape functions of the conv family: Conv, ConvTranspose, ConvInteger, QLinearConv,
// DeformConv, Col2Im, CausalConvWithState.
#include <algorithm>

#include "shape/infer.h"

namespace onyx::shape {

namespace {

/// Spatial attributes shared by the convolution ops, with defaults filled in.
struct Geometry {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad;
};

/// Reads kernel_shape/strides/dilations/pads/auto_pad for `nsp` spatial axes.
/// `kernel_from` holds the kernel extents taken from W (unknown ones as -1).
Geometry read_geometry(const InferContext& ctx, size_t nsp, const std::vector<int64_t>& kernel_from) {
  Geometry g;
  g.kernel = ctx.attr_ints("kernel_shape", kernel_from);
  if (g.kernel.size() != nsp)
    ctx.fail("kernel_shape has {} values, expected {} (one per spatial axis)", g.kernel.size(), nsp);
  for (size_t i = 0; i < nsp; ++i) {
    if (g.kernel[i] == 0 || g.kernel[i] < -1) ctx.fail("kernel_shape[{}] = {} must be positive", i, g.kernel[i]);
    if (g.kernel[i] > 0 && kernel_from[i] >= 0 && g.kernel[i] != kernel_from[i])
      ctx.fail("kernel_shape[{}] = {} does not match the weight's spatial extent {}", i, g.kernel[i],
               kernel_from[i]);
  }
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  g.pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  g.auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  if (g.strides.size() != nsp) ctx.fail("strides has {} values, expected {}", g.strides.size(), nsp);
  if (g.dilations.size() != nsp)
    ctx.fail("dilations has {} values, expected {}", g.dilations.size(), nsp);
  if (g.pads.size() != 2 * nsp) ctx.fail("pads has {} values, expected {}", g.pads.size(), 2 * nsp);
  for (size_t i = 0; i < nsp; ++i) {
    if (g.strides[i] < 1) ctx.fail("strides[{}] = {} must be >= 1", i, g.strides[i]);
    if (g.dilations[i] < 1) ctx.fail("dilations[{}] = {} must be >= 1", i, g.dilations[i]);
  }
  for (int64_t p : g.pads)
    if (p < 0) ctx.fail("pads must be >= 0, got {}", p);
  if (g.auto_pad != "NOTSET" && g.auto_pad != "VALID" && g.auto_pad != "SAME_UPPER" &&
      g.auto_pad != "SAME_LOWER")
    ctx.fail("auto_pad '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", g.auto_pad);
  return g;
}

/// Output extent of a convolution along spatial axis `i` (input extent `in` known).
/// The extent a kernel of `k` taps with dilation `d` covers: (k - 1) * d + 1, checked.
int64_t dilated_extent(const InferContext& ctx, int64_t k, int64_t d) {
  return checked_add(ctx, checked_mul(ctx, k - 1, d, "(kernel_shape - 1) * dilations"), 1,
                     "the dilated kernel extent");
}

int64_t conv_out(const InferContext& ctx, const Geometry& g, size_t i, int64_t in) {
  int64_t ek = dilated_extent(ctx, g.kernel[i], g.dilations[i]);
  int64_t s = g.strides[i];
  int64_t out;
  if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
    out = in / s + (in % s != 0);
  } else if (g.auto_pad == "VALID") {
    if (in < ek) ctx.fail("spatial axis {}: input extent {} is smaller than the dilated kernel {}", i, in, ek);
    out = (in - ek) / s + 1;
  } else {
    int64_t padded = checked_add(ctx, checked_add(ctx, in, g.pads[i], "a padded spatial extent"),
                                 g.pads[i + g.kernel.size()], "a padded spatial extent");
    if (padded < ek)
      ctx.fail("spatial axis {}: padded input extent {} is smaller than the dilated kernel {}", i, padded, ek);
    out = (padded - ek) / s + 1;
  }
  return out;
}

/// Spatial extents of W (axes 2..) as int64 (-1 when unknown).
std::vector<int64_t> weight_kernel(const ir::Shape& w) {
  std::vector<int64_t> k;
  for (size_t i = 2; i < w.size(); ++i) k.push_back(w[i].known() ? w[i].value : -1);
  return k;
}

/// Shared by Conv, ConvInteger, QLinearConv and DeformConv: X is [N, C, D...] and
/// W is [M, C/group, k...]; the output is [N, M, O...] of dtype `out_dt`.
void conv_like(InferContext& ctx, size_t x_in, size_t w_in, DType out_dt) {
  if (!ctx.has_shape(x_in)) {
    ctx.set_output_unranked(0, out_dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(x_in);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got rank {}", x.size());
  size_t nsp = x.size() - 2;
  ir::Shape w;
  if (ctx.has_shape(w_in)) {
    w = ctx.input_shape(w_in);
    if (w.size() != x.size()) ctx.fail("W has rank {} but X has rank {}; they must match", w.size(), x.size());
  } else {
    w.assign(x.size(), ir::Dim());
  }
  int64_t group = ctx.attr_i("group", 1);
  if (group < 1) ctx.fail("group = {} must be >= 1", group);
  if (x[1].known() && x[1].value % group != 0)
    ctx.fail("input channels {} are not divisible by group {}", x[1].value, group);
  if (x[1].known() && w[1].known() &&
      x[1].value != checked_mul(ctx, w[1].value, group, "W[1] * group"))
    ctx.fail("X has {} channels but W expects {} (W[1] = {} times group {})", x[1].value,
             w[1].value * group, w[1].value, group);
  if (w[0].known() && w[0].value % group != 0)
    ctx.fail("output channels {} (W[0]) are not divisible by group {}", w[0].value, group);
  Geometry g = read_geometry(ctx, nsp, weight_kernel(w));
  ir::Shape out{x[0], w[0]};
  for (size_t i = 0; i < nsp; ++i) {
    if (x[i + 2].known() && g.kernel[i] > 0)
      out.push_back(conv_out(ctx, g, i, x[i + 2].value));
    else
      out.push_back(ctx.fresh_dim());
  }
  ctx.set_output(0, out_dt, std::move(out));
}

void infer_conv(InferContext& ctx) {
  if (ctx.has_shape(2) && ctx.has_shape(1)) {
    const ir::Shape& b = ctx.input_shape(2);
    const ir::Shape& w = ctx.input_shape(1);
    if (b.size() != 1) ctx.fail("bias B must be 1-D, got rank {}", b.size());
    if (!w.empty() && b[0].known() && w[0].known() && b[0].value != w[0].value)
      ctx.fail("bias B has {} values but there are {} output channels", b[0].value, w[0].value);
  }
  conv_like(ctx, 0, 1, ctx.input_dtype(0));
}

void infer_conv_integer(InferContext& ctx) { conv_like(ctx, 0, 1, DType::kInt32); }

void infer_qlinear_conv(InferContext& ctx) {
  DType out = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
  conv_like(ctx, 0, 3, out);
}

void infer_deform_conv(InferContext& ctx) { conv_like(ctx, 0, 1, ctx.input_dtype(0)); }

void infer_conv_transpose(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got rank {}", x.size());
  size_t nsp = x.size() - 2;
  ir::Shape w;
  if (ctx.has_shape(1)) {
    w = ctx.input_shape(1);
    if (w.size() != x.size()) ctx.fail("W has rank {} but X has rank {}; they must match", w.size(), x.size());
  } else {
    w.assign(x.size(), ir::Dim());
  }
  int64_t group = ctx.attr_i("group", 1);
  if (group < 1) ctx.fail("group = {} must be >= 1", group);
  if (x[1].known() && w[0].known() && x[1].value != w[0].value)
    ctx.fail("X has {} channels but W[0] is {}; ConvTranspose weights are [C, M/group, k...]",
             x[1].value, w[0].value);
  if (x[1].known() && x[1].value % group != 0)
    ctx.fail("input channels {} are not divisible by group {}", x[1].value, group);
  Geometry g = read_geometry(ctx, nsp, weight_kernel(w));
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(nsp, 0));
  if (out_pad.size() != nsp) ctx.fail("output_padding has {} values, expected {}", out_pad.size(), nsp);
  for (size_t i = 0; i < nsp; ++i)
    if (out_pad[i] < 0) ctx.fail("output_padding[{}] = {} must be >= 0", i, out_pad[i]);
  const int64_t out_channels =
      w[1].known() ? checked_mul(ctx, w[1].value, group, "W[1] * group (the output channels)") : -1;
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  // output_shape may include the N and C axes in older exporters; keep the spatial tail.
  if (out_shape.size() == nsp + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != nsp)
    ctx.fail("output_shape has {} values, expected {} (spatial axes only)", out_shape.size(), nsp);
  if (ctx.has_shape(2)) {
    const ir::Shape& b = ctx.input_shape(2);
    if (b.size() != 1) ctx.fail("bias B must be 1-D, got rank {}", b.size());
    if (b[0].known() && w[1].known() && b[0].value != out_channels)
      ctx.fail("bias B has {} values but there are {} output channels", b[0].value, out_channels);
  }
  ir::Shape out{x[0], w[1].known() ? ir::Dim(out_channels) : ctx.fresh_dim()};
  for (size_t i = 0; i < nsp; ++i) {
    if (!out_shape.empty()) {
      if (out_shape[i] < 0) ctx.fail("output_shape[{}] = {} must be >= 0", i, out_shape[i]);
      out.push_back(out_shape[i]);
      continue;
    }
    if (!x[i + 2].known() || g.kernel[i] <= 0) {
      out.push_back(ctx.fresh_dim());
      continue;
    }
    int64_t in = x[i + 2].value;
    int64_t o;
    const char* what =
        "the output extent (strides * (input - 1) + output_padding + dilated kernel - pads)";
    if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
      o = checked_mul(ctx, in, g.strides[i], "the output extent (input * strides)");
    } else {
      int64_t ek = dilated_extent(ctx, g.kernel[i], g.dilations[i]);
      o = checked_mul(ctx, g.strides[i], in - 1, what);
      o = checked_add(ctx, checked_add(ctx, o, out_pad[i], what), ek, what);
      if (g.auto_pad == "NOTSET")
        o = checked_sub(ctx, o, checked_add(ctx, g.pads[i], g.pads[i + nsp], "pads"), what);
    }
    if (o < 0) ctx.fail("spatial axis {}: output extent {} is negative (check pads)", i, o);
    out.push_back(o);
  }
  ctx.set_output(0, dt, std::move(out));
}

void infer_col2im(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::vector<int64_t> image, block;
  bool have_image = ctx.input_ints(1, image);
  bool have_block = ctx.input_ints(2, block);
  if (have_image && have_block && image.size() != block.size())
    ctx.fail("image_shape has {} values but block_shape has {}; they must match", image.size(),
             block.size());
  size_t nsp = have_image ? image.size() : have_block ? block.size() : 0;
  if (nsp == 0 && ctx.has_shape(1) && ctx.input_shape(1).size() == 1 &&
      ctx.input_shape(1)[0].known()) {
    // The output rank is 2 + the length of image_shape: bounded before building it.
    check_rank(ctx, checked_add(ctx, ctx.input_shape(1)[0].value, 2, "the output rank"),
               "the output (rank 2 + the length of input 'image_shape')");
    nsp = static_cast<size_t>(ctx.input_shape(1)[0].value);
  }
  check_rank(ctx, static_cast<int64_t>(nsp) + 2,
             "the output (rank 2 + the length of input 'image_shape')");
  if (!ctx.has_shape(0) || nsp == 0) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() != 3) ctx.fail("input must be 3-D [N, C*prod(block_shape), L], got rank {}", x.size());
  ir::Shape out{x[0]};
  if (have_block && x[1].known()) {
    int64_t prod = 1;
    for (int64_t b : block) {
      if (b < 1) ctx.fail("block_shape values must be >= 1, got {}", b);
      prod = checked_mul(ctx, prod, b, "prod(block_shape)");
    }
    if (x[1].value % prod != 0)
      ctx.fail("input axis 1 ({}) is not divisible by prod(block_shape) = {}", x[1].value, prod);
    out.push_back(x[1].value / prod);
  } else {
    out.push_back(ctx.fresh_dim());
  }
  for (size_t i = 0; i < nsp; ++i) {
    if (have_image) {
      if (image[i] < 1) ctx.fail("image_shape values must be >= 1, got {}", image[i]);
      out.push_back(image[i]);
    } else {
      out.push_back(ctx.fresh_dim());
    }
  }
  if (have_image && have_block && x[2].known()) {
    Geometry g = read_geometry(ctx, nsp, block);
    int64_t blocks = 1;
    for (size_t i = 0; i < nsp; ++i) {
      int64_t ek = dilated_extent(ctx, block[i], g.dilations[i]);
      int64_t padded =
          checked_add(ctx, checked_add(ctx, image[i], g.pads[i], "a padded image extent"),
                      g.pads[i + nsp], "a padded image extent");
      if (padded < ek)
        ctx.fail("spatial axis {}: padded image extent {} is smaller than the dilated block {}", i,
                 padded, ek);
      blocks = checked_mul(ctx, blocks, (padded - ek) / g.strides[i] + 1, "the number of blocks");
    }
    if (blocks != x[2].value)
      ctx.fail("input has L = {} blocks but image_shape, block_shape, pads, strides and dilations give {}",
               x[2].value, blocks);
  }
  ctx.set_output(0, dt, std::move(out));
}

/// CausalConvWithState: output has the input's shape [B, C, L]; present_state is
/// [B, C, k - 1] with k from the depthwise weight [C, 1, k].
void infer_causal_conv(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::string act = ctx.attr_s("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    ctx.fail("activation '{}' is not one of none, silu, swish", act);
  ir::Dim k1 = ctx.fresh_dim();
  if (ctx.has_shape(1)) {
    const ir::Shape& w = ctx.input_shape(1);
    if (w.size() != 3) ctx.fail("weight must be 3-D [channels, 1, k], got rank {}", w.size());
    if (w[1].known() && w[1].value != 1) ctx.fail("weight must be [channels, 1, k], got W[1] = {}", w[1].value);
    if (w[2].known()) {
      if (w[2].value < 1) ctx.fail("kernel size k must be >= 1, got {}", w[2].value);
      k1 = ir::Dim(w[2].value - 1);
    }
  }
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    ctx.set_output_unranked(1, dt);
    return;
  }
  const ir::Shape& x = ctx.input_shape(0);
  if (x.size() != 3) ctx.fail("input must be 3-D [batch, channels, length], got rank {}", x.size());
  if (ctx.has_shape(1)) {
    const ir::Shape& w = ctx.input_shape(1);
    if (w[0].known() && x[1].known() && w[0].value != x[1].value)
      ctx.fail("weight has {} channels but input has {}", w[0].value, x[1].value);
  }
  ctx.set_output(0, dt, x);
  ctx.set_output(1, dt, {x[0], x[1], k1});
}

}  // namespace

void register_conv_shapes(ShapeRegistry& r) {
  r.add("", "Conv", infer_conv);
  r.add("", "ConvTranspose", infer_conv_transpose);
  r.add("", "ConvInteger", infer_conv_integer);
  r.add("", "QLinearConv", infer_qlinear_conv);
  r.add("", "DeformConv", infer_deform_conv);
  r.add("", "Col2Im", infer_col2im);
  r.add("", "CausalConvWithState", infer_causal_conv);
}

}  // namespace onyx::shape
