// Reference kernels of the conv family: Conv, ConvTranspose, ConvInteger, QLinearConv,
// DeformConv, Col2Im, CausalConvWithState. The optimized float Conv and ConvTranspose are in
// src/kernels/cpu/conv*.cc; these direct loops are their oracle and serve every other dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/window.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// Reads strides/dilations/kernel_shape and checks their lengths; pads are resolved by
/// the caller because Conv and ConvTranspose resolve auto_pad differently.
WindowGeom read_geom(const KernelContext& ctx, const Dims& x, const Dims& wk, const Dims& y) {
  WindowGeom g;
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got {}", dims_str(x));
  g.nsp = x.size() - 2;
  if (y.size() != x.size()) ctx.fail("output rank {} does not match X rank {}", y.size(), x.size());
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(y.begin() + 2, y.end());
  g.kernel = ctx.attr_ints("kernel_shape", wk);
  if (g.kernel != wk)
    ctx.fail("kernel_shape {} does not match the weight's spatial extents {}", dims_str(g.kernel), dims_str(wk));
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(g.nsp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(g.nsp, 1));
  if (g.strides.size() != g.nsp || g.dilations.size() != g.nsp)
    ctx.fail("strides and dilations need {} values each", g.nsp);
  for (size_t i = 0; i < g.nsp; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1) ctx.fail("strides and dilations must be >= 1");
  set_sizes(g);
  return g;
}

/// Resolves the begin pads of a forward convolution (Conv, ConvInteger, QLinearConv,
/// DeformConv, Col2Im): explicit pads, VALID, or SAME_UPPER/SAME_LOWER.
void resolve_conv_pads(const KernelContext& ctx, WindowGeom& g) {
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * g.nsp, 0));
  if (pads.size() != 2 * g.nsp) ctx.fail("pads needs {} values, got {}", 2 * g.nsp, pads.size());
  g.pad_begin.assign(g.nsp, 0);
  for (size_t i = 0; i < g.nsp; ++i) {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
      g.pad_begin[i] = same_pads(g, i, auto_pad == "SAME_UPPER").first;
    else if (auto_pad == "NOTSET")
      g.pad_begin[i] = pads[i];
  }
}

/// Checks X [N, C, D...], W [M, C/group, k...], Y [N, M, O...] and returns the geometry.
WindowGeom forward_geom(const KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor& y,
                        int64_t group) {
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  if (wd.size() != xd.size()) ctx.fail("W {} and X {} must have the same rank", dims_str(wd), dims_str(xd));
  if (group < 1) ctx.fail("group must be >= 1, got {}", group);
  if (xd.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got {}", dims_str(xd));
  int64_t channels = 0;
  if (!mul_fits(wd[1], group, channels) || xd[1] != channels || wd[0] % group != 0)
    ctx.fail("X {} and W {} do not agree with group {}: need C = W[1] * group and W[0] % group == 0",
             dims_str(xd), dims_str(wd), group);
  if (y.dims().size() != xd.size() || y.dim(0) != xd[0] || y.dim(1) != wd[0])
    ctx.fail("output {} does not match X {} and W {}", dims_str(y.dims()), dims_str(xd), dims_str(wd));
  // No input channels: every kernel here divides by or loops over C/group.
  if (wd[1] == 0 && y.numel() > 0)
    ctx.fail("X {} has no input channels per group (W {}), but the output {} is not empty",
             dims_str(xd), dims_str(wd), dims_str(y.dims()));
  WindowGeom g = read_geom(ctx, xd, Dims(wd.begin() + 2, wd.end()), y.dims());
  resolve_conv_pads(ctx, g);
  return g;
}

/// The row-major flat index, over the first n axes of `extent`, of the position
/// base[d] + offs[d]; -1 when that position lies outside the extent (in the padding).
inline int64_t flat_index(const int64_t* base, const int64_t* offs, const Dims& extent, size_t n) {
  int64_t flat = 0;
  for (size_t d = 0; d < n; ++d) {
    const int64_t c = base[d] + offs[d];
    if (c < 0 || c >= extent[d]) return -1;
    flat = flat * extent[d] + c;
  }
  return flat;
}

/// Direct N-D convolution: for every (n, m, output position) sums
/// xval(n, c, input flat index) * wval(m, c_in_group, kernel index) over the window and
/// hands the sum to emit(flat output index, m, sum). Positions in the padding are skipped.
template <typename A, typename XF, typename WF, typename EF>
void conv_direct(const WindowGeom& g, int64_t batch, int64_t channels, int64_t maps, int64_t group,
                 XF xval, WF wval, EF emit) {
  const int64_t cg = channels / group, mg = maps / group;
  std::vector<int64_t> koffs = kernel_offsets(g);
  std::vector<int64_t> base(g.nsp);
  CancelPoll poll;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t grp = m / mg;
      std::vector<int64_t> o(g.nsp, 0);
      int64_t oflat = 0;
      do {
        poll(g.kernel_size * cg);
        for (size_t d = 0; d < g.nsp; ++d) base[d] = o[d] * g.strides[d] - g.pad_begin[d];
        A sum = A(0);
        for (int64_t k = 0; k < g.kernel_size; ++k) {
          const int64_t iflat = flat_index(base.data(), koffs.data() + k * g.nsp, g.in, g.nsp);
          if (iflat < 0) continue;
          for (int64_t c = 0; c < cg; ++c)
            sum += xval(n, grp * cg + c, iflat) * wval(m, c, k);
        }
        emit((n * maps + m) * g.out_size + oflat, m, sum);
        ++oflat;
      } while (next_index(o, g.out));
    }
  }
}

