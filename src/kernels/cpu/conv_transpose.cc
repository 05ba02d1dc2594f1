// Optimized float ConvTranspose (twin of conv_transpose_reference in
// src/kernels/reference/conv.cc). Per image and group, col[Mg*K x IS] = W_g^T[Mg*K x Cg] *
// X_g[Cg x IS] (K = prod(kernel), IS = input positions) with the GEMM reading X in place and
// W_g^T packed once at planning; col2im then adds every column into the output, which
// starts as the bias. A task is (image, group, block of output channels): its GEMM rows
// are the (channel, kernel position) pairs of its channels and it adds only into them, so
// tasks never write the same output.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/conv.h"
#include "runtime/thread_pool.h"
#include "simd/gemm_conv.h"

namespace onyx::kernels::cpu {

namespace {

constexpr int64_t kColFloats = 1 << 16;  // the col block of one task: 256 KiB

/// W [C, Mg, k...] as the row-major W_g^T of each group, [group][Mg * K][Cg]: row m * K + k,
/// column c is W[gi * Cg + c][m][k].
std::vector<float> transpose_weights(const float* w, int64_t group, int64_t cg, int64_t mg,
                                     int64_t ks) {
  const int64_t rows = mg * ks;
  std::vector<float> t(static_cast<size_t>(group * rows * cg));
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < rows; ++r)
        t[static_cast<size_t>((gi * rows + r) * cg + c)] = w[(gi * cg + c) * rows + r];
  return t;
}

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInit& init) : reference_(init.reference) {}
  bool init(const KernelInit& init);
  void run(KernelContext& ctx) const override;
  std::string_view name() const override { return "cpu.conv_transpose"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool shape_of(KernelContext& ctx, ConvShape& s) const;

  KernelFn reference_;
  int64_t group_ = 1;
  std::vector<int64_t> kernel_shape_, strides_, dilations_, pads_, out_pad_;
  bool explicit_shape_ = false;
  std::string auto_pad_;
  bool w_const_ = false;
  Dims w_dims_;
  std::vector<float> wt_;  ///< W_g^T of each group
};

bool ConvTransposeKernel::init(const KernelInit& init) {
  const ir::Node& node = init.node;
  group_ = node.attr_i("group", 1);
  kernel_shape_ = node.attr_ints("kernel_shape");
  strides_ = node.attr_ints("strides");
  dilations_ = node.attr_ints("dilations");
  pads_ = node.attr_ints("pads");
  out_pad_ = node.attr_ints("output_padding");
  explicit_shape_ = node.has_attr("output_shape");
  auto_pad_ = node.attr_s("auto_pad", "NOTSET");
  if (auto_pad_ != "NOTSET" && auto_pad_ != "VALID" && auto_pad_ != "SAME_UPPER" &&
      auto_pad_ != "SAME_LOWER")
    return false;
  if (group_ < 1) return false;
  const Tensor* w = init.is_constant(1) ? init.constants[1] : nullptr;
  if (!w) return true;
  if (w->dtype() != DType::kFloat || w->rank() < 3 || w->dim(0) % group_ != 0) return false;
  w_const_ = true;
  w_dims_ = w->dims();
  int64_t ks = 1;
  for (size_t d = 2; d < w_dims_.size(); ++d) ks *= w_dims_[d];
  wt_ = transpose_weights(w->data<float>(), group_, w_dims_[0] / group_, w_dims_[1], ks);
  return true;
}

bool ConvTransposeKernel::shape_of(KernelContext& ctx, ConvShape& s) const {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_output(0)) return false;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& y = ctx.output(0);
  if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat || y.dtype() != DType::kFloat)
    return false;
  const Dims& xd = x.dims();
  const Dims& wd = w.dims();
  const Dims& yd = y.dims();
  if (xd.size() < 3 || wd.size() != xd.size() || yd.size() != xd.size()) return false;
  if (w_const_ && wd != w_dims_) return false;
  const size_t nsp = xd.size() - 2;
  s.batch = xd[0];
  s.channels = xd[1];
  s.group = group_;
  if (s.channels != wd[0] || s.channels % group_ != 0) return false;
  s.cg = s.channels / group_;
  s.mg = wd[1];
  s.maps = s.mg * group_;
  if (yd[0] != s.batch || yd[1] != s.maps) return false;
  WindowGeom& g = s.g;
  g.nsp = nsp;
  g.in.assign(xd.begin() + 2, xd.end());
  g.out.assign(yd.begin() + 2, yd.end());
  g.kernel.assign(wd.begin() + 2, wd.end());
  if (!kernel_shape_.empty() && kernel_shape_ != g.kernel) return false;
  g.strides = strides_.empty() ? std::vector<int64_t>(nsp, 1) : strides_;
  g.dilations = dilations_.empty() ? std::vector<int64_t>(nsp, 1) : dilations_;
  const std::vector<int64_t> out_pad = out_pad_.empty() ? std::vector<int64_t>(nsp, 0) : out_pad_;
  if (g.strides.size() != nsp || g.dilations.size() != nsp || out_pad.size() != nsp) return false;
  if (!pads_.empty() && pads_.size() != 2 * nsp) return false;
  g.pad_begin.assign(nsp, 0);
  for (size_t d = 0; d < nsp; ++d) {
    if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1) return false;
    const int64_t ek = (g.kernel[d] - 1) * g.dilations[d] + 1;
    if (explicit_shape_ || auto_pad_ == "SAME_UPPER" || auto_pad_ == "SAME_LOWER") {
      // As the reference: total may be negative; the halving rounds toward -inf.
      const int64_t total = g.strides[d] * (g.in[d] - 1) + out_pad[d] + ek - g.out[d];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      g.pad_begin[d] = auto_pad_ == "SAME_UPPER" ? half : total - half;
    } else if (auto_pad_ == "NOTSET" && !pads_.empty()) {
      g.pad_begin[d] = pads_[d];
    }
  }
  set_sizes(g);
  s.kdepth = s.cg;
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.dtype() != DType::kFloat || b.numel() != s.maps) return false;
  }
  return true;
}

