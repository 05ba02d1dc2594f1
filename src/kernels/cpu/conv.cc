// The optimized float Conv / ai.onyx FusedConv kernel (see conv.h): attributes parsed and
// W packed once at planning; per run the geometry of the actual input shape picks the
// algorithm. Shapes or attributes it does not take, and invalid ones, go to the reference
// kernel, which computes them or reports what is wrong.
#include "kernels/cpu/conv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/mmap_file.h"
#include "kernels/cpu/conv_pointwise_t.h"
#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"
#include "simd/depthwise.h"
#include "simd/conv_cv.h"
#include "simd/gemm_conv.h"

namespace onyx::kernels::cpu {

namespace {
/// W is packed at planning when at most this big (see conv.h): the layers of mobile
/// networks and DenseNet, ResNet-50's 1 MiB 1x1 layers at 14x14 and SqueezeNet's 2 MB
/// classifier are; ResNet-50's 2-8 MiB layers keep reading W in place (packing them too
/// gained nothing more and took its peak RSS near 0.8x onnxruntime's). Packing the 1-2 MiB
/// band, on an Intel Xeon (family 6 model 207) core, in-process A/B: ResNet-50 0.957x at 1
/// thread and 0.967x at 2, SqueezeNet's classifier (512 -> 1000 at 13x13) 0.935x, the whole
/// model 0.985x; on a Zen 5 core ResNet-50's 1 MiB layers had measured 1.02-1.035x.
constexpr size_t kPackMaxBytes = size_t(2) << 20;

bool all_are(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

/// Winograd takes the shape, 2-D 3x3, rather than conv_cv. Alone, Winograd beats conv_cv
/// there from 64 output channels on (256 -> 256 at 14x14, 0.98-1.03 against 1.27 ms;
/// DenseNet's 128 -> 32 goes the other way, 0.14 against 0.08 ms). But its weights are 4x
/// W's, and in a model, where the layers before have pushed them out of the caches, the
/// largest (256 -> 256: 9.4 MB against 2.4) are streamed from memory on every run: in
/// ResNet-18 and ResNet-50 (onyx bench, 4 interleaved processes each, medians in ms)
/// conv_cv on their 14x14 layers took 2 threads from 12.5-14.0 to 12.0-12.9 and from
/// 28.2-35.6 to 29.0-31.0, and left 1 thread where it was (19.7-23.2 against 20.2-23.5,
/// 48.8-50.1 against 46.2-54.0). SqueezeNet's 48 -> 192 and 64 -> 256 at 13x13 (1.3 and
/// 2.4 MB) stay on Winograd: conv_cv took their 1 thread from 4.4-5.4 to 4.7-5.3 ms.
bool wino_candidate(const ConvShape& s) {
  return winograd_suits(s) && !(s.cg * s.mg >= 256 * 256 && s.g.out_size <= 196);
}
}  // namespace

double conv_macs(const ConvShape& s) {
  return double(s.batch) * double(s.maps) * double(s.g.out_size) * double(s.kdepth);
}

void conv_parallel(ThreadPool* pool, int64_t n, double work,
                   const std::function<void(int64_t, int64_t)>& fn) {
  // Below about a million multiply-adds (tens of microseconds) waking the workers costs
  // more than it saves.
  if (pool && pool->size() > 1 && n > 1 && work >= double(1 << 20)) {
    pool->parallel_for(n, fn);
  } else if (n > 1 && work >= double(1 << 28)) {
    // A quarter of a second or more on one thread: in up to 64 parts, polling the run's
    // terminate flag between them (base/cancel.h) as the pool does between its chunks.
    const int64_t parts = std::min<int64_t>(n, 64), per = (n + parts - 1) / parts;
    for (int64_t b = 0; b < n; b += per) {
      poll_cancel();
      fn(b, std::min(n, b + per));
    }
  } else {
    fn(0, n);
  }
}

namespace {

/// The activation of a FusedConv node, or false for one this kernel does not know.
bool parse_activation(const ir::Node& node, simd::Activation& act) {
  const std::string name = node.attr_s("activation", "");
  const std::vector<float> p = node.attr_floats("activation_params");
  auto param = [&](size_t i, float def) { return i < p.size() ? p[i] : def; };
  using simd::Act;
  if (name.empty()) {
    act.kind = Act::kNone;
  } else if (name == "Relu") {
    act.kind = Act::kRelu;
  } else if (name == "Clip") {
    act.kind = Act::kClip;
    act.alpha = param(0, std::numeric_limits<float>::lowest());
    act.beta = param(1, std::numeric_limits<float>::max());
  } else if (name == "LeakyRelu") {
    act.kind = Act::kLeakyRelu;
    act.alpha = param(0, 0.01f);
  } else if (name == "HardSigmoid") {
    act.kind = Act::kHardSigmoid;
    act.alpha = param(0, 0.2f);
    act.beta = param(1, 0.5f);
  } else if (name == "HardSwish") {
    act.kind = Act::kHardSwish;
  } else if (name == "Sigmoid") {
    act.kind = Act::kSigmoid;
  } else if (name == "Tanh") {
    act.kind = Act::kTanh;
  } else if (name == "SiLU") {
    act.kind = Act::kSiLU;
  } else if (name == "Gelu") {
    act.kind = Act::kGelu;
  } else if (name == "GeluTanh") {
    act.kind = Act::kGeluTanh;
  } else {
    return false;
  }
  return true;
}

enum class Algo { kIm2col, kWinograd, kDepthwise, kDirect, kCv };

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelInit& init) : reference_(init.reference) {}