template <typename T>
void conv_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  int64_t group = ctx.attr_i("group", 1);
  WindowGeom g = forward_geom(ctx, x, w, y, group);
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0);
  const T* b = nullptr;
  if (ctx.has_input(2)) {
    const Tensor& bt = ctx.input(2);
    if (bt.numel() != maps) ctx.fail("bias B has {} values, expected {}", bt.numel(), maps);
    b = bt.data<T>();
  }
  if (y.numel() == 0) return;
  {
    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    T* yp = y.data<T>();
    const int64_t cg = channels / group;
    conv_direct<double>(
        g, batch, channels, maps, group,
        [&](int64_t n, int64_t c, int64_t i) {
          return static_cast<double>(static_cast<acc_t<T>>(xp[(n * channels + c) * g.in_size + i]));
        },
        [&](int64_t m, int64_t c, int64_t k) {
          return static_cast<double>(static_cast<acc_t<T>>(wp[(m * cg + c) * g.kernel_size + k]));
        },
        [&](int64_t idx, int64_t m, double sum) {
          if (b) sum += static_cast<double>(static_cast<acc_t<T>>(b[m]));
          yp[idx] = T(static_cast<acc_t<T>>(sum));
        });
  }
}

void conv_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { conv_typed<typename decltype(tag)::type>(ctx); }, "Conv");
}

// ---- ConvTranspose ----

/// Reference ConvTranspose (scatter, double accumulation): every input element adds
/// x * w into the output window it maps to. W is [C, M/group, k...].
template <typename T>
void conv_transpose_reference(const WindowGeom& g, int64_t batch, int64_t channels, int64_t maps, int64_t group,
                              const T* xp, const T* wp, const T* bp, T* yp) {
  const int64_t cg = channels / group, mg = maps / group;
  std::vector<double> acc(static_cast<size_t>(batch * maps * g.out_size), 0.0);
  std::vector<int64_t> koffs = kernel_offsets(g);
  std::vector<int64_t> base(g.nsp);
  CancelPoll poll;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t grp = c / cg;
      std::vector<int64_t> i(g.nsp, 0);
      int64_t iflat = 0;
      do {
        poll(g.kernel_size * mg);
        double xv = static_cast<double>(static_cast<acc_t<T>>(xp[(n * channels + c) * g.in_size + iflat]));
        for (size_t d = 0; d < g.nsp; ++d) base[d] = i[d] * g.strides[d] - g.pad_begin[d];
        for (int64_t k = 0; k < g.kernel_size; ++k) {
          const int64_t oflat = flat_index(base.data(), koffs.data() + k * g.nsp, g.out, g.nsp);
          if (oflat < 0) continue;
          for (int64_t m = 0; m < mg; ++m) {
            double wv = static_cast<double>(static_cast<acc_t<T>>(wp[(c * mg + m) * g.kernel_size + k]));
            acc[(n * maps + grp * mg + m) * g.out_size + oflat] += xv * wv;
          }
        }
        ++iflat;
      } while (next_index(i, g.in));
    }
  }
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < maps; ++m) {
      double bv = bp ? static_cast<double>(static_cast<acc_t<T>>(bp[m])) : 0.0;
      for (int64_t o = 0; o < g.out_size; ++o) {
        int64_t idx = (n * maps + m) * g.out_size + o;
        yp[idx] = T(static_cast<acc_t<T>>(acc[idx] + bv));
      }
    }
}

