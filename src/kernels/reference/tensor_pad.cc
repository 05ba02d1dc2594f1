// Reference kernels of the tensor family, part 2: Pad and CenterCropPad, and the ops
// whose output size depends on the data (NonZero, Compress, Unique) or that reorder
// along data-given lengths (ReverseSequence).
#include <algorithm>
#include <numeric>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/tensor_data.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

/// Fills `y` where every output axis k maps coordinate o to input coordinate
/// src[k][o], or -1 for "outside the input" (then `fill` is written).
template <typename T>
void remap(const Tensor& x, Tensor& y, const std::vector<std::vector<int64_t>>& src, const T& fill) {
  size_t r = y.rank();
  const T* in = x.data<T>();
  T* out = y.data<T>();
  int64_t n = y.numel();
  if (n == 0) return;
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<int64_t> strides = strides_of(x.dims()), idx(r, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t pos = 0;
    bool inside = true;
    for (size_t a = 0; a < r && inside; ++a) {
      int64_t c = src[a][static_cast<size_t>(idx[a])];
      inside = c >= 0;
      pos += c * strides[a];
    }
    out[k] = inside ? in[pos] : fill;
    for (size_t a = r; a-- > 0;) {
      if (++idx[a] < y.dim(a)) break;
      idx[a] = 0;
    }
  }
}

int64_t positive_mod(int64_t v, int64_t m) {
  int64_t r = v % m;
  return r < 0 ? r + m : r;
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  auto r = static_cast<int64_t>(x.rank());
  std::string mode = ctx.attr_s("mode", "constant");
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
  } else {
    pads = ctx.input_ints(1);
    if (ctx.has_input(3)) axes = ctx.input_ints(3);
  }
  if (axes.empty() && !(ctx.opset() >= 11 && ctx.has_input(3)))
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  if (pads.size() != 2 * axes.size()) ctx.fail("pads must have 2 entries per padded axis");
  // An empty output may still have one huge axis: build no per-axis table for it.
  if (y.numel() == 0) return;
  std::vector<int64_t> begin(static_cast<size_t>(r), 0);
  size_t n = axes.size();
  for (size_t k = 0; k < n; ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 0 || a >= r) ctx.fail("axis {} is out of range for rank {}", axes[k], r);
    begin[static_cast<size_t>(a)] = pads[k];
  }
  // Per axis: output coordinate -> input coordinate (-1: the constant).
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(r));
  for (size_t a = 0; a < src.size(); ++a) {
    int64_t dim = x.dim(a);
    src[a].resize(static_cast<size_t>(y.dim(a)));
    for (int64_t o = 0; o < y.dim(a); ++o) {
      int64_t c;
      if (!sub_fits(o, begin[a], c))
        ctx.fail("pads {} are out of range for axis {} of size {}", dims_str(pads), a, dim);
      if (c < 0 || c >= dim) {
        if (mode == "constant") c = -1;
        else if (dim == 0) ctx.fail("cannot pad empty axis {} in mode '{}'", a, mode);
        else if (mode == "edge") c = std::clamp<int64_t>(c, 0, dim - 1);
        else if (mode == "wrap") c = positive_mod(c, dim);
        else if (mode == "reflect") {
          if (dim == 1) {
            c = 0;
          } else {
            int64_t period = 2 * (dim - 1);
            c = positive_mod(c, period);
            if (c >= dim) c = period - c;
          }
        } else ctx.fail("unknown mode '{}'", mode);
      }
      src[a][static_cast<size_t>(o)] = c;
    }
  }
  // The constant: attribute 'value' before opset 11, else the optional scalar input 2.
  Tensor value(x.dtype(), {});
  if (ctx.opset() < 11) {
    double v = ctx.attr_f("value", 0.0f);
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, std::string>) value.data<T>()[0] = from_double<T>(v);
    }, "Pad");
  } else if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    const Tensor& v = ctx.input(2);
    if (v.dtype() != x.dtype() || v.numel() != 1) ctx.fail("constant_value must be one value of the input's dtype");
    copy_elements(v, value);
  }
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    remap<T>(x, y, src, value.data<T>()[0]);
  });
}