  /// Reads the attributes and prepacks a constant W; false: decline the node.
  bool init(const KernelInit& init);
  void run(KernelContext& ctx) const override;
  std::string_view name() const override { return "cpu.conv"; }
  bool overwrites_outputs() const override { return true; }

 private:
  /// The geometry of this call, or false when the reference should take it (a shape or
  /// attribute this kernel does not handle, or an invalid one the reference reports).
  bool shape_of(KernelContext& ctx, ConvShape& s) const;
  /// The geometry of X, W, Y dims (NCHW order), as shape_of resolves it; false when they
  /// do not fit together.
  bool shape_from_dims(const Dims& xd, const Dims& wd, const Dims& yd, ConvShape& s) const;
  /// The geometry at planning when X's and Y's shapes are static but for the batch (1 then).
  bool static_shape(const KernelInit& init, ConvShape& s) const;
  Algo choose(const ConvShape& s, bool w_const) const;
  const float* packed() const { return packed_.empty() ? nullptr : packed_.data(); }
  /// Strides and dilations 1, no pads: a 1x1 W makes it a pointwise layer (one GEMM).
  bool unit_window_unpadded() const {
    return all_are(strides_, 1) && all_are(dilations_, 1) && all_are(pads_, 0) &&
           (auto_pad_ == "NOTSET" || auto_pad_ == "VALID");
  }
  /// As unit_window_unpadded but at any strides (with a 1x1 W: a strided pointwise layer).
  bool unit_window_strided_unpadded() const {
    return all_are(dilations_, 1) && all_are(pads_, 0) && (auto_pad_ == "NOTSET" || auto_pad_ == "VALID");
  }

