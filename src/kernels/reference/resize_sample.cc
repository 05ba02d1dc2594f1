// Reference kernels of the resize family that sample at given points: GridSample
// (opsets 16, 20, 22; any number of spatial dims), RoiAlign (10, 16) and AffineGrid (20).
// Arithmetic is done in double; results are rounded to the output dtype once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

template <typename T>
double load(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

// Float types round; integer types truncate like a cast (GridSample's rule) and saturate.
template <typename T>
T store(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    if (std::isnan(v)) return T(0);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = load(p[i]);
  });
  return v;
}

void store_all(Tensor& t, const std::vector<double>& v) {
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = store<T>(v[i]);
  });
}

// ---------------------------------------------------------------------------------
// GridSample

enum class Pad { kZeros, kBorder, kReflection };

// Reflects x into [lo, hi] by folding at the borders as many times as needed.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const double n = std::floor(dx / range);
    const double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double n = std::floor(dx / range);
    const double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

struct GridAxis {
  int64_t len;
  double lo, hi;  // borders used by reflection
};

// Resolves an integer index on one axis by the padding mode; -1 means "zero".
int64_t pad_index(int64_t i, const GridAxis& a, Pad pad) {
  if (i >= 0 && i < a.len) return i;
  switch (pad) {
    case Pad::kZeros: return -1;
    case Pad::kBorder: return std::clamp<int64_t>(i, 0, a.len - 1);
    case Pad::kReflection: {
      int64_t r = static_cast<int64_t>(reflect(static_cast<double>(i), a.lo, a.hi));
      return std::clamp<int64_t>(r, 0, a.len - 1);
    }
  }
  return -1;
}

