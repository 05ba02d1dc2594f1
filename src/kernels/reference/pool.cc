// Reference kernels of the pool family: MaxPool (with Indices), AveragePool, LpPool,
// GlobalMaxPool, GlobalAveragePool, GlobalLpPool, MaxUnpool, MaxRoiPool.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "kernels/reference/dispatch.h"
#include "kernels/reference/window.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// Reads the pooling attributes for X and Y (Y's shape came from the shape function)
/// and resolves auto_pad into explicit begin/end pads.
WindowGeom pool_geom(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  WindowGeom g;
  const Dims& xd = x.dims();
  if (xd.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got {}", dims_str(xd));
  g.nsp = xd.size() - 2;
  const size_t nsp = g.nsp;
  if (y.rank() != xd.size() || y.dim(0) != xd[0] || y.dim(1) != xd[1])
    ctx.fail("output {} does not match X {}", dims_str(y.dims()), dims_str(xd));
  g.in.assign(xd.begin() + 2, xd.end());
  g.out.assign(y.dims().begin() + 2, y.dims().end());
  g.kernel = ctx.attr_ints("kernel_shape");
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (g.kernel.size() != nsp || g.strides.size() != nsp || g.dilations.size() != nsp || pads.size() != 2 * nsp)
    ctx.fail("kernel_shape, strides and dilations need {} values and pads {}", nsp, 2 * nsp);
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  g.pad_begin.assign(nsp, 0);
  g.pad_end.assign(nsp, 0);
  for (size_t i = 0; i < nsp; ++i) {
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1)
      ctx.fail("kernel_shape, strides and dilations must be >= 1");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      std::tie(g.pad_begin[i], g.pad_end[i]) = same_pads(g, i, auto_pad == "SAME_UPPER");
    } else if (auto_pad == "NOTSET") {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + nsp];
    }
  }
  set_sizes(g);
  return g;
}

/// The input positions of every pooling window, shared by all (n, c) planes:
/// window o covers flat[start[o] .. start[o + 1]) (row-major spatial indices of the
/// positions inside the input); padded[o] counts its positions inside input + pads.
struct Windows {
  std::vector<int64_t> flat, start, padded;
};

/// Number of k in [0, n) with lo <= base + k * step < hi (step >= 1).
std::pair<int64_t, int64_t> taps_in(int64_t base, int64_t step, int64_t n, int64_t lo, int64_t hi) {
  // First k with base + k * step >= lo, and one past the last with base + k * step < hi
  // (ceil division written so that a huge step cannot overflow).
  int64_t k0 = base >= lo ? 0 : (lo - base) / step + ((lo - base) % step != 0);
  int64_t k1 = base >= hi ? 0 : (hi - 1 - base) / step + 1;
  k0 = std::min(k0, n);
  k1 = std::clamp(k1, k0, n);
  return {k0, k1};
}