template <typename T>
void conv_transpose_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  int64_t group = ctx.attr_i("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got {}", group);
  if (wd.size() != xd.size() || xd.size() < 3)
    ctx.fail("X {} and W {} must have the same rank >= 3", dims_str(xd), dims_str(wd));
  if (xd[1] != wd[0] || xd[1] % group != 0)
    ctx.fail("X {} and W {} do not agree: need C = W[0] and C % group == 0 (group {})", dims_str(xd),
             dims_str(wd), group);
  const int64_t batch = xd[0], channels = xd[1];
  const int64_t maps = checked_mul(wd[1], group, "W[1] * group (the output channels)");
  if (y.dims().size() != xd.size() || y.dim(0) != batch || y.dim(1) != maps)
    ctx.fail("output {} does not match X {} and W {}", dims_str(y.dims()), dims_str(xd), dims_str(wd));
  WindowGeom g = read_geom(ctx, xd, Dims(wd.begin() + 2, wd.end()), y.dims());
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * g.nsp, 0));
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(g.nsp, 0));
  if (pads.size() != 2 * g.nsp || out_pad.size() != g.nsp)
    ctx.fail("pads needs {} values and output_padding {}", 2 * g.nsp, g.nsp);
  bool explicit_shape = ctx.has_attr("output_shape");
  g.pad_begin.assign(g.nsp, 0);
  for (size_t i = 0; i < g.nsp; ++i) {
    const char* what =
        "the ConvTranspose pads (strides * (input - 1) + output_padding + dilated kernel - output)";
    int64_t ek = checked_add(checked_mul(g.kernel[i] - 1, g.dilations[i], what), 1, what);
    if (explicit_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // total may be negative (output_shape larger than the natural extent); the
      // halving rounds toward -inf as in the spec's reference formulas.
      int64_t total = checked_sub(
          checked_add(checked_add(checked_mul(g.strides[i], g.in[i] - 1, what), out_pad[i], what),
                      ek, what),
          g.out[i], what);
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else if (auto_pad == "NOTSET") {
      g.pad_begin[i] = pads[i];
    }
  }
  const Tensor* bt = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bt && bt->numel() != maps) ctx.fail("bias B has {} values, expected {}", bt->numel(), maps);
  if (y.numel() == 0) return;
  const T* bp = bt ? bt->data<T>() : nullptr;
  conv_transpose_reference<T>(g, batch, channels, maps, group, x.data<T>(), w.data<T>(), bp, y.data<T>());
}

void conv_transpose_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { conv_transpose_typed<typename decltype(tag)::type>(ctx); },
                 "ConvTranspose");
}

// ---- ConvInteger / QLinearConv ----

/// Integer value of element `i` of an 8-bit (or 32-bit) integer tensor.
int32_t int_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kUint8: return t.data<uint8_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    default: fail_unsupported("integer convolution does not support dtype {}", dtype_name(t.dtype()));
  }
}

/// Zero point per output channel: a scalar (or 1-element) tensor, or one per channel.
std::vector<int32_t> zero_points(const KernelContext& ctx, size_t input, int64_t count, DType expect) {
  std::vector<int32_t> zp(static_cast<size_t>(count), 0);
  if (!ctx.has_input(input)) return zp;
  const Tensor& t = ctx.input(input);
  if (t.dtype() != expect)
    ctx.fail("zero point (input {}) has dtype {} but its tensor is {}", input, dtype_name(t.dtype()),
             dtype_name(expect));
  if (t.numel() == 1) {
    std::fill(zp.begin(), zp.end(), int_at(t, 0));
  } else if (t.numel() == count && t.rank() == 1) {
    for (int64_t i = 0; i < count; ++i) zp[i] = int_at(t, i);
  } else {
    ctx.fail("zero point (input {}) must be a scalar or have {} values, got {}", input, count,
             dims_str(t.dims()));
  }
  return zp;
}

