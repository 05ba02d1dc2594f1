// Optimized float normalizations, twins of src/kernels/reference/norm.cc:
// LayerNormalization (ONNX 17 and ai.onyx 1) with a scale (and bias) over the normalized
// axes, BatchNormalization for inference, InstanceNormalization and GroupNormalization.
// Statistics are two-pass (mean, then the deviations, whose sum corrects the mean) in float
// with several vector accumulators (src/simd/rows.cc); the reference accumulates in double. Each
// kernel is threaded over its rows, planes or groups; what it does not take (training mode,
// Mean/InvStdDev outputs, scales that broadcast otherwise) goes to the reference.
#include <cmath>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "simd/rows.h"

namespace onyx::kernels::cpu {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per block of work (three passes each)

/// Mean and 1 / sqrt(var + eps) of n values in double, for the blocks whose float
/// statistics overflow (huge values, NaN, inf): then the result is what the reference's
/// double arithmetic gives.
void stats_double(const float* x, int64_t n, double eps, double& mean, double& inv) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  mean = s / static_cast<double>(n);
  double q = 0;
  for (int64_t i = 0; i < n; ++i) q += (x[i] - mean) * (x[i] - mean);
  inv = 1.0 / std::sqrt(q / static_cast<double>(n) + eps);
}

/// True when `p` (a scale or bias) holds one value per element of dims[axis:] in that
/// layout: its dims are the trailing dims of X once leading 1s are dropped, covering
/// everything from axis on.
bool covers_tail(const Dims& x, size_t axis, const Tensor& p) {
  int64_t inner = 1;
  for (size_t k = axis; k < x.size(); ++k) inner *= x[k];
  if (!is_float(p) || p.numel() != inner) return false;
  size_t lead = 0;
  while (lead < p.rank() && p.dim(lead) == 1) ++lead;
  const size_t k = p.rank() - lead;
  if (k > x.size() - axis) return false;
  for (size_t i = 0; i < k; ++i)
    if (p.dim(lead + i) != x[x.size() - k + i]) return false;
  return true;
}

class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(int64_t axis, float eps, KernelFn reference)
      : axis_(axis), eps_(eps), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const bool has_bias = ctx.has_input(2);
    if (!is_float(x) || !is_float(y) || y.dims() != x.dims() || axis < 0 || axis >= rank ||
        !ctx.has_input(1) || !covers_tail(x.dims(), static_cast<size_t>(axis), ctx.input(1)) ||
        (has_bias && !covers_tail(x.dims(), static_cast<size_t>(axis), ctx.input(2)))) {
      reference_(ctx);
      return;
    }
    int64_t rows = 1, n = 1;
    for (int64_t k = 0; k < rank; ++k) (k < axis ? rows : n) *= x.dim(static_cast<size_t>(k));
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const float* scale = ctx.input(1).data<float>();
    const float* bias = has_bias ? ctx.input(2).data<float>() : nullptr;
    const float eps = eps_;
    parallel_blocks(
        ctx.pool(), rows, std::max<int64_t>(1, kGrain / n), [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const float* xr = px + r * n;
            float* yr = py + r * n;
            float mean, lo, var;
            if (simd::row_mean_var(xr, n, &mean, &lo, &var)) {
              simd::row_normalize(xr, yr, n, mean, lo, 1.0f / std::sqrt(var + eps), scale, bias);
              continue;
            }
            double m, inv;
            stats_double(xr, n, eps, m, inv);
            for (int64_t i = 0; i < n; ++i)
              yr[i] = static_cast<float>((xr[i] - m) * inv * scale[i] + (bias ? bias[i] : 0.0));
          }
        });
  }
  std::string_view name() const override { return "cpu.layer_norm"; }
  bool overwrites_outputs() const override { return true; }

 private:
  int64_t axis_;
  float eps_;
  KernelFn reference_;
};