void cubic_weights(double t, double w[4]) {
  const double a = -0.75;
  auto k = [a](double x) {
    x = std::fabs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  w[0] = k(t + 1);
  w[1] = k(t);
  w[2] = k(1 - t);
  w[3] = k(2 - t);
}

void grid_sample_kernel(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& G = ctx.input(1);
  const size_t r = X.rank() >= 2 ? X.rank() - 2 : 0;
  if (X.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, D1, ...), got {}", dims_str(X.dims()));
  if (G.rank() != X.rank() || G.dim(G.rank() - 1) != static_cast<int64_t>(r) || G.dim(0) != X.dim(0))
    ctx.fail("grid must have shape (N, D1_out, ..., {}) with N = {}, got {}", r, X.dim(0),
             dims_str(G.dims()));
  std::string mode = ctx.attr_s("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    ctx.fail("mode must be linear, nearest or cubic, got '{}'", mode);
  const std::string pad_s = ctx.attr_s("padding_mode", "zeros");
  Pad pad;
  if (pad_s == "zeros") pad = Pad::kZeros;
  else if (pad_s == "border") pad = Pad::kBorder;
  else if (pad_s == "reflection") pad = Pad::kReflection;
  else ctx.fail("padding_mode must be zeros, border or reflection, got '{}'", pad_s);
  const bool align = ctx.attr_i("align_corners", 0) != 0;

  const int64_t N = X.dim(0), C = X.dim(1);
  std::vector<GridAxis> axes(r);
  int64_t in_spatial = 1;
  for (size_t i = 0; i < r; ++i) {
    const int64_t len = X.dim(2 + i);
    axes[i] = {len, align ? 0.0 : -0.5, align ? static_cast<double>(len) - 1 : static_cast<double>(len) - 0.5};
    // Past int64 only for an empty X or grid (N or C of 0), which returns below.
    if (!mul_fits(in_spatial, len, in_spatial)) in_spatial = 0;
  }
  int64_t out_spatial = 1;
  for (size_t i = 1; i + 1 < G.rank(); ++i)
    if (!mul_fits(out_spatial, G.dim(i), out_spatial)) out_spatial = 0;
  Tensor& Y = ctx.output(0);
  if (Y.numel() == 0) return;
  if (in_spatial == 0) ctx.fail("X has an empty spatial extent {}", dims_str(X.dims()));
  std::vector<int64_t> stride(r, 1);
  for (size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * axes[i].len;

  const std::vector<double> x = to_doubles(X);
  const std::vector<double> grid = [&] {
    std::vector<double> v(static_cast<size_t>(G.numel()));
    dispatch_float(G.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i) v[i] = load(G.data<T>()[i]);
    }, "GridSample grid");
    return v;
  }();
  std::vector<double> y(static_cast<size_t>(Y.numel()), 0.0);

  // Per output point: the taps (flat offset or -1 for zero, weight) shared by all channels.
  const int taps_per_axis = mode == "nearest" ? 1 : (mode == "linear" ? 2 : 4);
  std::vector<std::vector<std::pair<int64_t, double>>> axis_taps(r);
  std::vector<std::pair<int64_t, double>> taps;
  std::vector<double> coord(r);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t p = 0; p < out_spatial; ++p) {
      const double* g = &grid[static_cast<size_t>((n * out_spatial + p) * static_cast<int64_t>(r))];
      for (size_t i = 0; i < r; ++i) {
        // grid lists coordinates innermost axis first.
        const double v = g[r - 1 - i];
        const double len = static_cast<double>(axes[i].len);
        double c = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
        if (mode == "nearest") c = std::nearbyint(c);  // half to even, as the ONNX test data has it
        if (c < axes[i].lo || c > axes[i].hi) {
          if (pad == Pad::kBorder) c = std::clamp(c, 0.0, len - 1);
          else if (pad == Pad::kReflection) c = reflect(c, axes[i].lo, axes[i].hi);
        }
        coord[i] = c;
        auto& at = axis_taps[i];
        at.clear();
        if (mode == "nearest") {
          // Out-of-range coordinates (NaN, huge) are mapped to the zero tap.
          const double t = std::trunc(c);
          const int64_t idx = std::fabs(t) < 4e18 ? static_cast<int64_t>(t) : -1 - axes[i].len;
          at.push_back({pad_index(idx, axes[i], pad), 1.0});
        } else {
          const double fl = std::floor(c);
          if (!(std::fabs(fl) < 4e18)) {
            at.push_back({-1, 1.0});
            continue;
          }
          const int64_t i0 = static_cast<int64_t>(fl);
          const double t = c - fl;
          if (taps_per_axis == 2) {
            at.push_back({pad_index(i0, axes[i], pad), 1 - t});
            at.push_back({pad_index(i0 + 1, axes[i], pad), t});
          } else {
            double w[4];
            cubic_weights(t, w);
            for (int k = 0; k < 4; ++k) at.push_back({pad_index(i0 - 1 + k, axes[i], pad), w[k]});
          }
        }
      }
      // Tensor product of the per-axis taps.
      taps.assign(1, {0, 1.0});
      for (size_t i = 0; i < r; ++i) {
        std::vector<std::pair<int64_t, double>> next;
        next.reserve(taps.size() * axis_taps[i].size());
        for (const auto& [off, w] : taps)
          for (const auto& [idx, aw] : axis_taps[i])
            next.push_back({off < 0 || idx < 0 ? -1 : off + idx * stride[i], w * aw});
        taps.swap(next);
      }
      for (int64_t c = 0; c < C; ++c) {
        const double* xs = &x[static_cast<size_t>((n * C + c) * in_spatial)];
        double acc = 0;
        for (const auto& [off, w] : taps)
          if (off >= 0) acc += w * xs[off];
        y[static_cast<size_t>((n * C + c) * out_spatial + p)] = acc;
      }
    }
  }
  store_all(Y, y);
}

// ---------------------------------------------------------------------------------
// RoiAlign (follows onnxruntime's algorithm, which the ONNX reference copies: in max
// mode each sample contributes the largest of its four weighted corners).