/// Shared body: sum over the window of (x - x_zp) * (w - w_zp[m]) in int64, handed to emit.
template <typename EF>
void integer_conv(KernelContext& ctx, size_t xi, size_t wi, size_t xzpi, size_t wzpi, const Tensor& y, EF emit) {
  const Tensor& x = ctx.input(xi);
  const Tensor& w = ctx.input(wi);
  int64_t group = ctx.attr_i("group", 1);
  WindowGeom g = forward_geom(ctx, x, w, y, group);
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0), cg = channels / group;
  std::vector<int32_t> xzp = zero_points(ctx, xzpi, 1, x.dtype());
  std::vector<int32_t> wzp = zero_points(ctx, wzpi, maps, w.dtype());
  if (y.numel() == 0) return;
  std::vector<int32_t> xv(static_cast<size_t>(x.numel())), wv(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xv[i] = int_at(x, i) - xzp[0];
  for (int64_t i = 0; i < w.numel(); ++i) wv[i] = int_at(w, i) - wzp[i / (cg * g.kernel_size)];
  conv_direct<int64_t>(
      g, batch, channels, maps, group,
      [&](int64_t n, int64_t c, int64_t i) { return int64_t(xv[(n * channels + c) * g.in_size + i]); },
      [&](int64_t m, int64_t c, int64_t k) { return int64_t(wv[(m * cg + c) * g.kernel_size + k]); },
      emit);
}

void conv_integer_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  int32_t* yp = y.data<int32_t>();
  integer_conv(ctx, 0, 1, 2, 3, y,
               [&](int64_t idx, int64_t, int64_t sum) { yp[idx] = static_cast<int32_t>(sum); });
}

/// Scale per output channel: a scalar or one float per channel.
std::vector<float> scales(const KernelContext& ctx, size_t input, int64_t count) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DType::kFloat) ctx.fail("scale (input {}) must be float, got {}", input, dtype_name(t.dtype()));
  std::vector<float> s(static_cast<size_t>(count));
  if (t.numel() == 1)
    std::fill(s.begin(), s.end(), t.data<float>()[0]);
  else if (t.numel() == count)
    s.assign(t.data<float>(), t.data<float>() + count);
  else
    ctx.fail("scale (input {}) must be a scalar or have {} values, got {}", input, count, dims_str(t.dims()));
  return s;
}

template <typename Q>
void qlinear_conv_typed(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const int64_t maps = ctx.input(3).rank() > 0 ? ctx.input(3).dim(0) : 0;
  std::vector<float> xs = scales(ctx, 1, 1), ws = scales(ctx, 4, maps), ys = scales(ctx, 6, 1);
  std::vector<int32_t> yzp = zero_points(ctx, 7, 1, y.dtype());
  const int32_t* bias = nullptr;
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.input(8);
    if (b.dtype() != DType::kInt32 || b.numel() != maps)
      ctx.fail("bias B must be int32 with {} values, got {} {}", maps, dtype_name(b.dtype()), dims_str(b.dims()));
    bias = b.data<int32_t>();
  }
  Q* yp = y.data<Q>();
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  integer_conv(ctx, 0, 3, 2, 5, y, [&](int64_t idx, int64_t m, int64_t sum) {
    if (bias) sum += bias[m];
    float scale = xs[0] * ws[m] / ys[0];
    float v = std::nearbyint(static_cast<float>(sum) * scale) + static_cast<float>(yzp[0]);
    if (std::isnan(v)) v = static_cast<float>(yzp[0]);  // a NaN/inf scale: the zero point, as QuantizeLinear
    yp[idx] = static_cast<Q>(std::clamp(v, lo, hi));
  });
}

void qlinear_conv_kernel(KernelContext& ctx) {
  DType dt = ctx.output(0).dtype();
  if (dt == DType::kUint8)
    qlinear_conv_typed<uint8_t>(ctx);
  else if (dt == DType::kInt8)
    qlinear_conv_typed<int8_t>(ctx);
  else
    ctx.fail("QLinearConv output must be int8 or uint8, got {}", dtype_name(dt));
}

// ---- DeformConv ----