Windows build_windows(const KernelContext& ctx, const WindowGeom& g) {
  // Per axis and output index, the kernel taps that fall inside the input, and how many
  // fall inside input + pads: the windows are their products. Walking these ranges, not
  // every tap, keeps the work to the positions read even when kernel_shape (an attribute,
  // bounded by no tensor) is far larger than the input and mostly padding.
  const size_t nsp = g.nsp;
  std::vector<std::vector<int64_t>> first(nsp), count(nsp), padded(nsp);
  for (size_t d = 0; d < nsp; ++d) {
    for (int64_t o = 0; o < g.out[d]; ++o) {
      const int64_t base = o * g.strides[d] - g.pad_begin[d];
      auto [k0, k1] = taps_in(base, g.dilations[d], g.kernel[d], 0, g.in[d]);
      auto [p0, p1] =
          taps_in(base, g.dilations[d], g.kernel[d], -g.pad_begin[d], g.in[d] + g.pad_end[d]);
      first[d].push_back(k1 > k0 ? base + k0 * g.dilations[d] : 0);
      count[d].push_back(k1 - k0);
      padded[d].push_back(p1 - p0);
    }
  }
  // The windows are products of per-axis ranges, so the taps they list add up to the
  // product of each axis' sum. Listing more than kMaxTaps (1 GiB of offsets) is refused
  // before it starts: a 2048x2048 window slid over a 4096x4096 image lists 1.8e13.
  constexpr int64_t kMaxTaps = int64_t{1} << 27;
  int64_t taps = 1;
  for (size_t d = 0; d < nsp; ++d) {
    int64_t sum = 0;
    for (int64_t c : count[d]) sum += c;
    if (sum > 0 && taps > kMaxTaps / sum)
      ctx.fail("its windows read more than {} input positions in all (kernel_shape {} over {}), "
               "more than this kernel handles",
               kMaxTaps, dims_str(g.kernel), dims_str(g.in));
    taps *= sum;
  }
  Windows w;
  w.flat.reserve(static_cast<size_t>(taps));
  CancelPoll poll;
  std::vector<int64_t> o(nsp, 0), t(nsp, 0), tn(nsp, 0);
  w.start.reserve(static_cast<size_t>(g.out_size) + 1);
  w.padded.reserve(static_cast<size_t>(g.out_size));
  do {
    w.start.push_back(static_cast<int64_t>(w.flat.size()));
    int64_t pad_count = 1;
    bool any = true;
    for (size_t d = 0; d < nsp; ++d) {
      pad_count *= padded[d][static_cast<size_t>(o[d])];
      tn[d] = count[d][static_cast<size_t>(o[d])];
      any = any && tn[d] > 0;
      t[d] = 0;
    }
    w.padded.push_back(pad_count);
    poll(1);
    if (any) {
      do {  // the taps inside the input, row-major as the kernel is numbered
        int64_t f = 0;
        for (size_t d = 0; d < nsp; ++d)
          f = f * g.in[d] + first[d][static_cast<size_t>(o[d])] + t[d] * g.dilations[d];
        w.flat.push_back(f);
      } while (next_index(t, tn));
    }
  } while (next_index(o, g.out));
  w.start.push_back(static_cast<int64_t>(w.flat.size()));
  return w;
}

template <typename T>
void max_pool_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  WindowGeom g = pool_geom(ctx, x, y);
  Tensor* ind = nullptr;
  if (ctx.has_output(1)) {
    ind = &ctx.output(1);
    if (ind->dims() != y.dims() || ind->dtype() != DType::kInt64)
      ctx.fail("Indices output must be int64 with the shape of Y {}", dims_str(y.dims()));
  }
  int64_t storage_order = ctx.attr_i("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) ctx.fail("storage_order must be 0 or 1, got {}", storage_order);
  if (y.numel() == 0) return;
  // Strides of the column-major spatial numbering used when storage_order = 1.
  std::vector<int64_t> cm(g.nsp, 1);
  for (size_t d = 1; d < g.nsp; ++d) cm[d] = cm[d - 1] * g.in[d - 1];
  const int64_t planes = x.dim(0) * x.dim(1);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  int64_t* ip = ind ? ind->data<int64_t>() : nullptr;
  using A = acc_t<T>;
  Windows win = build_windows(ctx, g);
  CancelPoll poll;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xs = xp + pl * g.in_size;
    for (int64_t o = 0; o < g.out_size; ++o) {
      poll(win.start[o + 1] - win.start[o]);
      A best = std::numeric_limits<A>::lowest();
      int64_t at = -1;
      for (int64_t k = win.start[o]; k < win.start[o + 1]; ++k) {
        A v = static_cast<A>(xs[win.flat[k]]);
        // NaN propagates: the first NaN seen wins and stays.
        if (at < 0 || v > best || (v != v && best == best)) {
          best = v;
          at = win.flat[k];
        }
      }
      yp[pl * g.out_size + o] = T(best);
      if (ip) {
        int64_t idx = std::max<int64_t>(at, 0);
        if (storage_order == 1 && at >= 0) {
          // Renumber the row-major spatial index column-major.
          idx = 0;
          int64_t rest = at;
          for (size_t d = g.nsp; d-- > 0;) {
            idx += (rest % g.in[d]) * cm[d];
            rest /= g.in[d];
          }
        }
        ip[pl * g.out_size + o] = pl * g.in_size + idx;
      }
    }
  }
}