void center_crop_pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.rank() != x.rank()) ctx.fail("output rank does not match the input");
  if (y.numel() == 0) return;  // no per-axis table for a huge axis of an empty output
  std::vector<std::vector<int64_t>> src(x.rank());
  for (size_t a = 0; a < x.rank(); ++a) {
    int64_t in = x.dim(a), out = y.dim(a);
    // Crop starts rounded down; padding puts the odd pixel at the end.
    int64_t shift = in >= out ? (in - out) / 2 : -((out - in) / 2);
    src[a].resize(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      int64_t c = o + shift;
      src[a][static_cast<size_t>(o)] = c >= 0 && c < in ? c : -1;
    }
  }
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    remap<T>(x, y, src, T{});
  });
}

void non_zero_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<uint8_t> m = nonzero_mask(x);
  auto nnz = static_cast<int64_t>(std::count(m.begin(), m.end(), uint8_t{1}));
  auto r = static_cast<int64_t>(x.rank());
  if (y.rank() != 2 || y.dim(0) != r || y.dim(1) != nnz) ctx.fail("output shape does not match the data");
  std::vector<int64_t> strides = strides_of(x.dims());
  int64_t* out = y.data<int64_t>();
  int64_t col = 0;
  for (size_t k = 0; k < m.size(); ++k) {
    if (!m[k]) continue;
    auto rem = static_cast<int64_t>(k);
    for (int64_t a = 0; a < r; ++a) {
      out[a * nnz + col] = rem / strides[static_cast<size_t>(a)];
      rem %= strides[static_cast<size_t>(a)];
    }
    ++col;
  }
}

void compress_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (cond.dtype() != DType::kBool) ctx.fail("condition must be bool");
  int64_t outer = 1, len = x.numel(), inner = 1;
  if (ctx.has_attr("axis")) {
    if (x.numel() == 0) outer = inner = 0;  // the other extents may not multiply
    auto r = static_cast<int64_t>(x.rank());
    int64_t axis = ctx.attr_i("axis", 0);
    if (axis < -r || axis >= r) ctx.fail("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    auto a = static_cast<size_t>(axis);
    len = x.dim(a);
    for (size_t k = 0; k < a; ++k) outer *= x.dim(k);
    for (size_t k = a + 1; k < x.rank(); ++k) inner *= x.dim(k);
  }
  std::vector<int64_t> keep;
  for (int64_t k = 0; k < std::min(len, cond.numel()); ++k)
    if (cond.data<uint8_t>()[k]) keep.push_back(k);
  if (y.numel() != outer * static_cast<int64_t>(keep.size()) * inner) ctx.fail("output shape does not match the condition");
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k : keep) {
        const T* s = in + (o * len + k) * inner;
        out = std::copy(s, s + inner, out);
      }
  });
}

void reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  auto r = static_cast<int64_t>(x.rank());
  int64_t ba = ctx.attr_i("batch_axis", 1), ta = ctx.attr_i("time_axis", 0);
  if (r < 2 || ba < -r || ba >= r || ta < -r || ta >= r) ctx.fail("batch_axis/time_axis out of range");
  auto b_axis = static_cast<size_t>(ba < 0 ? ba + r : ba), t_axis = static_cast<size_t>(ta < 0 ? ta + r : ta);
  std::vector<int64_t> lens = ctx.input_ints(1);
  int64_t batch = x.dim(b_axis), steps = x.dim(t_axis);
  if (static_cast<int64_t>(lens.size()) != batch) ctx.fail("sequence_lens has {} entries, batch is {}", lens.size(), batch);
  for (int64_t l : lens)
    if (l < 0 || l > steps) ctx.fail("sequence length {} is outside [0, {}]", l, steps);
  std::vector<int64_t> strides = strides_of(x.dims()), idx(x.rank(), 0);
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t k = 0; k < x.numel(); ++k) {
      int64_t b = idx[b_axis], t = idx[t_axis], len = lens[static_cast<size_t>(b)];
      int64_t src = k;
      if (t < len) src += (len - 1 - 2 * t) * strides[t_axis];
      out[k] = in[src];
      for (size_t a = x.rank(); a-- > 0;) {
        if (++idx[a] < x.dim(a)) break;
        idx[a] = 0;
      }
    }
  });
}