template <typename T>
void deform_conv_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& off = ctx.input(2);
  Tensor& y = ctx.output(0);
  int64_t group = ctx.attr_i("group", 1);
  int64_t offset_group = ctx.attr_i("offset_group", 1);
  WindowGeom g = forward_geom(ctx, x, w, y, group);
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0), cg = channels / group;
  const size_t nsp = g.nsp;
  if (offset_group < 1 || channels % offset_group != 0)
    ctx.fail("offset_group {} must be >= 1 and divide the {} input channels", offset_group, channels);
  Dims want_off{batch, static_cast<int64_t>(
                           checked_count({offset_group, g.kernel_size, static_cast<int64_t>(nsp)},
                                         "offset_group * prod(kernel) * spatial rank"))};
  want_off.insert(want_off.end(), g.out.begin(), g.out.end());
  if (off.dims() != want_off)
    ctx.fail("offset is {}, expected {} (N, offset_group * prod(kernel) * spatial rank, output spatial)",
             dims_str(off.dims()), dims_str(want_off));
  const Tensor* bt = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (bt && bt->numel() != maps) ctx.fail("bias B has {} values, expected {}", bt->numel(), maps);
  const Tensor* mt = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (mt) {
    Dims want_mask{batch, checked_mul(offset_group, g.kernel_size, "offset_group * prod(kernel)")};
    want_mask.insert(want_mask.end(), g.out.begin(), g.out.end());
    if (mt->dims() != want_mask)
      ctx.fail("mask is {}, expected {}", dims_str(mt->dims()), dims_str(want_mask));
  }
  if (y.numel() == 0) return;
  auto val = [](const T* p, int64_t i) { return static_cast<double>(static_cast<acc_t<T>>(p[i])); };
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  const T* op = off.data<T>();
  const T* mp = mt ? mt->data<T>() : nullptr;
  T* yp = y.data<T>();
  const int64_t cpo = channels / offset_group;
  std::vector<int64_t> koffs = kernel_offsets(g);
  std::vector<int64_t> in_strides(nsp, 1);
  for (size_t d = nsp - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * g.in[d + 1];
  std::vector<double> pos(nsp);
  // Sampled values per (input channel, kernel index) for one output position.
  std::vector<double> cols(static_cast<size_t>(channels * g.kernel_size));
  const int64_t corners = int64_t(1) << nsp;
  CancelPoll poll;
  for (int64_t n = 0; n < batch; ++n) {
    std::vector<int64_t> o(nsp, 0);
    int64_t oflat = 0;
    do {
      poll(g.kernel_size * (channels * corners + maps * cg));
      for (int64_t og = 0; og < offset_group; ++og) {
        for (int64_t k = 0; k < g.kernel_size; ++k) {
          for (size_t d = 0; d < nsp; ++d) {
            int64_t oc = ((og * g.kernel_size + k) * static_cast<int64_t>(nsp) + static_cast<int64_t>(d));
            pos[d] = static_cast<double>(o[d] * g.strides[d] - g.pad_begin[d] + koffs[k * nsp + d]) +
                     val(op, (n * want_off[1] + oc) * g.out_size + oflat);
          }
          double mask = mp ? val(mp, (n * offset_group * g.kernel_size + og * g.kernel_size + k) * g.out_size + oflat) : 1.0;
          // Multilinear interpolation; corners outside the input read as zero, and a
          // point at or beyond one pixel outside the input samples zero.
          // A NaN offset (or mask) gives a NaN sample, as arithmetic on it would, and is
          // never converted to an index.
          bool outside = false, nan = false;
          for (size_t d = 0; d < nsp; ++d) {
            if (std::isnan(pos[d])) nan = true;
            else if (pos[d] <= -1.0 || pos[d] >= static_cast<double>(g.in[d])) outside = true;
          }
          for (int64_t c = og * cpo; c < (og + 1) * cpo; ++c) {
            double v = 0;
            if (nan) {
              v = std::numeric_limits<double>::quiet_NaN();
            } else if (!outside) {
              for (int64_t corner = 0; corner < corners; ++corner) {
                double wgt = 1;
                int64_t flat = 0;
                bool ok = true;
                for (size_t d = 0; d < nsp; ++d) {
                  double fl = std::floor(pos[d]);
                  int64_t ci = static_cast<int64_t>(fl) + ((corner >> d) & 1);
                  double frac = pos[d] - fl;
                  wgt *= ((corner >> d) & 1) ? frac : 1.0 - frac;
                  if (ci < 0 || ci >= g.in[d]) ok = false;
                  flat += ci * in_strides[d];
                }
                if (ok && wgt != 0) v += wgt * val(xp, (n * channels + c) * g.in_size + flat);
              }
            }
            cols[c * g.kernel_size + k] = v * mask;
          }
        }
      }
      for (int64_t m = 0; m < maps; ++m) {
        const int64_t grp = m / (maps / group);
        double sum = bt ? val(bt->data<T>(), m) : 0.0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t k = 0; k < g.kernel_size; ++k)
            sum += val(wp, (m * cg + c) * g.kernel_size + k) * cols[(grp * cg + c) * g.kernel_size + k];
        yp[(n * maps + m) * g.out_size + oflat] = T(static_cast<acc_t<T>>(sum));
      }
      ++oflat;
    } while (next_index(o, g.out));
  }
}

