// Optimized float pooling, twins of src/kernels/reference/pool.cc: MaxPool (without the
// Indices output) and AveragePool (count_include_pad either way) over 1-D and 2-D windows
// with any strides, dilations, pads, auto_pad and ceil_mode, and GlobalAveragePool /
// GlobalMaxPool. A window's taps inside the input form a rectangle (rows x columns), so
// a plane is pooled in two passes: each input row along the width into a row of partial
// results (src/simd/pool.cc: whole vectors of outputs for strides 1 and 2), then the
// partial rows of each window's rows folded together; an average divides by its rows'
// count times its columns' count. Threaded over (n, c) planes.
#include "simd/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int64_t kGrain = 1 << 14;  // input elements per block of work

/// One spatial axis of a pooling window, once the input and output extents are known.
struct Axis {
  int64_t in = 1, out = 1, k = 1, s = 1, d = 1, pb = 0, pe = 0;

  /// Taps of output o inside the input, and inside input + pads.
  int64_t inside(int64_t o) const { return count(o, 0, in); }
  int64_t padded(int64_t o) const { return count(o, -pb, in + pe); }

 private:
  int64_t count(int64_t o, int64_t lo, int64_t hi) const {
    int64_t n = 0;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t c = o * s - pb + t * d;
      n += c >= lo && c < hi;
    }
    return n;
  }
};

/// The attributes of a pooling node, parsed once.
struct PoolAttrs {
  size_t nsp = 0;
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
  bool include_pad = false;
};