  KernelFn reference_;
  bool fused_ = false;
  /// FusedConv with channels_last = 1: X, Z, Y are [N, H, W, C] (src/opt/channels_last.cc
  /// makes them for pointwise and depthwise layers; other shapes go to the reference).
  bool channels_last_ = false;
  int64_t group_ = 1;
  std::vector<int64_t> kernel_shape_, strides_, dilations_, pads_;
  std::string auto_pad_;
  simd::Activation act_;
  bool w_const_ = false;
  Tensor w_;  ///< a constant W, sharing the model's buffer: the GEMM and depthwise read it
  bool has_wino_ = false;
  WinogradW wino_;
  std::vector<float> packed_;  ///< W per group packed for the GEMM (simd::conv_pack_a)
  /// A pointwise W^T packed for the transposed GEMM (conv_pointwise_t.h): made instead of
  /// packed_ when the static output shape is a small image.
  std::unique_ptr<PointwiseT> pwt_;
  /// W packed for the channel-vector direct convolution (simd::conv_cv_pack), made when
  /// the static output shape takes it (conv_cv.cc).
  simd::CvPacked cv_packed_;
  std::vector<float> dw_blocked_;  ///< a depthwise W by channel block (simd::depthwise_pack_blocked)
  /// A pointwise W^T [cg x gemv_ld_] for the GEMV of a 1x1 image (squeeze-excite layers;
  /// simd::conv_gemv_t), made instead of packed_ when the static output is 1x1 and the
  /// layer widens (maps >= cg: 48 -> 1152 took 42 us as dot products, whose horizontal sums
  /// dominate over 3 vectors of depth, and ~9 us so; 1152 -> 48 stays with them).
  std::vector<float> gemv_wt_;
  int64_t gemv_ld_ = 0;
};

/// The 1x1 convolution of 1x1 images with W^T made at planning: per image, y = W x as
/// vectors along the output channels, threads over blocks of channels (W is rarely still
/// cached in a run, so the threads share its reading: see conv_im2col_gemm's GEMV).
void conv_gemv_1x1(const ConvShape& s, const float* wt, int64_t ld, const ConvIO& io, ThreadPool* pool) {
  const int64_t M = s.maps, K = s.cg, L = simd::conv_gemm_lanes();
  const double work = 16.0 * double(M) * double(K);
  const int64_t blocks = (M + 4 * L - 1) / (4 * L);
  const int64_t per = (M + blocks - 1) / blocks;
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* x = io.x + n * K;
    float* y = io.y + n * M;
    conv_parallel(pool, blocks, work, [&](int64_t b0, int64_t b1) {
      const int64_t m0 = std::min(M, b0 * per), m1 = std::min(M, b1 * per);
      simd::Epilogue ep;
      ep.bias = io.bias ? io.bias + m0 : nullptr;
      ep.z = io.z ? io.z + n * M + m0 : nullptr;
      ep.ldz = 1;
      ep.act = io.act;
      simd::conv_gemv_t(K, wt, ld, m0, m1, x, y + m0, &ep);
    });
  }
}

/// 1x1, stride 1, unpadded, undilated, one group, input extent = output extent.
bool pointwise_geometry(const ConvShape& s) {
  if (s.group != 1 || s.g.kernel_size != 1) return false;
  for (size_t d = 0; d < s.g.nsp; ++d)
    if (s.g.strides[d] != 1 || s.g.dilations[d] != 1 || s.g.pad_begin[d] != 0 || s.g.in[d] != s.g.out[d])
      return false;
  return true;
}

/// A pointwise layer whose W is too large to pack for the GEMM (over kPackMaxBytes) and
/// whose small image suits the transposed GEMM on W^T (pointwise_t_suits): W^T is made
/// for it instead of conv_cv's packed W. ResNet-50's 4 MiB layers at 7x7 (512 -> 2048,
/// 2048 -> 512) on a Zen 3 core (AVX2), in-process A/B: 0.78x of conv_cv's time at 1
/// thread, 0.75-0.89x at 2, where the GEMM with W read in place was even with conv_cv
/// (1.85 ms against onnxruntime's 1.16); the whole model 0.967x / 0.976x.
/// The same for a strided 1x1 layer reading no padding (ResNet-50's 1024 -> 2048
/// shortcut to 7x7, 8 MiB: 1.5x onnxruntime's time per node on conv_cv), whose X is
/// gathered first.
bool large_pointwise_t(const ConvShape& s) {
  const double w_bytes = double(s.maps) * double(s.cg) * sizeof(float);
  return (pointwise_geometry(s) || (s.group == 1 && is_strided_pointwise(s.g))) &&
         w_bytes > double(kPackMaxBytes) && pointwise_t_suits(s.g.out_size, s.maps, s.cg);
}