void deform_conv_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { deform_conv_typed<typename decltype(tag)::type>(ctx); },
                 "DeformConv");
}

// ---- Col2Im ----

template <typename T>
void col2im_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> image = ctx.input_ints(1);
  std::vector<int64_t> block = ctx.input_ints(2);
  Tensor& y = ctx.output(0);
  const size_t nsp = image.size();
  if (block.size() != nsp || nsp == 0) ctx.fail("image_shape and block_shape must have the same non-zero length");
  if (x.rank() != 3) ctx.fail("input must be 3-D [N, C*prod(block_shape), L], got {}", dims_str(x.dims()));
  Dims want{x.dim(0), 0};
  int64_t kprod = product(block);
  if (kprod <= 0 || x.dim(1) % kprod != 0)
    ctx.fail("input axis 1 ({}) is not divisible by prod(block_shape) = {}", x.dim(1), kprod);
  want[1] = x.dim(1) / kprod;
  want.insert(want.end(), image.begin(), image.end());
  if (y.dims() != want) ctx.fail("output {} does not match the expected {}", dims_str(y.dims()), dims_str(want));
  if (y.numel() == 0) return;
  WindowGeom g;
  g.nsp = nsp;
  g.in = image;
  g.kernel = block;
  g.kernel_size = kprod;
  g.in_size = product(image);
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (g.strides.size() != nsp || g.dilations.size() != nsp || pads.size() != 2 * nsp)
    ctx.fail("strides, dilations need {} values and pads {}", nsp, 2 * nsp);
  // Block grid: one block position per output location of the equivalent convolution.
  g.out.resize(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1) ctx.fail("strides and dilations must be >= 1");
    const char* what = "the padded image extent";
    int64_t ek = checked_add(checked_mul(block[i] - 1, g.dilations[i], what), 1, what);
    int64_t span = checked_sub(
        checked_add(checked_add(image[i], pads[i], what), pads[i + nsp], what), ek, what);
    if (span < 0) ctx.fail("spatial axis {}: the dilated block {} exceeds the padded image", i, ek);
    g.out[i] = span / g.strides[i] + 1;
  }
  g.out_size = product(g.out);
  if (x.dim(2) != g.out_size)
    ctx.fail("input has L = {} blocks but the geometry gives {}", x.dim(2), g.out_size);
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(nsp));
  const int64_t batch = x.dim(0), channels = want[1];
  std::vector<acc_t<T>> acc(static_cast<size_t>(y.numel()), acc_t<T>(0));
  std::vector<int64_t> koffs = kernel_offsets(g);
  const T* xp = x.data<T>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t k = 0; k < g.kernel_size; ++k) {
        poll_cancel();
        const T* row = xp + ((n * channels + c) * g.kernel_size + k) * g.out_size;
        std::vector<int64_t> l(nsp, 0);
        int64_t lflat = 0;
        do {
          int64_t iflat = 0;
          bool inside = true;
          for (size_t d = 0; d < nsp; ++d) {
            int64_t p = l[d] * g.strides[d] - g.pad_begin[d] + koffs[k * nsp + d];
            if (p < 0 || p >= g.in[d]) {
              inside = false;
              break;
            }
            iflat = iflat * g.in[d] + p;
          }
          if (inside) acc[(n * channels + c) * g.in_size + iflat] += static_cast<acc_t<T>>(row[lflat]);
          ++lflat;
        } while (next_index(l, g.out));
      }
  T* yp = y.data<T>();
  for (int64_t i = 0; i < y.numel(); ++i) yp[i] = T(acc[i]);
}