/// Reads the attributes; false for what the reference must report (or that these
/// kernels do not take: more than 2 spatial axes).
bool parse_attrs(const ir::Node& node, PoolAttrs& a) {
  a.kernel = node.attr_ints("kernel_shape");
  a.nsp = a.kernel.size();
  if (a.nsp < 1 || a.nsp > 2) return false;
  a.strides = node.attr_ints("strides", std::vector<int64_t>(a.nsp, 1));
  a.dilations = node.attr_ints("dilations", std::vector<int64_t>(a.nsp, 1));
  a.pads = node.attr_ints("pads", std::vector<int64_t>(2 * a.nsp, 0));
  a.auto_pad = node.attr_s("auto_pad", "NOTSET");
  a.include_pad = node.attr_i("count_include_pad", 0) != 0;
  if (a.strides.size() != a.nsp || a.dilations.size() != a.nsp || a.pads.size() != 2 * a.nsp)
    return false;
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" &&
      a.auto_pad != "SAME_LOWER")
    return false;
  for (size_t i = 0; i < a.nsp; ++i)
    if (a.kernel[i] < 1 || a.strides[i] < 1 || a.dilations[i] < 1 || a.pads[i] < 0 ||
        a.pads[i + a.nsp] < 0)
      return false;
  return true;
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(bool max, PoolAttrs attrs, KernelFn reference)
      : max_(max), a_(std::move(attrs)), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    Axis h, w;
    if (!is_float(x) || !is_float(y) || !geometry(x.dims(), y.dims(), h, w)) {
      reference_(ctx);
      return;
    }
    if (y.numel() == 0) return;
    const int64_t planes = x.dim(0) * x.dim(1);
    // An average's divisors: per output row times per output column. A max window without
    // a tap inside the input gives the lowest float (the reference's start value).
    std::vector<float> row_inv, col_inv;
    std::vector<int64_t> empty_cols;
    for (int64_t ox = 0; ox < w.out; ++ox)
      if (w.inside(ox) == 0) empty_cols.push_back(ox);
    if (!max_) {
      for (int64_t oy = 0; oy < h.out; ++oy)
        row_inv.push_back(1.0f / static_cast<float>(a_.include_pad ? h.padded(oy) : h.inside(oy)));
      for (int64_t ox = 0; ox < w.out; ++ox)
        col_inv.push_back(1.0f / static_cast<float>(a_.include_pad ? w.padded(ox) : w.inside(ox)));
    }
    std::vector<int64_t> empty_rows;
    for (int64_t oy = 0; oy < h.out; ++oy)
      if (h.inside(oy) == 0) empty_rows.push_back(oy);
    const simd::PoolGeom g{h.in, w.in, h.out, w.out, h.k, w.k, h.s, w.s, h.d, w.d, h.pb, w.pb};
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool max = max_;
    parallel_blocks(ctx.pool(), planes, std::max<int64_t>(1, kGrain / (h.in * w.in)),
                    [&](int64_t p0, int64_t p1) {
                      for (int64_t p = p0; p < p1; ++p) {
                        float* yp = py + p * h.out * w.out;
                        simd::pool_plane(g, px + p * h.in * w.in, yp, max,
                                         max ? nullptr : row_inv.data(),
                                         max ? nullptr : col_inv.data());
                        if (!max)
                          continue;  // an empty window's sum 0 times its divisor 1/0 is NaN, as in
                                     // the reference
                        constexpr float kLowest = std::numeric_limits<float>::lowest();
                        for (int64_t oy : empty_rows)
                          std::fill(yp + oy * w.out, yp + (oy + 1) * w.out, kLowest);
                        for (int64_t oy = 0; oy < h.out && !empty_cols.empty(); ++oy)
                          for (int64_t ox : empty_cols) yp[oy * w.out + ox] = kLowest;
                      }
                    });
  }
  std::string_view name() const override { return max_ ? "cpu.max_pool" : "cpu.average_pool"; }
  bool overwrites_outputs() const override { return true; }

 private:
  /// The two axes (a 1-D pool is a 2-D one with a single row) with pads resolved; false
  /// when the shapes are not what the attributes describe.
  bool geometry(const Dims& xd, const Dims& yd, Axis& h, Axis& w) const {
    const size_t nsp = a_.nsp;
    if (xd.size() != nsp + 2 || yd.size() != nsp + 2 || yd[0] != xd[0] || yd[1] != xd[1])
      return false;
    Axis* axes[2] = {&h, &w};
    for (size_t i = 0; i < nsp; ++i) {
      Axis& ax = *axes[2 - nsp + i];
      ax.in = xd[2 + i];
      ax.out = yd[2 + i];
      ax.k = a_.kernel[i];
      ax.s = a_.strides[i];
      ax.d = a_.dilations[i];
      // The SIMD path walks every kernel row and column: windows far larger than the
      // input (hostile attributes) go to the reference, which visits only taps inside.
      if (ax.k > 2 * ax.in + 2 || ax.s > (int64_t{1} << 30) || ax.d > (int64_t{1} << 30)) return false;
      if (a_.auto_pad == "SAME_UPPER" || a_.auto_pad == "SAME_LOWER") {
        const int64_t total =
            std::max<int64_t>(0, (ax.out - 1) * ax.s + (ax.k - 1) * ax.d + 1 - ax.in);
        ax.pb = a_.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        ax.pe = total - ax.pb;
      } else if (a_.auto_pad == "NOTSET") {
        ax.pb = a_.pads[i];
        ax.pe = a_.pads[i + nsp];
      }
    }
    return true;
  }

  bool max_;
  PoolAttrs a_;
  KernelFn reference_;
};

/// GlobalAveragePool and GlobalMaxPool: one SIMD reduction per (n, c) plane.
class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(bool max, KernelFn reference) : max_(max), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (!is_float(x) || !is_float(y) || x.rank() < 3 || y.numel() != x.dim(0) * x.dim(1)) {
      reference_(ctx);
      return;
    }
    const int64_t planes = y.numel();
    if (planes == 0) return;
    const int64_t size = x.numel() / planes;
    if (size == 0) {
      reference_(ctx);  // an empty plane: the reference's NaN and lowest values
      return;
    }
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool max = max_;
    parallel_blocks(ctx.pool(), planes, std::max<int64_t>(1, (1 << 15) / size),
                    [&](int64_t p0, int64_t p1) {
                      for (int64_t p = p0; p < p1; ++p)
                        py[p] = max ? simd::row_extreme(px + p * size, size, true)
                                    : simd::row_sum(px + p * size, size) / static_cast<float>(size);
                    });
  }
  std::string_view name() const override { return "cpu.global_pool"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool max_;
  KernelFn reference_;
};