bool ConvKernel::init(const KernelInit& init) {
  const ir::Node& node = init.node;
  fused_ = node.op_type == "FusedConv";
  if (fused_ && !parse_activation(node, act_)) return false;
  channels_last_ = fused_ && node.attr_i("channels_last", 0) != 0;
  group_ = node.attr_i("group", 1);
  kernel_shape_ = node.attr_ints("kernel_shape");
  strides_ = node.attr_ints("strides");
  dilations_ = node.attr_ints("dilations");
  pads_ = node.attr_ints("pads");
  auto_pad_ = node.attr_s("auto_pad", "NOTSET");
  if (auto_pad_ != "NOTSET" && auto_pad_ != "VALID" && auto_pad_ != "SAME_UPPER" &&
      auto_pad_ != "SAME_LOWER")
    return false;
  if (group_ < 1) return false;
  const Tensor* w = init.is_constant(1) ? init.constants[1] : nullptr;
  if (!w) return !channels_last_;  // packed on every run
  if (w->dtype() != DType::kFloat || w->rank() < 3 || w->dim(0) % group_ != 0) return false;
  w_const_ = true;
  w_ = *w;
  const Dims& wd = w_.dims();
  const int64_t maps = wd[0], cg = wd[1], mg = maps / group_;
  const float* wp = w_.data<float>();
  const bool is2d = wd.size() == 4;
  if (channels_last_ && !is2d) return false;
  if (channels_last_ && !(cg == 1 && mg == 1)) {
    // Channels last, not depthwise: a pointwise layer runs as one GEMM on W^T, except over
    // 1x1 images, whose NHWC and NCHW layouts are the same bytes (the paths below).
    if (group_ != 1 || wd[2] != 1 || wd[3] != 1 || !unit_window_unpadded()) return false;
    bool one_pixel = false;
    if (init.output_types.size() > 0 && init.output_types[0] && init.output_types[0]->has_shape) {
      const ir::Shape& ys = init.output_types[0]->shape;
      one_pixel = ys.size() == 4 && ys[1].known() && ys[1].value == 1 && ys[2].known() && ys[2].value == 1;
    }
    if (!one_pixel) {
      pwt_ = PointwiseT::make(wp, maps, cg, node.attr_s("activation", ""),
                              node.attr_floats("activation_params"));
      return pwt_ != nullptr;
    }
  }
  if (is2d && cg == 1) {  // depthwise: W laid out once for the channel-blocked kernel
    if (mg == 1) dw_blocked_ = simd::depthwise_pack_blocked(wp, maps, wd[2] * wd[3]);
    return true;
  }

  // The channel-vector direct convolution (conv_cv.cc) when the static shape (but for the
  // batch) takes it: its packed W is then the only copy made (no Winograd or GEMM W).
#ifndef __EMSCRIPTEN__
  {
    ConvShape st;
    if (is2d && cg > 1 && static_shape(init, st) && cv_suits(st) && cv_preferred(st) &&
        !(st.mg > 32 && wino_candidate(st)) && !large_pointwise_t(st)) {
      const int64_t kd = w_.numel() / maps, per = simd::conv_cv_pack_size(mg, kd);
      cv_packed_.resize(static_cast<size_t>(per * group_));
      for (int64_t gi = 0; gi < group_; ++gi)
        simd::conv_cv_pack(wp + gi * mg * kd, mg, kd, cv_packed_.data() + gi * per);
      // W itself is read again only by a run whose shape takes another path: its pages of
      // the model file leave the resident set (ResNet-50: 60 MB of 3x3 and 1x1 layers at
      // 7x7 and 14x14, whose copies took its peak RSS from 248 to 307 MB).
      release_mapped_pages(wp, static_cast<size_t>(w_.numel()) * sizeof(float));
      return true;
    }
  }
#endif
  // Winograd's 4x larger weights are made only for the kernels it may take.
  const bool unit = all_are(strides_, 1) && all_are(dilations_, 1);
  if (is2d && wd[2] == 3 && wd[3] == 3 && unit) {
    ConvShape probe;
    probe.g.nsp = 2;
    probe.g.kernel = {3, 3};
    probe.g.strides = {1, 1};
    probe.g.dilations = {1, 1};
    probe.g.out = {64, 64};  // the shape test below is redone per run
    probe.cg = cg;
    probe.mg = mg;
    if (winograd_suits(probe)) {
      // With a static input shape, only when that shape takes it.
      const ir::TypeInfo* xt = init.input_type(0);
      bool wanted = true;
      if (xt && xt->is_tensor() && xt->has_shape && xt->shape.size() == 4 &&
          init.output_types.size() > 0 && init.output_types[0] && init.output_types[0]->has_shape &&
          init.output_types[0]->shape.size() == 4) {
        const ir::Shape& ys = init.output_types[0]->shape;
        if (ys[2].known() && ys[3].known()) {
          probe.g.out = {ys[2].value, ys[3].value};
          wanted = winograd_suits(probe);
        }
      }
      if (wanted) {
        wino_ = winograd_weights(wp, group_, mg, cg);
        has_wino_ = true;
      }
    }
  }
  // The GEMM's packed A (conv.h), unless every shape goes to Winograd or to the GEMV of a
  // 1x1 image (static output shape known).
  bool gemv_only = false;
  if (init.output_types.size() > 0 && init.output_types[0] && init.output_types[0]->has_shape) {
    const ir::Shape& ys = init.output_types[0]->shape;
    // (Channels last: the image's dims are 1 and 2; only 1x1 images get here.)
    gemv_only = channels_last_ ||
                (ys.size() >= 3 && std::all_of(ys.begin() + 2, ys.end(), [](const ir::Dim& d) {
                   return d.known() && d.value == 1;
                 }));
  }
  // A small static output image of a pointwise layer: W^T for the transposed GEMM instead
  // (the same bytes as the packed A it replaces; W's own pages are released when it is
  // larger than the GEMM would pack, as for ResNet-50's 4 MiB layers at 7x7, see
  // large_pointwise_t). In a model (cold caches) this orientation streams W once per run
  // instead of once per panel of positions: EfficientNet-B0's 1152 -> 192 layers at 7x7
  // 0.29 -> 0.20 ms.
  const size_t w_bytes = static_cast<size_t>(w_.numel()) * sizeof(float);
  const bool small_w = w_bytes <= kPackMaxBytes;
  if (group_ == 1 && w_.numel() == maps * cg && !gemv_only &&
      init.output_types.size() > 0 && init.output_types[0] && init.output_types[0]->has_shape) {
    const ir::Shape& ys = init.output_types[0]->shape;
    int64_t os = 1;
    bool known = ys.size() >= 3;
    for (size_t d = 2; known && d < ys.size(); ++d) {
      known = ys[d].known();
      if (known) os *= ys[d].value;
    }
    if (known && pointwise_t_suits(os, maps, cg) &&
        (unit_window_unpadded() || (!small_w && unit_window_strided_unpadded()))) {
      pwt_ = PointwiseT::make(wp, maps, cg, node.attr_s("activation", ""),
                              node.attr_floats("activation_params"));
      // W^T is the copy every run of this shape reads: W's pages of the model file leave
      // the resident set (ResNet-50's 4 MiB layers: the same bytes as the packed copy
      // conv_cv would have made).
      if (pwt_ && !small_w) release_mapped_pages(wp, w_bytes);
    }
  }
  if (gemv_only && group_ == 1 && small_w && w_.numel() == maps * cg && maps >= cg) {
    gemv_ld_ = simd::conv_gemv_t_stride(maps);
    gemv_wt_.assign(static_cast<size_t>(cg * gemv_ld_), 0.0f);
    for (int64_t m = 0; m < maps; ++m)
      for (int64_t c = 0; c < cg; ++c) gemv_wt_[static_cast<size_t>(c * gemv_ld_ + m)] = wp[m * cg + c];
  }
  if (!has_wino_ && !gemv_only && !pwt_ && small_w) {
    const int64_t kd = w_.numel() / maps, per = simd::conv_pack_a_size(mg, kd);
    packed_.resize(static_cast<size_t>(per * group_));
    for (int64_t gi = 0; gi < group_; ++gi)
      simd::conv_pack_a(wp + gi * mg * kd, kd, mg, kd, packed_.data() + gi * per);
    // Every path reads the packed copy from now on: W's pages of the model file (when it
    // is read in place there) leave the resident set, as for conv_cv above.
    release_mapped_pages(wp, w_bytes);
  }
  return true;
}