void roi_align_kernel(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& R = ctx.input(1);
  if (X.rank() != 4) ctx.fail("X must be 4-D (N, C, H, W), got {}", dims_str(X.dims()));
  if (R.rank() != 2 || R.dim(1) != 4) ctx.fail("rois must have shape (num_rois, 4), got {}", dims_str(R.dims()));
  const std::vector<int64_t> batch = ctx.input_ints(2);
  const int64_t num_rois = R.dim(0);
  if (static_cast<int64_t>(batch.size()) != num_rois)
    ctx.fail("batch_indices has {} entries but rois has {}", batch.size(), num_rois);
  const std::string mode = ctx.attr_s("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, got '{}'", mode);
  const std::string ctm =
      ctx.opset() >= 16 ? ctx.attr_s("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '{}'", ctm);
  const bool half_pixel = ctm == "half_pixel";
  const int64_t PH = ctx.attr_i("output_height", 1), PW = ctx.attr_i("output_width", 1);
  const int64_t sampling = ctx.attr_i("sampling_ratio", 0);
  const double spatial_scale = ctx.attr_f("spatial_scale", 1.f);
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3);
  for (int64_t b : batch)
    if (b < 0 || b >= N) ctx.fail("batch index {} is out of range [0, {})", b, N);

  const std::vector<double> x = to_doubles(X);
  const std::vector<double> rois = to_doubles(R);
  Tensor& Y = ctx.output(0);
  std::vector<double> y(static_cast<size_t>(Y.numel()), 0.0);
  if (Y.numel() == 0) return;

  if (H == 0 || W == 0) ctx.fail("X has an empty spatial extent {}", dims_str(X.dims()));

  struct Sample {
    int64_t pos[4];
    double w[4];
  };
  std::vector<Sample> samples;
  for (int64_t n = 0; n < num_rois; ++n) {
    const double* roi = &rois[static_cast<size_t>(n * 4)];
    for (int k = 0; k < 4; ++k)
      if (!std::isfinite(roi[k])) ctx.fail("roi {} has a non-finite coordinate", n);
    const double off = half_pixel ? 0.5 : 0.0;
    const double x0 = roi[0] * spatial_scale - off, y0 = roi[1] * spatial_scale - off;
    const double x1 = roi[2] * spatial_scale - off, y1 = roi[3] * spatial_scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bin_h = rh / static_cast<double>(PH), bin_w = rw / static_cast<double>(PW);
    const double gh = sampling > 0 ? static_cast<double>(sampling) : std::ceil(rh / static_cast<double>(PH));
    const double gw = sampling > 0 ? static_cast<double>(sampling) : std::ceil(rw / static_cast<double>(PW));
    // Bounds the work per bin; a negative adaptive count (inverted roi) samples nothing.
    if (!(gh * std::max(gw, 1.0) <= double(1 << 24)) || !(gw <= double(1 << 24)))
      ctx.fail("roi {} needs a {}x{} sampling grid per bin, more than this kernel allows", n, gh, gw);
    const int64_t grid_h = std::max<int64_t>(static_cast<int64_t>(gh), 0);
    const int64_t grid_w = std::max<int64_t>(static_cast<int64_t>(gw), 0);
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    const int64_t b = batch[static_cast<size_t>(n)];

    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw) {
        // The samples of this bin, shared by all channels.
        samples.clear();
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yy = y0 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            double xx = x0 + static_cast<double>(pw) * bin_w +
                        (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            double yv = yy;
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(yv >= -1.0 && yv <= static_cast<double>(H) && xx >= -1.0 && xx <= static_cast<double>(W))) {
              samples.push_back(s);  // outside the feature map: contributes 0
              continue;
            }
            yv = std::max(yv, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx), yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              yv = static_cast<double>(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = static_cast<double>(xl);
            } else {
              xh = xl + 1;
            }
            const double ly = yv - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
            const double hy = 1 - ly, hx = 1 - lx;
            s = {{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            samples.push_back(s);
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          const double* xs = x.data() + (b * C + c) * H * W;
          double v = 0;
          bool first = true;
          for (const Sample& s : samples) {
            if (mode == "avg") {
              v += s.w[0] * xs[s.pos[0]] + s.w[1] * xs[s.pos[1]] + s.w[2] * xs[s.pos[2]] +
                   s.w[3] * xs[s.pos[3]];
            } else {
              const double m = std::max(std::max(s.w[0] * xs[s.pos[0]], s.w[1] * xs[s.pos[1]]),
                                        std::max(s.w[2] * xs[s.pos[2]], s.w[3] * xs[s.pos[3]]));
              v = first ? m : std::max(v, m);
              first = false;
            }
          }
          if (mode == "avg") v /= count;
          y[static_cast<size_t>(((n * C + c) * PH + ph) * PW + pw)] = v;
        }
      }
  }
  store_all(Y, y);
}