void max_pool_kernel(KernelContext& ctx) {
  DType dt = ctx.input(0).dtype();
  if (dt == DType::kInt8)
    max_pool_typed<int8_t>(ctx);
  else if (dt == DType::kUint8)
    max_pool_typed<uint8_t>(ctx);
  else
    dispatch_float(dt, [&](auto tag) { max_pool_typed<typename decltype(tag)::type>(ctx); }, "MaxPool");
}

template <typename T>
void average_pool_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  WindowGeom g = pool_geom(ctx, x, y);
  bool include_pad = ctx.attr_i("count_include_pad", 0) != 0;
  if (y.numel() == 0) return;
  const int64_t planes = x.dim(0) * x.dim(1);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  Windows win = build_windows(ctx, g);
  CancelPoll poll;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xs = xp + pl * g.in_size;
    for (int64_t o = 0; o < g.out_size; ++o) {
      poll(win.start[o + 1] - win.start[o]);
      double sum = 0;
      for (int64_t k = win.start[o]; k < win.start[o + 1]; ++k)
        sum += static_cast<double>(static_cast<acc_t<T>>(xs[win.flat[k]]));
      const int64_t divisor = include_pad ? win.padded[o] : win.start[o + 1] - win.start[o];
      double v = divisor > 0 ? sum / static_cast<double>(divisor) : std::nan("");
      yp[pl * g.out_size + o] = T(static_cast<acc_t<T>>(v));
    }
  }
}

void average_pool_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { average_pool_typed<typename decltype(tag)::type>(ctx); },
                 "AveragePool");
}

/// The p attribute: a float before opset 2 (LpPool, GlobalLpPool), an int after.
double read_p(const KernelContext& ctx) {
  const ir::Attribute* a = ctx.node().attr("p");
  if (!a) return 2.0;
  double p = a->type == ir::Attribute::Type::kFloat ? a->f : static_cast<double>(a->i);
  if (!(p > 0)) ctx.fail("p must be > 0, got {}", p);
  return p;
}

/// (sum |v|^p)^(1/p) with the exact forms for p = 1 and p = 2.
struct LpAcc {
  double p;
  double sum = 0;
  void add(double v) {
    if (p == 1)
      sum += std::fabs(v);
    else if (p == 2)
      sum += v * v;
    else
      sum += std::pow(std::fabs(v), p);
  }
  double result() const { return p == 1 ? sum : p == 2 ? std::sqrt(sum) : std::pow(sum, 1.0 / p); }
};

template <typename T>
void lp_pool_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  WindowGeom g = pool_geom(ctx, x, y);
  double p = read_p(ctx);
  if (y.numel() == 0) return;
  const int64_t planes = x.dim(0) * x.dim(1);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  Windows win = build_windows(ctx, g);
  CancelPoll poll;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xs = xp + pl * g.in_size;
    for (int64_t o = 0; o < g.out_size; ++o) {
      poll(win.start[o + 1] - win.start[o]);
      LpAcc acc{p};
      for (int64_t k = win.start[o]; k < win.start[o + 1]; ++k)
        acc.add(static_cast<double>(static_cast<acc_t<T>>(xs[win.flat[k]])));
      yp[pl * g.out_size + o] = T(static_cast<acc_t<T>>(acc.result()));
    }
  }
}

void lp_pool_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { lp_pool_typed<typename decltype(tag)::type>(ctx); }, "LpPool");
}

/// Global pools: reduce every (n, c) plane to one value.
enum class GlobalKind { kMax, kAverage, kLp };

template <typename T>
void global_pool_typed(KernelContext& ctx, GlobalKind kind) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N, C, spatial...), got {}", dims_str(x.dims()));
  const int64_t planes = x.dim(0) * x.dim(1);
  if (y.numel() != planes) ctx.fail("output {} does not match X {}", dims_str(y.dims()), dims_str(x.dims()));
  const int64_t size = planes > 0 ? x.numel() / planes : 0;
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  double p = kind == GlobalKind::kLp ? read_p(ctx) : 2.0;
  CancelPoll poll;
  for (int64_t pl = 0; pl < planes; ++pl) {
    poll(size);
    const T* xs = xp + pl * size;
    if (kind == GlobalKind::kMax) {
      using A = acc_t<T>;
      A best = size > 0 ? static_cast<A>(xs[0]) : std::numeric_limits<A>::lowest();
      for (int64_t i = 1; i < size; ++i) {
        A v = static_cast<A>(xs[i]);
        if (v > best || (v != v && best == best)) best = v;
      }
      yp[pl] = T(best);
    } else if (kind == GlobalKind::kAverage) {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(static_cast<acc_t<T>>(xs[i]));
      yp[pl] = T(static_cast<acc_t<T>>(size > 0 ? sum / static_cast<double>(size) : std::nan("")));
    } else {
      LpAcc acc{p};
      for (int64_t i = 0; i < size; ++i) acc.add(static_cast<double>(static_cast<acc_t<T>>(xs[i])));
      yp[pl] = T(static_cast<acc_t<T>>(acc.result()));
    }
  }
}