/// The depthwise kernel's arguments for a 2-D convolution with one input channel per group.
simd::DepthwiseArgs depthwise_args(const ConvShape& s, const ConvIO& io, const float* w) {
  const WindowGeom& g = s.g;
  simd::DepthwiseArgs a;
  a.batch = s.batch;
  a.channels = s.channels;
  a.mult = s.mg;
  a.x = io.x;
  a.ih = g.in[0];
  a.iw = g.in[1];
  a.w = w;
  a.kh = g.kernel[0];
  a.kw = g.kernel[1];
  a.sh = g.strides[0];
  a.sw = g.strides[1];
  a.dh = g.dilations[0];
  a.dw = g.dilations[1];
  a.ph = g.pad_begin[0];
  a.pw = g.pad_begin[1];
  a.y = io.y;
  a.oh = g.out[0];
  a.ow = g.out[1];
  a.ep.bias = io.bias;
  a.ep.z = io.z;
  a.ep.act = io.act;
  return a;
}

bool ConvKernel::shape_from_dims(const Dims& xd, const Dims& wd, const Dims& yd, ConvShape& s) const {
  if (xd.size() < 3 || wd.size() != xd.size() || yd.size() != xd.size()) return false;
  const size_t nsp = xd.size() - 2;
  s.batch = xd[0];
  s.channels = xd[1];
  s.maps = wd[0];
  s.group = group_;
  if (s.maps % group_ != 0 || s.channels != wd[1] * group_) return false;
  if (yd[0] != s.batch || yd[1] != s.maps) return false;
  s.cg = wd[1];
  s.mg = s.maps / group_;
  WindowGeom& g = s.g;
  g.nsp = nsp;
  g.in.assign(xd.begin() + 2, xd.end());
  g.out.assign(yd.begin() + 2, yd.end());
  g.kernel.assign(wd.begin() + 2, wd.end());
  if (!kernel_shape_.empty() && kernel_shape_ != g.kernel) return false;
  g.strides = strides_.empty() ? std::vector<int64_t>(nsp, 1) : strides_;
  g.dilations = dilations_.empty() ? std::vector<int64_t>(nsp, 1) : dilations_;
  if (g.strides.size() != nsp || g.dilations.size() != nsp) return false;
  for (size_t d = 0; d < nsp; ++d)
    if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1) return false;
  if (!pads_.empty() && pads_.size() != 2 * nsp) return false;
  g.pad_begin.assign(nsp, 0);
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t ek = (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t want;
    if (auto_pad_ == "SAME_UPPER" || auto_pad_ == "SAME_LOWER") {
      g.pad_begin[d] = same_pads(g, d, auto_pad_ == "SAME_UPPER").first;
      want = (g.in[d] + g.strides[d] - 1) / g.strides[d];
    } else {
      int64_t pb = 0, pe = 0;
      if (auto_pad_ == "NOTSET" && !pads_.empty()) {
        pb = pads_[d];
        pe = pads_[d + nsp];
      }
      if (pb < 0 || pe < 0) return false;
      g.pad_begin[d] = pb;
      const int64_t span = g.in[d] + pb + pe - ek;
      if (span < 0) return false;
      want = span / g.strides[d] + 1;
    }
    if (g.out[d] != want) return false;
  }
  set_sizes(g);
  s.kdepth = s.cg * g.kernel_size;
  return true;
}