/// BatchNormalization in inference mode: y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps)
/// + B[c] per plane. With all four parameters constant the per-channel factors are
/// computed once, at planning.
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(float eps, std::vector<float> mul, KernelFn reference)
      : eps_(eps), mul_(std::move(mul)), reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (!is_float(x) || !is_float(y) || y.dims() != x.dims() || x.rank() < 2) {
      reference_(ctx);
      return;
    }
    const int64_t channels = x.dim(1);
    const float* p[4];
    for (size_t i = 0; i < 4; ++i) {
      const Tensor& t = ctx.input(i + 1);
      if (!is_float(t) || t.numel() != channels) {
        reference_(ctx);
        return;
      }
      p[i] = t.data<float>();
    }
    const int64_t planes = x.dim(0) * channels;
    const int64_t inner = planes > 0 ? x.numel() / planes : 0;
    if (x.numel() == 0) return;
    std::vector<float> local;
    const float* mul = mul_.data();
    if (mul_.empty()) {
      local = factors(p[0], p[3], channels, eps_);
      mul = local.data();
    }
    const float* px = x.data<float>();
    float* py = y.data<float>();
    parallel_blocks(
        ctx.pool(), planes, std::max<int64_t>(1, kGrain / inner), [&](int64_t q0, int64_t q1) {
          for (int64_t q = q0; q < q1; ++q) {
            const int64_t c = q % channels;
            simd::row_affine(px + q * inner, py + q * inner, inner, p[2][c], mul[c], p[1][c]);
          }
        });
  }
  std::string_view name() const override { return "cpu.batch_norm"; }
  bool overwrites_outputs() const override { return true; }

  /// scale[c] / sqrt(var[c] + eps), in double as the reference.
  static std::vector<float> factors(const float* scale, const float* var, int64_t channels,
                                    float eps) {
    std::vector<float> m(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c)
      m[c] = static_cast<float>(scale[c] /
                                std::sqrt(static_cast<double>(var[c]) + static_cast<double>(eps)));
    return m;
  }

 private:
  float eps_;
  std::vector<float> mul_;  ///< precomputed factors, or empty
  KernelFn reference_;
};

/// Instance and group normalization: statistics over each (n, group) block of cpg
/// channels times the spatial size, then per channel (or per group) scale and bias.
class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(bool instance, int64_t groups, bool per_group, float eps, KernelFn reference)
      : instance_(instance),
        groups_(groups),
        per_group_(per_group),
        eps_(eps),
        reference_(reference) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t min_rank = instance_ ? 3 : 2;
    if (!is_float(x) || !is_float(y) || y.dims() != x.dims() || x.rank() < min_rank ||
        !ctx.has_input(1) || !ctx.has_input(2)) {
      reference_(ctx);
      return;
    }
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const int64_t groups = instance_ ? channels : groups_;
    if (groups < 1 || channels % groups != 0) {
      reference_(ctx);
      return;
    }
    const Tensor& st = ctx.input(1);
    const Tensor& bt = ctx.input(2);
    const int64_t pcount = per_group_ ? groups : channels;
    if (!is_float(st) || !is_float(bt) || st.numel() != pcount || bt.numel() != pcount) {
      reference_(ctx);
      return;
    }
    if (x.numel() == 0) return;
    const int64_t cpg = channels / groups, inner = x.numel() / (batch * channels),
                  block = cpg * inner;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const float* scale = st.data<float>();
    const float* bias = bt.data<float>();
    const float eps = eps_;
    const bool per_group = per_group_;
    parallel_blocks(ctx.pool(), batch * groups, std::max<int64_t>(1, kGrain / block),
                    [&](int64_t b0, int64_t b1) {
                      for (int64_t b = b0; b < b1; ++b) {
                        const int64_t g = b % groups;
                        const float* xb = px + b * block;
                        float* yb = py + b * block;
                        float mean, lo, var;
                        if (simd::row_mean_var(xb, block, &mean, &lo, &var)) {
                          const float inv = 1.0f / std::sqrt(var + eps);
                          for (int64_t c = 0; c < cpg; ++c) {
                            const int64_t pi = per_group ? g : g * cpg + c;
                            const float a = inv * scale[pi];
                            simd::row_affine(xb + c * inner, yb + c * inner, inner, mean, a,
                                             bias[pi] - lo * a);
                          }
                          continue;
                        }
                        double m, inv;
                        stats_double(xb, block, eps, m, inv);
                        for (int64_t c = 0; c < cpg; ++c) {
                          const int64_t pi = per_group ? g : g * cpg + c;
                          for (int64_t i = c * inner; i < (c + 1) * inner; ++i)
                            yb[i] = static_cast<float>((xb[i] - m) * inv * scale[pi] + bias[pi]);
                        }
                      }
                    });
  }
  std::string_view name() const override { return "cpu.group_norm"; }
  bool overwrites_outputs() const override { return true; }

 private:
  bool instance_;
  int64_t groups_;
  bool per_group_;
  float eps_;
  KernelFn reference_;
};