void ConvTransposeKernel::run(KernelContext& ctx) const {
  ConvShape s;
  if (!shape_of(ctx, s)) {
    reference_(ctx);
    return;
  }
  Tensor& yt = ctx.output(0);
  if (yt.numel() == 0) return;
  const WindowGeom& g = s.g;
  const float* x = ctx.input(0).data<float>();
  const float* bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  float* y = yt.data<float>();
  const int64_t ks = g.kernel_size, cg = s.cg, mg = s.mg, IS = g.in_size, OS = g.out_size;
  std::vector<float> local;
  if (!w_const_) local = transpose_weights(ctx.input(1).data<float>(), s.group, cg, mg, ks);
  const float* wt = w_const_ ? wt_.data() : local.data();
  const int64_t threads = ctx.pool() ? ctx.pool()->size() : 1;
  const int64_t units = s.batch * s.group;
  int64_t per = mg;  // output channels per task
  if (threads > 1 && units < 3 * threads) {
    const int64_t parts = std::min(mg, (3 * threads + units - 1) / units);
    per = (mg + parts - 1) / parts;
  }
  const int64_t mblocks = (mg + per - 1) / per;
  const int64_t nt = std::clamp(kColFloats / std::max<int64_t>(per * ks, 1), int64_t(16),
                                std::max<int64_t>(IS, 16));
  const size_t nsp = g.nsp, last = nsp - 1;
  // The scatter walks input positions and writes output positions: the forward
  // convolution's gather with in and out swapped.
  WindowGeom sg = g;
  sg.in = g.out;
  sg.out = g.in;
  const std::vector<int64_t> koffs = kernel_offsets(g);
  const int64_t out_last = g.out[last], s_last = g.strides[last], p_last = g.pad_begin[last];
  const double work = static_cast<double>(s.batch) * static_cast<double>(s.maps * ks) *
                      static_cast<double>(IS) * static_cast<double>(cg);
  conv_parallel(ctx.pool(), units * mblocks, work, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> col, scratch;
    if (static_cast<int64_t>(col.size()) < per * ks * nt)
      col.resize(static_cast<size_t>(per * ks * nt));
    Segments seg;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t mb = t % mblocks, u = t / mblocks, gi = u % s.group, n = u / s.group;
      const int64_t c0 = mb * per, c1 = std::min(mg, c0 + per);
      const float* xg = x + (n * s.channels + gi * cg) * IS;
      float* yg = y + (n * s.maps + gi * mg) * OS;
      for (int64_t m = c0; m < c1; ++m)
        std::fill(yg + m * OS, yg + (m + 1) * OS, bias ? bias[gi * mg + m] : 0.0f);
      const float* wg = wt + gi * mg * ks * cg;
      for (int64_t j0 = 0; j0 < IS; j0 += nt) {
        poll_cancel();
        const int64_t cols = std::min(nt, IS - j0);
        gemm_rows_in_place(cg, ConvA{wg, cg, nullptr, 0}, c0 * ks, c1 * ks, xg + j0, IS, cols,
                           col.data(), cols,
                           nullptr, scratch);
        tile_segments(sg, j0, cols, seg);
        const size_t nseg = seg.jj0.size();
        for (int64_t m = c0; m < c1; ++m) {
          float* ym = yg + m * OS;
          for (int64_t k = 0; k < ks; ++k) {
            const float* cr = col.data() + ((m - c0) * ks + k) * cols;
            const int64_t* ko = koffs.data() + k * static_cast<int64_t>(nsp);
            for (size_t si = 0; si < nseg; ++si) {
              const int64_t row = flat_index(seg.base.data() + si * last, ko, g.out, last);
              if (row < 0) continue;
              float* yr = ym + row * out_last;
              const int64_t jj0 = seg.jj0[si], len = seg.len[si];
              int64_t ci = seg.o_last[si] * s_last - p_last + ko[last];
              // Columns i with 0 <= ci + i * s_last < out_last.
              int64_t lo = ci >= 0 ? 0 : (-ci + s_last - 1) / s_last;
              int64_t hi = out_last - ci <= 0 ? 0 : (out_last - ci + s_last - 1) / s_last;
              lo = std::min(lo, len);
              hi = std::clamp(hi, lo, len);
              const float* src = cr + jj0;
              if (s_last == 1) {
                for (int64_t i = lo; i < hi; ++i) yr[ci + i] += src[i];
              } else {
                for (int64_t i = lo; i < hi; ++i) yr[ci + i * s_last] += src[i];
              }
            }
          }
        }
      }
    }
  });
}

std::unique_ptr<Kernel> make_conv_transpose(const KernelInit& init) {
  auto k = std::make_unique<ConvTransposeKernel>(init);
  if (!k->init(init)) return nullptr;
  return k;
}

}  // namespace

void register_conv_transpose(Registry& r) {
  r.add_optimized("", "ConvTranspose", 1, 1000, {DType::kFloat}, make_conv_transpose);
}

}  // namespace onyx::kernels::cpu