/// ai.onyx GlobalAveragePool with channels_last: X [N, spatial..., C], Y [N, 1..., C]: per
/// image, the pixels' channel rows summed into blocks of 64 pixels, then the blocks.
/// Threads over images and runs of channels.
class GlobalPoolNhwcKernel final : public Kernel {
 public:
  explicit GlobalPoolNhwcKernel(KernelFn reference) : reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (!is_float(x) || !is_float(y) || x.rank() < 3 || y.rank() != x.rank() || y.dim(0) != x.dim(0) ||
        y.dim(y.rank() - 1) != x.dim(x.rank() - 1) || y.numel() != x.dim(0) * x.dim(x.rank() - 1)) {
      reference_(ctx);
      return;
    }
    const int64_t N = x.dim(0), C = x.dim(x.rank() - 1);
    if (y.numel() == 0) return;
    const int64_t P = x.numel() / (N * C);  // pixels per image
    if (P == 0) {
      reference_(ctx);  // empty images: the reference's NaN
      return;
    }
    const float* px = x.data<float>();
    float* py = y.data<float>();
    // Runs of 64 channels (a few cache lines per pixel) as the unit of work.
    constexpr int64_t kRun = 64;
    const int64_t runs = (C + kRun - 1) / kRun;
    const float inv = 1.0f / static_cast<float>(P);
    parallel_blocks(ctx.pool(), N * runs, std::max<int64_t>(1, (1 << 15) / (P * kRun)),
                    [&](int64_t u0, int64_t u1) {
                      float part[kRun];
                      for (int64_t u = u0; u < u1; ++u) {
                        const int64_t n = u / runs, c0 = (u % runs) * kRun, nc = std::min(kRun, C - c0);
                        float* yp = py + n * C + c0;
                        std::fill(yp, yp + nc, 0.0f);
                        const float* xn = px + n * P * C + c0;
                        for (int64_t p0 = 0; p0 < P; p0 += 64) {
                          std::fill(part, part + nc, 0.0f);
                          for (int64_t p = p0; p < std::min(P, p0 + 64); ++p)
                            simd::row_accumulate(part, xn + p * C, nc, 0);
                          simd::row_accumulate(yp, part, nc, 0);
                        }
                        for (int64_t c = 0; c < nc; ++c) yp[c] *= inv;
                      }
                    });
  }
  std::string_view name() const override { return "cpu.global_pool_nhwc"; }
  bool overwrites_outputs() const override { return true; }

 private:
  KernelFn reference_;
};

template <bool kMax>
std::unique_ptr<Kernel> make_pool(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  if (kMax && init.node.outputs.size() > 1 && !init.node.outputs[1].empty())
    return nullptr;  // Indices
  PoolAttrs a;
  if (!parse_attrs(init.node, a)) return nullptr;
  return std::make_unique<PoolKernel>(kMax, std::move(a), init.reference);
}

template <bool kMax>
std::unique_ptr<Kernel> make_global_pool(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  return std::make_unique<GlobalPoolKernel>(kMax, init.reference);
}

std::unique_ptr<Kernel> make_onyx_global_average_pool(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  if (init.node.attr_i("channels_last", 0) != 0) return std::make_unique<GlobalPoolNhwcKernel>(init.reference);
  return std::make_unique<GlobalPoolKernel>(false, init.reference);
}

}  // namespace

void register_pool(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  r.add_optimized("", "MaxPool", 1, 1000, f32, make_pool<true>);
  r.add_optimized("", "AveragePool", 1, 1000, f32, make_pool<false>);
  r.add_optimized("", "GlobalMaxPool", 1, 1000, f32, make_global_pool<true>);
  r.add_optimized("", "GlobalAveragePool", 1, 1000, f32, make_global_pool<false>);
  r.add_optimized("ai.onyx", "GlobalAveragePool", 1, 1, f32, make_onyx_global_average_pool);
}

}  // namespace onyx::kernels::cpu