bool ConvKernel::static_shape(const KernelInit& init, ConvShape& s) const {
  const ir::TypeInfo* xt = init.input_type(0);
  if (!w_const_ || channels_last_ || !xt || !xt->is_tensor() || !xt->has_shape) return false;
  if (init.output_types.empty() || !init.output_types[0] || !init.output_types[0]->has_shape)
    return false;
  auto dims = [](const ir::Shape& sh, Dims& d) {
    for (const ir::Dim& e : sh) {
      if (!e.known() && !d.empty()) return false;
      d.push_back(e.known() ? e.value : 1);  // a symbolic batch: the choices do not depend on it
    }
    return true;
  };
  Dims xd, yd;
  if (!dims(xt->shape, xd) || !dims(init.output_types[0]->shape, yd)) return false;
  return shape_from_dims(xd, w_.dims(), yd, s);
}

bool ConvKernel::shape_of(KernelContext& ctx, ConvShape& s) const {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return false;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.dtype() != DType::kFloat || w.dtype() != DType::kFloat) return false;
  if (ctx.num_outputs() < 1 || !ctx.has_output(0)) return false;
  const Tensor& y = ctx.output(0);
  if (y.dtype() != DType::kFloat) return false;
  Dims xd = x.dims();
  const Dims& wd = w.dims();
  Dims yd = y.dims();
  if (channels_last_) {  // the geometry in NCHW order
    if (xd.size() != 4 || yd.size() != 4) return false;
    xd = {xd[0], xd[3], xd[1], xd[2]};
    yd = {yd[0], yd[3], yd[1], yd[2]};
  }
  if (w_const_ && wd != w_.dims()) return false;
  if (!shape_from_dims(xd, wd, yd, s)) return false;
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.dtype() != DType::kFloat || b.numel() != s.maps) return false;
  }
  if (fused_ && ctx.has_input(3)) {
    const Tensor& z = ctx.input(3);
    if (z.dtype() != DType::kFloat || z.dims() != y.dims()) return false;
  }
  return true;
}