/// True when node output i (i >= 1) is requested.
bool wants_output(const ir::Node& node, size_t i) {
  return i < node.outputs.size() && !node.outputs[i].empty();
}

std::unique_ptr<Kernel> make_layer_norm(const KernelInit& init) {
  if (!maybe_float(init, 0) || wants_output(init.node, 1) || wants_output(init.node, 2))
    return nullptr;
  return std::make_unique<LayerNormKernel>(init.node.attr_i("axis", -1),
                                           init.node.attr_f("epsilon", 1e-5f), init.reference);
}

std::unique_ptr<Kernel> make_batch_norm(const KernelInit& init) {
  const ir::Node& node = init.node;
  if (!maybe_float(init, 0)) return nullptr;
  if (node.opset >= 14 ? node.attr_i("training_mode", 0) != 0
                       : wants_output(node, 1) || wants_output(node, 2) || wants_output(node, 3) ||
                             wants_output(node, 4))
    return nullptr;
  if (node.opset < 9 && node.attr_i("spatial", 1) == 0) return nullptr;
  const float eps = node.attr_f("epsilon", 1e-5f);
  std::vector<float> mul;
  if (init.is_constant(1) && init.is_constant(4)) {
    const Tensor& s = *init.constants[1];
    const Tensor& v = *init.constants[4];
    if (is_float(s) && is_float(v) && s.numel() == v.numel())
      mul = BatchNormKernel::factors(s.data<float>(), v.data<float>(), s.numel(), eps);
  }
  return std::make_unique<BatchNormKernel>(eps, std::move(mul), init.reference);
}

std::unique_ptr<Kernel> make_instance_norm(const KernelInit& init) {
  if (!maybe_float(init, 0)) return nullptr;
  return std::make_unique<GroupNormKernel>(true, 0, false, init.node.attr_f("epsilon", 1e-5f),
                                           init.reference);
}

std::unique_ptr<Kernel> make_group_norm(const KernelInit& init) {
  if (!maybe_float(init, 0) || !init.node.has_attr("num_groups")) return nullptr;
  return std::make_unique<GroupNormKernel>(false, init.node.attr_i("num_groups", 1),
                                           init.node.opset < 21, init.node.attr_f("epsilon", 1e-5f),
                                           init.reference);
}

}  // namespace

void register_norm(Registry& r) {
  const std::vector<DType> f32 = {DType::kFloat};
  r.add_optimized("", "LayerNormalization", 17, 1000, f32, make_layer_norm);
  r.add_optimized("ai.onyx", "LayerNormalization", 1, 1, f32, make_layer_norm);
  r.add_optimized("", "BatchNormalization", 1, 1000, f32, make_batch_norm);
  r.add_optimized("", "InstanceNormalization", 1, 1000, f32, make_instance_norm);
  r.add_optimized("", "GroupNormalization", 18, 1000, f32, make_group_norm);
}

}  // namespace onyx::kernels::cpu