template <GlobalKind K>
void global_pool_kernel(KernelContext& ctx) {
  DType dt = ctx.input(0).dtype();
  if (K == GlobalKind::kMax && dt == DType::kInt8)
    global_pool_typed<int8_t>(ctx, K);
  else if (K == GlobalKind::kMax && dt == DType::kUint8)
    global_pool_typed<uint8_t>(ctx, K);
  else
    dispatch_float(dt, [&](auto tag) { global_pool_typed<typename decltype(tag)::type>(ctx, K); }, "global pooling");
}

template <typename T>
void max_unpool_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (ind.dtype() != DType::kInt64) ctx.fail("I must be int64, got {}", dtype_name(ind.dtype()));
  if (ind.dims() != x.dims())
    ctx.fail("I {} must have the shape of X {}", dims_str(ind.dims()), dims_str(x.dims()));
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got {}", dims_str(x.dims()));
  if (y.rank() != x.rank() || y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    ctx.fail("output {} does not match X {} on rank, N and C", dims_str(y.dims()), dims_str(x.dims()));
  const size_t nsp = x.rank() - 2;
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (kernel.size() != nsp || strides.size() != nsp || pads.size() != 2 * nsp)
    ctx.fail("kernel_shape and strides need {} values and pads {}", nsp, 2 * nsp);
  // Indices number the elements of the unpooled tensor of the default shape
  // (in - 1) * stride + kernel - pads; an explicit output_shape only pads or crops it
  // at the end of each axis, so indices are decoded in the default shape.
  Dims def(nsp);
  for (size_t d = 0; d < nsp; ++d) {
    const char* what = "the unpooled extent ((input - 1) * strides + kernel_shape - pads)";
    def[d] =
        checked_sub(checked_add(checked_mul(x.dim(d + 2) - 1, strides[d], what), kernel[d], what),
                    checked_add(pads[d], pads[d + nsp], what), what);
    if (def[d] < 0) ctx.fail("spatial axis {}: unpooled extent {} is negative", d, def[d]);
  }
  if (x.numel() == 0) return;  // nothing to scatter (y is zero-filled)
  const int64_t def_plane = product(def), out_plane = product(Dims(y.dims().begin() + 2, y.dims().end()));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t def_total = checked_mul(planes, def_plane, "the unpooled tensor's element count");
  T* yp = y.data<T>();
  std::fill(yp, yp + y.numel(), T(acc_t<T>(0)));
  const T* xp = x.data<T>();
  const int64_t* ip = ind.data<int64_t>();
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t i = ip[k];
    if (i < 0 || i >= def_total)
      ctx.fail("index {} at position {} is outside the unpooled tensor ({} elements)", i, k,
               def_total);
    const int64_t plane = i / def_plane;
    int64_t rest = i % def_plane, off = 0, stride = 1;
    bool inside = true;
    for (size_t d = nsp; d-- > 0;) {
      const int64_t c = rest % def[d];
      rest /= def[d];
      if (c >= y.dim(d + 2)) inside = false;
      off += c * stride;
      stride *= y.dim(d + 2);
    }
    if (inside) yp[plane * out_plane + off] = xp[k];
  }
}

void max_unpool_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { max_unpool_typed<typename decltype(tag)::type>(ctx); },
                 "MaxUnpool");
}