// ---------------------------------------------------------------------------------
// AffineGrid

// Evenly spaced positions in [-1, 1] along an axis of `n` points.
std::vector<double> base_positions(int64_t n, bool align) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double di = static_cast<double>(i), dn = static_cast<double>(n);
    if (align) v[static_cast<size_t>(i)] = n == 1 ? -1.0 : -1.0 + 2.0 * di / (dn - 1);
    else v[static_cast<size_t>(i)] = (2.0 * di + 1.0) / dn - 1.0;
  }
  return v;
}

void affine_grid_kernel(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = ctx.input_ints(1);
  if (size.size() != 4 && size.size() != 5)
    ctx.fail("size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values, got {}", size.size());
  const int64_t sp = static_cast<int64_t>(size.size()) - 2;
  const int64_t N = size[0];
  if (theta.rank() != 3 || theta.dim(0) != N || theta.dim(1) != sp || theta.dim(2) != sp + 1)
    ctx.fail("theta must have shape ({}, {}, {}) for size {}, got {}", N, sp, sp + 1,
             dims_str(size), dims_str(theta.dims()));
  const bool align = ctx.attr_i("align_corners", 0) != 0;
  const int64_t D = sp == 3 ? size[2] : 1, H = size[size.size() - 2], W = size[size.size() - 1];
  Tensor& Y = ctx.output(0);
  // `size` is data: with N = 0 it may name any H and W, which must not size the
  // position tables below.
  if (static_cast<size_t>(Y.numel()) !=
      checked_count({N, D, H, W, sp}, "the grid (N * D * H * W * spatial rank)"))
    ctx.fail("output has shape {}, expected {} elements", dims_str(Y.dims()), N * D * H * W * sp);
  if (Y.numel() == 0) return;
  const std::vector<double> zs = base_positions(D, align), ys = base_positions(H, align),
                            xs = base_positions(W, align);
  const std::vector<double> th = to_doubles(theta);
  std::vector<double> out(static_cast<size_t>(Y.numel()));
  size_t o = 0;
  for (int64_t n = 0; n < N; ++n) {
    const double* t = &th[static_cast<size_t>(n * sp * (sp + 1))];
    for (int64_t d = 0; d < D; ++d)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          // Homogeneous position (x, y[, z], 1): x runs along W, y along H, z along D.
          double pos[4] = {xs[static_cast<size_t>(w)], ys[static_cast<size_t>(h)], 0, 0};
          if (sp == 3) {
            pos[2] = zs[static_cast<size_t>(d)];
            pos[3] = 1;
          } else {
            pos[2] = 1;
          }
          for (int64_t k = 0; k < sp; ++k) {
            double acc = 0;
            for (int64_t j = 0; j <= sp; ++j) acc += t[k * (sp + 1) + j] * pos[j];
            out[o++] = acc;
          }
        }
  }
  store_all(Y, out);
}

}  // namespace

void register_resize_sample(Registry& r) {
  r.add("", "GridSample", 16, 1000, numeric_types(), grid_sample_kernel);
  r.add("", "RoiAlign", 10, 1000, float_types(), roi_align_kernel);
  r.add("", "AffineGrid", 20, 1000, float_types(), affine_grid_kernel);
}

}  // namespace onyx::kernels