namespace {

// The depthwise and direct kernels copy the padded input rows of a block of output rows
// into phase planes, so their scratch grows with the strides and dilations rather than
// with the tensors: strides of 10^9 over a 5 x 5 image asked the depthwise kernel for
// 32 GB (fuzz finding 19). Such shapes (few outputs far apart, or taps spread over a huge
// padding) go to im2col, whose buffer is one output tile by the weights' taps. The
// estimates are in double: the dims may be near 2^63.
bool scratch_fits(const ConvShape& s, double floats) {
  return floats <= std::max(double(1 << 22), 4.0 * double(s.cg) * double(s.g.in_size));
}

double depthwise_scratch(const WindowGeom& g) {
  const double kh = double(g.kernel[0]), kw = double(g.kernel[1]), sh = double(g.strides[0]),
               sw = double(g.strides[1]), dh = double(g.dilations[0]), dw = double(g.dilations[1]);
  const double pl = double(g.out[1]) + std::floor((kw - 1) * dw / sw);  // depthwise.cc's pl
  const double extra = std::floor((kh - 1) * dh / sh);
  const double rows = std::min(double(g.out[0]), std::max(1.0, std::floor(4096.0 / pl)));
  return sh * sw * (rows + extra) * pl;
}

double direct_scratch(const ConvShape& s) {
  const WindowGeom& g = s.g;
  const double nr = double(simd::conv_gemm_nr()), sw = double(g.strides[1]);
  const double pl = std::ceil(double(g.out[1]) / nr) * nr +
                    std::floor(double(g.kernel[1] - 1) * double(g.dilations[1]) / sw) + 1;
  const double rows = double(g.kernel[0] - 1) * double(g.dilations[0]) + 1;  // one output row
  return double(s.cg) * rows * pl * sw;
}

}  // namespace

Algo ConvKernel::choose(const ConvShape& s, bool w_const) const {
  if (s.g.nsp == 2 && s.cg == 1 && scratch_fits(s, depthwise_scratch(s.g))) return Algo::kDepthwise;
  if (w_const && !cv_packed_.empty() && cv_suits(s) && cv_preferred(s) &&
      !(s.mg > 32 && wino_candidate(s)))
    return Algo::kCv;
  if (w_const && has_wino_ && winograd_suits(s)) return Algo::kWinograd;
  if (direct_suits(s) && scratch_fits(s, direct_scratch(s))) return Algo::kDirect;
  return Algo::kIm2col;
}