void unique_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = -1;
  if (ctx.has_attr("axis")) {
    auto r = static_cast<int64_t>(x.rank());
    axis = ctx.attr_i("axis", 0);
    if (axis < -r || axis >= r) ctx.fail("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
  }
  UniqueGroups g = unique_of(x, axis, ctx.attr_i("sorted", 1) != 0);
  auto u = static_cast<int64_t>(g.first.size());
  int64_t outer = 1, rows = x.numel(), inner = 1;
  if (axis >= 0) {
    rows = x.dim(static_cast<size_t>(axis));
    if (x.numel() == 0) outer = inner = 0;  // the other extents may not multiply
    for (size_t k = 0; k < static_cast<size_t>(axis); ++k) outer *= x.dim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < x.rank(); ++k) inner *= x.dim(k);
  }
  Tensor& y = ctx.output(0);
  if (y.numel() != outer * u * inner) ctx.fail("output shape does not match the data");
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t f : g.first) {
        const T* s = in + (o * rows + f) * inner;
        out = std::copy(s, s + inner, out);
      }
  });
  const std::vector<int64_t>* parts[] = {&g.first, &g.inverse, &g.counts};
  for (size_t i = 1; i < 4; ++i) {
    if (!ctx.has_output(i)) continue;
    Tensor& t = ctx.output(i);
    const std::vector<int64_t>& v = *parts[i - 1];
    if (t.dtype() != DType::kInt64 || t.numel() != static_cast<int64_t>(v.size()))
      ctx.fail("output {} shape does not match the data", i);
    std::copy(v.begin(), v.end(), t.data<int64_t>());
  }
}

}  // namespace

UniqueGroups group_rows(int64_t rows, bool sorted, int (*cmp)(const void* ctx, int64_t a, int64_t b),
                        const void* ctx) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(ctx, a, b) < 0; });
  // Groups in ascending order; the stable sort puts each group's first occurrence first.
  std::vector<int64_t> group_first, group_count;
  std::vector<int64_t> group_of(static_cast<size_t>(rows));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp(ctx, order[k - 1], order[k]) != 0) {
      group_first.push_back(order[k]);
      group_count.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(group_first.size() - 1);
    ++group_count.back();
  }
  std::vector<int64_t> rank(group_first.size());  // group -> output position
  std::iota(rank.begin(), rank.end(), int64_t{0});
  if (!sorted) {
    std::vector<int64_t> by_first(group_first.size());
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return group_first[a] < group_first[b]; });
    for (size_t k = 0; k < by_first.size(); ++k) rank[static_cast<size_t>(by_first[k])] = static_cast<int64_t>(k);
  }
  UniqueGroups g;
  g.first.resize(group_first.size());
  g.counts.resize(group_first.size());
  for (size_t k = 0; k < group_first.size(); ++k) {
    g.first[static_cast<size_t>(rank[k])] = group_first[k];
    g.counts[static_cast<size_t>(rank[k])] = group_count[k];
  }
  g.inverse.resize(static_cast<size_t>(rows));
  for (size_t r = 0; r < g.inverse.size(); ++r) g.inverse[r] = rank[static_cast<size_t>(group_of[r])];
  return g;
}

/// Registered from register_tensor (tensor.cc).
void register_tensor_pad(Registry& r) {
  r.add("", "Pad", 1, 1000, {}, pad_kernel);
  r.add("", "CenterCropPad", 1, 1000, {}, center_crop_pad_kernel);
  r.add("", "NonZero", 1, 1000, {}, non_zero_kernel);
  r.add("", "Compress", 1, 1000, {}, compress_kernel);
  r.add("", "ReverseSequence", 1, 1000, {}, reverse_sequence_kernel);
  r.add("", "Unique", 1, 1000, {}, unique_kernel);
}

}  // namespace onyx::kernels
