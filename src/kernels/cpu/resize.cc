// Optimized float Resize (opset 11+) of the two spatial axes of an [N, C, H, W] tensor, in
// the modes exports of Upsample / interpolate use: nearest (every nearest_mode) and
// linear, with half_pixel, pytorch_half_pixel, align_corners, asymmetric (and
// tf_half_pixel_for_nn for nearest) coordinates. Twin of src/kernels/reference/resize.cc,
// whose coordinate arithmetic (in double) it repeats to pick the same source indices.
// Per axis a table (source index, or two indices and a weight) is built once per call;
// nearest gathers rows (an output row equal to the previous one is copied; exact 2x
// repeats each element twice), linear interpolates every input row along the width once,
// then blends row pairs. Threaded over planes. Anything else goes to the reference:
// antialias, cubic, exclude_outside, tf_crop_and_resize, axes, resized N or C.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int64_t kGrain = 1 << 15;  // output elements per block of work

struct ResizeAttrs {
  bool linear = false;
  std::string ctm, nearest_mode;
};

/// Input coordinate of output index x, as the reference computes it (its fractional
/// output width included).
double source_coord(const ResizeAttrs& a, int64_t x_int, int64_t in, double scale) {
  const double x = static_cast<double>(x_int), len = static_cast<double>(in), out_w = scale * len;
  if (a.ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (a.ctm == "pytorch_half_pixel") return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (a.ctm == "align_corners") return out_w == 1 ? 0.0 : x * (len - 1) / (out_w - 1);
  if (a.ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return x / scale;  // asymmetric
}

/// One axis: per output index the source index (nearest) or the two source indices and
/// the second one's weight (linear).
struct AxisTable {
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
};

AxisTable axis_table(const ResizeAttrs& a, int64_t in, int64_t out, double scale) {
  AxisTable t;
  t.i0.resize(static_cast<size_t>(out));
  if (a.linear) {
    t.i1.resize(static_cast<size_t>(out));
    t.w.resize(static_cast<size_t>(out));
  }
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t x = 0; x < out; ++x) {
    const double xo = source_coord(a, x, in, scale);
    const double fl = std::floor(xo);
    if (!a.linear) {
      int64_t idx = static_cast<int64_t>(fl);
      if (xo != fl) {
        const double ratio = xo - fl;
        bool up;
        if (a.nearest_mode == "round_prefer_ceil")
          up = ratio >= 0.5;
        else if (a.nearest_mode == "floor")
          up = false;
        else if (a.nearest_mode == "ceil")
          up = true;
        else
          up = ratio > 0.5;  // round_prefer_floor
        idx += up ? 1 : 0;
      }
      t.i0[x] = clamp(idx);
      continue;
    }
    // As the reference: an integral coordinate is base x - 1 with weight 1 on x.
    const bool integral = xo == fl;
    const double ratio = integral ? 1.0 : xo - fl;
    const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    t.i0[x] = clamp(base);
    t.i1[x] = clamp(base + 1);
    t.w[x] = static_cast<float>(ratio);
  }
  return t;
}

/// The scale of each axis from the scales or sizes input (the reference's rules for the
/// "stretch" policy); false when neither or both are given, or they do not fit.
bool read_scales(KernelContext& ctx, const Tensor& x, std::vector<double>& scales) {
  const size_t rank = x.rank();
  const bool has_scales = ctx.has_input(2) && ctx.input(2).numel() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.input(3).numel() > 0;
  if (has_scales == has_sizes) return false;
  scales.assign(rank, 1.0);
  if (has_scales) {
    const Tensor& s = ctx.input(2);
    if (s.dtype() != DType::kFloat || static_cast<size_t>(s.numel()) != rank) return false;
    for (size_t d = 0; d < rank; ++d) scales[d] = s.data<float>()[d];
  } else {
    const Tensor& s = ctx.input(3);
    if (s.dtype() != DType::kInt64 || static_cast<size_t>(s.numel()) != rank) return false;
    for (size_t d = 0; d < rank; ++d) {
      if (x.dim(d) == 0) return false;
      scales[d] = static_cast<double>(s.data<int64_t>()[d]) / static_cast<double>(x.dim(d));
    }
  }
  for (double s : scales)
    if (!(s > 0) || !std::isfinite(s)) return false;
  return true;
}

/// (1 - w) a + w b as the reference weighs two taps, which drops a tap of weight 0 (w is
/// never 0; w = 1 is an integral coordinate), so an infinity there does not become NaN.
inline float blend(float a, float b, float w) {
  return w == 1.0f ? b : (1.0f - w) * a + w * b;
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(ResizeAttrs attrs, KernelFn reference)
      : a_(std::move(attrs)), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::vector<double> scales;
    if (!is_float(x) || !is_float(y) || x.rank() != 4 || y.rank() != 4 || y.dim(0) != x.dim(0) ||
        y.dim(1) != x.dim(1) || !read_scales(ctx, x, scales) || x.dim(2) == 0 || x.dim(3) == 0) {
      reference_(ctx);
      return;
    }
    if (y.numel() == 0) return;
    const int64_t ih = x.dim(2), iw = x.dim(3), oh = y.dim(2), ow = y.dim(3);
    const AxisTable th = axis_table(a_, ih, oh, scales[2]), tw = axis_table(a_, iw, ow, scales[3]);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const int64_t planes = x.dim(0) * x.dim(1);
    bool twice = !a_.linear && ow == 2 * iw;  // every source element twice, in order
    for (int64_t ox = 0; twice && ox < ow; ++ox) twice = tw.i0[ox] == ox / 2;
    const bool linear = a_.linear;
    parallel_blocks(ctx.pool(), planes, std::max<int64_t>(1, kGrain / (oh * ow)),
                    [&](int64_t p0, int64_t p1) {
                      std::vector<float> rows(linear ? static_cast<size_t>(ih * ow) : 0);
                      for (int64_t p = p0; p < p1; ++p) {
                        const float* xp = px + p * ih * iw;
                        float* yp = py + p * oh * ow;
                        if (linear) {
                          for (int64_t iy = 0; iy < ih; ++iy) {
                            const float* s = xp + iy * iw;
                            float* r = rows.data() + iy * ow;
                            for (int64_t ox = 0; ox < ow; ++ox)
                              r[ox] = blend(s[tw.i0[ox]], s[tw.i1[ox]], tw.w[ox]);
                          }
                          for (int64_t oy = 0; oy < oh; ++oy) {
                            const float* r0 = rows.data() + th.i0[oy] * ow;
                            const float* r1 = rows.data() + th.i1[oy] * ow;
                            const float w = th.w[oy];
                            float* yr = yp + oy * ow;
                            for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = blend(r0[ox], r1[ox], w);
                          }
                          continue;
                        }
                        for (int64_t oy = 0; oy < oh; ++oy) {
                          float* yr = yp + oy * ow;
                          if (oy > 0 && th.i0[oy] == th.i0[oy - 1]) {
                            std::memcpy(yr, yr - ow, static_cast<size_t>(ow) * sizeof(float));
                            continue;
                          }
                          const float* s = xp + th.i0[oy] * iw;
                          if (twice)
                            for (int64_t i = 0; i < iw; ++i) yr[2 * i] = yr[2 * i + 1] = s[i];
                          else
                            for (int64_t ox = 0; ox < ow; ++ox) yr[ox] = s[tw.i0[ox]];
                        }
                      }
                    });
  }
  std::string_view name() const override { return "cpu.resize"; }
  bool overwrites_outputs() const override { return true; }

 private:
  ResizeAttrs a_;
  KernelFn reference_;
};