template <typename T>
void max_roi_pool_typed(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (x.rank() != 4) ctx.fail("X must be 4-D (N, C, H, W), got {}", dims_str(x.dims()));
  if (rois.rank() != 2 || rois.dim(1) != 5 || rois.dtype() != x.dtype())
    ctx.fail("rois must be [num_rois, 5] of X's dtype, got {} {}", dtype_name(rois.dtype()), dims_str(rois.dims()));
  std::vector<int64_t> pooled = ctx.attr_ints("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values");
  const double scale = ctx.attr_f("spatial_scale", 1.0f);
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t num = rois.dim(0), ph = pooled[0], pw = pooled[1];
  if (y.dims() != Dims{num, channels, ph, pw})
    ctx.fail("output {} does not match [num_rois, C, pooled_h, pooled_w]", dims_str(y.dims()));
  auto val = [](const T& v) { return static_cast<double>(static_cast<acc_t<T>>(v)); };
  const T* rp = rois.data<T>();
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t r = 0; r < num; ++r) {
    const T* roi = rp + r * 5;
    const double bd = val(roi[0]);
    if (!(bd >= 0 && bd < static_cast<double>(batch))) ctx.fail("roi {} has batch index {} outside [0, {})", r, bd, batch);
    const int64_t b = static_cast<int64_t>(bd);
    // Coordinates far outside the image are clamped first, so rounding and the bin
    // arithmetic below stay within int64 (a NaN corner reads as 0).
    auto coord = [&](const T& v) {
      const double c = val(v) * scale;
      return static_cast<double>(std::llround(c == c ? std::clamp(c, -1e15, 1e15) : 0.0));
    };
    const double x1 = coord(roi[1]), y1 = coord(roi[2]), x2 = coord(roi[3]), y2 = coord(roi[4]);
    const double roi_h = std::max(y2 - y1 + 1, 1.0);
    const double roi_w = std::max(x2 - x1 + 1, 1.0);
    const double bin_h = roi_h / static_cast<double>(ph), bin_w = roi_w / static_cast<double>(pw);
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = xp + (b * channels + c) * height * width;
      for (int64_t i = 0; i < ph; ++i) {
        const double hd = static_cast<double>(height), wd = static_cast<double>(width);
        auto hs = static_cast<int64_t>(
            std::clamp(std::floor(static_cast<double>(i) * bin_h) + y1, 0.0, hd));
        auto he = static_cast<int64_t>(
            std::clamp(std::ceil(static_cast<double>(i + 1) * bin_h) + y1, 0.0, hd));
        for (int64_t j = 0; j < pw; ++j) {
          auto ws = static_cast<int64_t>(
              std::clamp(std::floor(static_cast<double>(j) * bin_w) + x1, 0.0, wd));
          auto we = static_cast<int64_t>(
              std::clamp(std::ceil(static_cast<double>(j + 1) * bin_w) + x1, 0.0, wd));
          double best = 0;
          bool any = false;
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) {
              double v = val(plane[h * width + w]);
              if (!any || v > best) best = v;
              any = true;
            }
          yp[((r * channels + c) * ph + i) * pw + j] = T(static_cast<acc_t<T>>(any ? best : 0.0));
        }
      }
    }
  }
}

void max_roi_pool_kernel(KernelContext& ctx) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { max_roi_pool_typed<typename decltype(tag)::type>(ctx); },
                 "MaxRoiPool");
}

}  // namespace

void register_pool(Registry& r) {
  std::vector<DType> max_types = float_types();
  max_types.push_back(DType::kInt8);
  max_types.push_back(DType::kUint8);
  r.add("", "MaxPool", 1, 1000, max_types, max_pool_kernel);
  r.add("", "AveragePool", 1, 1000, float_types(), average_pool_kernel);
  r.add("", "LpPool", 1, 1000, float_types(), lp_pool_kernel);
  r.add("", "GlobalMaxPool", 1, 1000, max_types, global_pool_kernel<GlobalKind::kMax>);
  r.add("", "GlobalAveragePool", 1, 1000, float_types(), global_pool_kernel<GlobalKind::kAverage>);
  r.add("", "GlobalLpPool", 1, 1000, float_types(), global_pool_kernel<GlobalKind::kLp>);
  r.add("", "MaxUnpool", 9, 1000, float_types(), max_unpool_kernel);
  r.add("", "MaxRoiPool", 1, 1000, float_types(), max_roi_pool_kernel);
}

}  // namespace onyx::kernels