void ConvKernel::run(KernelContext& ctx) const {
  ConvShape s;
  if (!shape_of(ctx, s)) {
    reference_(ctx);
    return;
  }
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  ConvIO io;
  io.x = ctx.input(0).data<float>();
  io.bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  io.z = fused_ && ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  io.y = y.data<float>();
  io.act = act_;
  ThreadPool* pool = ctx.pool();
  if (s.kdepth == 0)  // as the reference refuses it (tests/unit/hostile_test.cc)
    ctx.fail("X {} has no input channels per group (W {}), but the output {} is not empty",
             dims_str(ctx.input(0).dims()), dims_str(ctx.input(1).dims()), dims_str(y.dims()));
  const float* wp = w_const_ ? w_.data<float>() : ctx.input(1).data<float>();
  if (channels_last_ && !(s.g.in_size == 1 && s.g.out_size == 1)) {
    if (pwt_ && pointwise_geometry(s) && s.maps == pwt_->maps() && s.cg == pwt_->channels()) {
      pwt_->run_nhwc(s.batch * s.g.out_size, io.x, io.bias, io.z, io.y, pool);
      return;
    }
    if (s.g.nsp == 2 && s.cg == 1 && s.mg == 1 && !dw_blocked_.empty()) {
      simd::DepthwiseArgs a = depthwise_args(s, io, wp);
      a.nhwc = true;
      a.w_blocked = dw_blocked_.data();
      if (simd::depthwise_nhwc_suits(a)) {
        simd::depthwise_conv2d(a, pool);
        return;
      }
    }
    reference_(ctx);
    return;
  }
  if (pwt_ && pointwise_geometry(s) && s.maps == pwt_->maps() && s.cg == pwt_->channels() &&
      pointwise_t_suits(s.g.out_size, s.maps, s.cg)) {
    pwt_->run(s.batch, io.x, s.g.out_size, io.bias, io.z, io.y, pool);
    return;
  }
  if (pwt_ && s.group == 1 && is_strided_pointwise(s.g) && s.maps == pwt_->maps() &&
      s.cg == pwt_->channels() && pointwise_t_suits(s.g.out_size, s.maps, s.cg)) {
    // The elements read, compact (a quarter of X at stride 2), then the transposed GEMM.
    pwt_->run(s.batch, gather_strided_x(s, io.x, pool), s.g.out_size, io.bias, io.z, io.y, pool);
    return;
  }
  // (gemv_wt_ is made from the constant W, whose dims shape_of has matched.)
  if (!gemv_wt_.empty() && pointwise_geometry(s) && s.g.out_size == 1) {
    conv_gemv_1x1(s, gemv_wt_.data(), gemv_ld_, io, pool);
    return;
  }
  switch (choose(s, w_const_)) {
    case Algo::kDepthwise: {
      simd::DepthwiseArgs a = depthwise_args(s, io, wp);
      if (!dw_blocked_.empty() && s.mg == 1) a.w_blocked = dw_blocked_.data();
      simd::depthwise_conv2d(a, pool);
      return;
    }
    case Algo::kWinograd:
      conv_winograd(s, wino_, io, pool);
      return;
    case Algo::kDirect:
      conv_direct(s, wp, packed(), io, pool);
      return;
    case Algo::kCv:
      conv_cv_run(s, cv_packed_.data(), io, pool);
      return;
    case Algo::kIm2col:
      conv_im2col_gemm(s, wp, packed(), io, pool);
      return;
  }
}

std::unique_ptr<Kernel> make_conv(const KernelInit& init) {
  auto k = std::make_unique<ConvKernel>(init);
  if (!k->init(init)) return nullptr;
  return k;
}

}  // namespace

void register_conv(Registry& r) {
  r.add_optimized("", "Conv", 1, 1000, {DType::kFloat}, make_conv);
  r.add_optimized("ai.onyx", "FusedConv", 1, 1000, {DType::kFloat}, make_conv);
  register_conv_transpose(r);
}

}  // namespace onyx::kernels::cpu