std::unique_ptr<Kernel> make_resize(const KernelInit& init) {
  const ir::Node& node = init.node;
  if (!maybe_float(init, 0)) return nullptr;
  ResizeAttrs a;
  std::string mode = node.attr_s("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear") return nullptr;
  a.linear = mode == "linear";
  a.ctm = node.attr_s("coordinate_transformation_mode", "half_pixel");
  a.nearest_mode = node.attr_s("nearest_mode", "round_prefer_floor");
  const bool ctm_ok = a.ctm == "half_pixel" || a.ctm == "pytorch_half_pixel" ||
                      a.ctm == "align_corners" || a.ctm == "asymmetric" ||
                      (!a.linear && a.ctm == "tf_half_pixel_for_nn" && node.opset < 13);
  const bool nearest_ok = a.nearest_mode == "round_prefer_floor" ||
                          a.nearest_mode == "round_prefer_ceil" || a.nearest_mode == "floor" ||
                          a.nearest_mode == "ceil";
  if (!ctm_ok || !nearest_ok || node.attr_i("exclude_outside", 0) != 0 ||
      node.attr_i("antialias", 0) != 0 || node.has_attr("axes") ||
      node.attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    return nullptr;
  return std::make_unique<ResizeKernel>(std::move(a), init.reference);
}

}  // namespace

void register_resize(Registry& r) {
  r.add_optimized("", "Resize", 11, 1000, {DType::kFloat}, make_resize);
}

}  // namespace onyx::kernels::cpu