void col2im_kernel(KernelContext& ctx) {
  dispatch_numeric(ctx.input(0).dtype(), [&](auto tag) { col2im_typed<typename decltype(tag)::type>(ctx); }, "Col2Im");
}

// ---- CausalConvWithState ----

template <typename T>
void causal_conv_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() != 3) ctx.fail("input must be 3-D [batch, channels, length], got {}", dims_str(x.dims()));
  const int64_t batch = x.dim(0), channels = x.dim(1), len = x.dim(2);
  if (w.rank() != 3 || w.dim(0) != channels || w.dim(1) != 1 || w.dim(2) < 1)
    ctx.fail("weight must be [{}, 1, k] with k >= 1, got {}", channels, dims_str(w.dims()));
  const int64_t k = w.dim(2), hist = k - 1;
  for (size_t i = 1; i < 4; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != x.dtype())
      ctx.fail("input {} is {} but the input is {}: all must be the same type T", i,
               dtype_name(ctx.input(i).dtype()), dtype_name(x.dtype()));
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (bias && bias->numel() != channels) ctx.fail("bias must have {} values, got {}", channels, dims_str(bias->dims()));
  const Tensor* past = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (past && past->dims() != Dims{batch, channels, hist})
    ctx.fail("past_state must be [{}, {}, {}], got {}", batch, channels, hist, dims_str(past->dims()));
  std::string act = ctx.attr_s("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") ctx.fail("activation '{}' is not one of none, silu, swish", act);
  const bool silu = act != "none";
  Tensor& y = ctx.output(0);
  Tensor* state = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  if (y.dims() != x.dims()) ctx.fail("output {} does not match input {}", dims_str(y.dims()), dims_str(x.dims()));
  if (state && state->dims() != Dims{batch, channels, hist})
    ctx.fail("present_state {} must be [{}, {}, {}]", dims_str(state->dims()), batch, channels, hist);
  auto val = [](const T* p, int64_t i) { return static_cast<double>(static_cast<acc_t<T>>(p[i])); };
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  // The effective sequence is past_state (or zeros) followed by the input: length
  // hist + len; output t reads positions t .. t + k - 1 of it.
  std::vector<double> seq(static_cast<size_t>(hist + len));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t row = b * channels + c;
      for (int64_t i = 0; i < hist; ++i) seq[i] = past ? val(past->data<T>(), row * hist + i) : 0.0;
      for (int64_t i = 0; i < len; ++i) seq[hist + i] = val(xp, row * len + i);
      const double bv = bias ? val(bias->data<T>(), c) : 0.0;
      for (int64_t t = 0; t < len; ++t) {
        double sum = bv;
        for (int64_t j = 0; j < k; ++j) sum += seq[t + j] * val(wp, c * k + j);
        if (silu) sum = sum / (1.0 + std::exp(-sum));
        y.data<T>()[row * len + t] = T(static_cast<acc_t<T>>(sum));
      }
      if (state)
        for (int64_t i = 0; i < hist; ++i)
          state->data<T>()[row * hist + i] = T(static_cast<acc_t<T>>(seq[len + i]));
    }
}

void causal_conv_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { causal_conv_typed<typename decltype(tag)::type>(ctx); },
                 "CausalConvWithState");
}

}  // namespace

void register_conv(Registry& r) {
  r.add("", "Conv", 1, 1000, float_types(), conv_kernel);
  r.add("", "ConvTranspose", 1, 1000, float_types(), conv_transpose_kernel);
  r.add("", "ConvInteger", 10, 1000, {DType::kInt8, DType::kUint8}, conv_integer_kernel);
  r.add("", "QLinearConv", 10, 1000, {DType::kInt8, DType::kUint8}, qlinear_conv_kernel);
  r.add("", "DeformConv", 19, 1000, float_types(), deform_conv_kernel);
  r.add("", "Col2Im", 18, 1000, numeric_types(), col2im_kernel);
  r.add("", "CausalConvWithState", 27, 1000, float_types(), causal_conv_kernel);
}

}  // namespace onyx::kernels
