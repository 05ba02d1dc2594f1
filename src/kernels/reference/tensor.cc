// Reference kernels of the tensor family: ops that create, reshape, reorder, slice or
// join tensors. Output shapes come from src/shape/tensor.cc; these only move elements.
// Pad, CenterCropPad and the data-dependent ops live in tensor_pad.cc.
#include <algorithm>
#include <random>
#include <type_traits>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/tensor_data.h"
#include "kernels/registry.h"

namespace onyx::kernels {

void register_tensor_pad(Registry& r);  // tensor_pad.cc

namespace {

/// Product of dims [from, to).
int64_t span(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to; ++k) p *= d[k];
  return p;
}

int64_t norm_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

// ---- Constant / Identity / Dropout / reshapes ----

void constant_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  Tensor& out = ctx.output(0);
  if (const Tensor* t = n.has_attr("value") ? n.attr_t("value") : n.attr_t("sparse_value")) {
    copy_elements(*t, out);
    return;
  }
  auto expect = [&](DType dt, size_t count) {
    if (out.dtype() != dt || static_cast<size_t>(out.numel()) != count)
      ctx.fail("output was allocated as {} {}", dtype_name(out.dtype()), dims_str(out.dims()));
  };
  if (n.has_attr("value_float")) {
    expect(DType::kFloat, 1);
    out.data<float>()[0] = n.attr_f("value_float", 0);
  } else if (n.has_attr("value_floats")) {
    std::vector<float> v = n.attr_floats("value_floats");
    expect(DType::kFloat, v.size());
    std::copy(v.begin(), v.end(), out.data<float>());
  } else if (n.has_attr("value_int")) {
    expect(DType::kInt64, 1);
    out.data<int64_t>()[0] = n.attr_i("value_int", 0);
  } else if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    expect(DType::kInt64, v.size());
    std::copy(v.begin(), v.end(), out.data<int64_t>());
  } else if (n.has_attr("value_string")) {
    expect(DType::kString, 1);
    out.data<std::string>()[0] = n.attr_s("value_string", "");
  } else if (n.has_attr("value_strings")) {
    std::vector<std::string> v = n.attr_strings("value_strings");
    expect(DType::kString, v.size());
    std::copy(v.begin(), v.end(), out.data<std::string>());
  } else {
    ctx.fail("no value attribute");
  }
}

void identity_kernel(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  if (!v) ctx.fail("input 0 is required");
  // Sequences and optionals are immutable values: pass them on as they are.
  if (!v->is_tensor()) ctx.set_output(0, *v);
  else ctx.set_output(0, Value(v->tensor().clone()));
}

/// Reshape, Flatten, Squeeze, Unsqueeze: same elements, new dims (set by the shape function).
void copy_kernel(KernelContext& ctx) { copy_elements(ctx.input(0), ctx.output(0)); }

/// 53-bit doubles in [0, 1) from MT19937 drawn as numpy's legacy RandomState does, so a
/// seeded Dropout gives the same mask as numpy.random.seed(seed); uniform(0, 1).
class UniformDoubles {
 public:
  explicit UniformDoubles(uint32_t seed) : gen_(seed) {}
  double next() {
    uint32_t a = gen_() >> 5, b = gen_() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  std::mt19937 gen_;
};

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  double ratio = ctx.attr_f("ratio", 0.5f);
  bool training = false;
  if (ctx.opset() >= 12) {
    ratio = ctx.has_input(1) ? scalar_double(ctx.input(1), "ratio") : 0.5;
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.dtype() != DType::kBool || t.numel() != 1) ctx.fail("training_mode must be a bool scalar");
      training = t.data<uint8_t>()[0] != 0;
    }
  }
  Tensor* mask = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  if (!training || ratio == 0) {
    copy_elements(x, y);
    if (mask) {
      dispatch_all(mask->dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, std::string>)
          std::fill(mask->data<T>(), mask->data<T>() + mask->numel(), from_double<T>(1));
      }, "Dropout mask");
    }
    return;
  }
  if (!(ratio > 0 && ratio < 1)) ctx.fail("ratio must be in [0, 1), got {}", ratio);
  uint32_t seed = ctx.has_attr("seed") ? static_cast<uint32_t>(ctx.attr_i("seed", 0))
                                       : std::random_device{}();
  UniformDoubles rng(seed);
  double scale = 1.0 / (1.0 - ratio);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t k = 0; k < x.numel(); ++k) {
      bool keep = rng.next() >= ratio;
      py[k] = keep ? from_double<T>(static_cast<double>(static_cast<acc_t<T>>(px[k])) * scale)
                   : from_double<T>(0);
      if (mask) mask->data<bool>()[k] = keep;
    }
  }, "Dropout");
}

// ---- Transpose / Concat / Split / Slice ----

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  size_t r = x.rank();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (!ctx.has_attr("perm"))
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  if (perm.size() != r) ctx.fail("perm has {} entries, input rank is {}", perm.size(), r);
  std::vector<int64_t> in_strides = strides_of(x.dims()), strides(r);
  for (size_t k = 0; k < r; ++k) {
    if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(r)) ctx.fail("perm entry {} is out of range", perm[k]);
    strides[k] = in_strides[static_cast<size_t>(perm[k])];
    if (y.dim(k) != x.dim(static_cast<size_t>(perm[k]))) ctx.fail("output shape does not match perm");
  }
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_strided(x.data<T>(), 0, strides, y.dims(), y.data<T>());
  });
}

void concat_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", 1), static_cast<int64_t>(y.rank())));
  int64_t outer = span(y.dims(), 0, axis), inner = span(y.dims(), axis + 1, y.rank());
  int64_t out_row = y.dim(axis) * inner, at = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    if (x.rank() != y.rank() || x.dtype() != y.dtype()) ctx.fail("input {} does not match the output", i);
    int64_t row = x.dim(axis) * inner;
    if (at + row > out_row || x.numel() != outer * row) ctx.fail("input {} does not fit the output", i);
    dispatch_bytes(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = y.data<T>() + at;
      for (int64_t o = 0; o < outer; ++o) std::copy(src + o * row, src + (o + 1) * row, dst + o * out_row);
    });
    at += row;
  }
}

void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(x.rank())));
  int64_t outer = span(x.dims(), 0, axis), inner = span(x.dims(), axis + 1, x.rank());
  int64_t in_row = x.dim(axis) * inner, at = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) ctx.fail("output {} has no name", i);
    Tensor& y = ctx.output(i);
    int64_t row = y.rank() == x.rank() ? y.dim(axis) * inner : -1;
    if (row < 0 || at + row > in_row || y.numel() != outer * row) ctx.fail("output {} does not fit the input", i);
    dispatch_bytes(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>() + at;
      T* dst = y.data<T>();
      for (int64_t o = 0; o < outer; ++o) std::copy(src + o * in_row, src + o * in_row + row, dst + o * row);
    });
    at += row;
  }
}

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  auto r = static_cast<int64_t>(x.rank());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
    if (!ctx.has_attr("axes"))
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  } else {
    starts = ctx.input_ints(1);
    ends = ctx.input_ints(2);
    if (ctx.has_input(3)) axes = ctx.input_ints(3);
    else
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (ctx.has_input(4)) steps = ctx.input_ints(4);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> in_strides = strides_of(x.dims()), strides = in_strides;
  int64_t offset = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    auto a = static_cast<size_t>(norm_axis(ctx, axes[k], r));
    int64_t dim = x.dim(a), step = steps[k];
    if (step == 0) ctx.fail("step on axis {} is 0", a);
    if (dim == 0) continue;
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    s = step > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    if (y.dim(a) > 0) offset += s * in_strides[a];
    strides[a] = y.dim(a) > 1 ? in_strides[a] * step : 0;  // a huge step takes one element
  }
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_strided(x.data<T>(), offset, strides, y.dims(), y.data<T>());
  });
}

// ---- Shape / Size / Expand / Tile / ConstantOfShape / Range ----

void shape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  auto r = static_cast<int64_t>(x.rank());
  int64_t start = ctx.opset() >= 15 ? ctx.attr_i("start", 0) : 0;
  int64_t end = ctx.opset() >= 15 ? ctx.attr_i("end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  if (y.numel() != std::max<int64_t>(end - start, 0)) ctx.fail("output size does not match start/end");
  for (int64_t k = start; k < end; ++k) y.data<int64_t>()[k - start] = x.dim(static_cast<size_t>(k));
}

void size_kernel(KernelContext& ctx) { ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel(); }

void expand_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.rank() > y.rank()) ctx.fail("output rank is below the input rank");
  size_t lead = y.rank() - x.rank();
  std::vector<int64_t> in_strides = strides_of(x.dims()), strides(y.rank(), 0);
  for (size_t k = 0; k < x.rank(); ++k) {
    int64_t d = x.dim(k), o = y.dim(lead + k);
    if (d != o && d != 1) ctx.fail("cannot expand dim {} to {}", d, o);
    strides[lead + k] = d == 1 ? 0 : in_strides[k];
  }
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_strided(x.data<T>(), 0, strides, y.dims(), y.data<T>());
  });
}

/// Writes the tile of axes k.. of `src` into `dst`, then repeats it along axis k.
template <typename T>
void tile_axis(const T* src, T* dst, size_t k, const Dims& in, const std::vector<int64_t>& in_strides,
               const std::vector<int64_t>& out_strides, const std::vector<int64_t>& reps) {
  if (k + 1 == in.size()) {
    std::copy(src, src + in[k], dst);
  } else {
    for (int64_t i = 0; i < in[k]; ++i)
      tile_axis(src + i * in_strides[k], dst + i * out_strides[k], k + 1, in, in_strides, out_strides, reps);
  }
  int64_t block = in[k] * out_strides[k];
  for (int64_t rep = 1; rep < reps[k]; ++rep) std::copy(dst, dst + block, dst + rep * block);
}

void tile_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> reps = ctx.input_ints(1);
  if (reps.size() != x.rank() || y.rank() != x.rank()) ctx.fail("repeats must have one entry per input axis");
  for (size_t k = 0; k < x.rank(); ++k)
    if (y.dim(k) != x.dim(k) * reps[k]) ctx.fail("output shape does not match the repeats");
  if (y.numel() == 0) return;
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.rank() == 0) y.data<T>()[0] = x.data<T>()[0];
    else tile_axis(x.data<T>(), y.data<T>(), 0, x.dims(), strides_of(x.dims()), strides_of(y.dims()), reps);
  });
}

void constant_of_shape_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const Tensor* v = ctx.node().attr_t("value");
  if (!v) {
    if (y.dtype() != DType::kFloat) ctx.fail("output must be float without a 'value' attribute");
    std::fill(y.data<float>(), y.data<float>() + y.numel(), 0.0f);
    return;
  }
  if (v->numel() != 1 || v->dtype() != y.dtype()) ctx.fail("attribute 'value' must hold one element");
  dispatch_bytes(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill(y.data<T>(), y.data<T>() + y.numel(), v->data<T>()[0]);
  });
}

void range_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  dispatch_numeric(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = y.data<T>();
    if constexpr (std::is_integral_v<T>) {
      auto start = static_cast<int64_t>(ctx.input(0).data<T>()[0]);
      auto delta = static_cast<int64_t>(ctx.input(2).data<T>()[0]);
      // Every value lies in [start, limit), but k * delta alone may pass int64 (start near
      // INT64_MIN, delta 2^62): add in uint64, which wraps to the right value.
      for (int64_t k = 0; k < y.numel(); ++k)
        p[k] = static_cast<T>(
            static_cast<int64_t>(static_cast<uint64_t>(start) +
                                 static_cast<uint64_t>(k) * static_cast<uint64_t>(delta)));
    } else {
      double start = scalar_double(ctx.input(0), "start"), delta = scalar_double(ctx.input(2), "delta");
      for (int64_t k = 0; k < y.numel(); ++k) p[k] = from_double<T>(start + static_cast<double>(k) * delta);
    }
  }, "Range");
}

// ---- DepthToSpace / SpaceToDepth / Trilu / EyeLike / OneHot ----

void depth_space(KernelContext& ctx, bool to_space) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  int64_t b = ctx.attr_i("blocksize", 0);
  if (x.rank() != 4 || b <= 0) ctx.fail("needs a 4-D input and a positive blocksize");
  const int64_t bb = checked_mul(b, b, "attribute 'blocksize' squared");
  // Both are a reshape to 6-D, a transpose and a reshape back; the output, read as
  // 6-D, walks the input with these strides.
  Dims o6;
  std::vector<int64_t> s6;
  if (to_space) {
    int64_t n = x.dim(0), c = x.dim(1) / bb, h = x.dim(2), w = x.dim(3);
    o6 = {n, c, h, b, w, b};  // output (n, c, h, b1, w, b2)
    int64_t hw = h * w;
    if (ctx.attr_s("mode", "DCR") == "DCR")  // input (n, b1, b2, c, h, w)
      s6 = {b * b * c * hw, hw, w, b * c * hw, 1, c * hw};
    else  // CRD: input (n, c, b1, b2, h, w)
      s6 = {c * b * b * hw, b * b * hw, w, b * hw, 1, hw};
  } else {
    int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
    o6 = {n, b, b, c, h, w};  // output (n, b1, b2, c, h, w); input (n, c, h, b1, w, b2)
    s6 = {c * h * b * w * b, w * b, 1, h * b * w * b, b * w * b, b};
  }
  if (dims_numel(o6) != y.numel() || y.numel() != x.numel()) ctx.fail("output shape does not match");
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_strided(x.data<T>(), 0, s6, o6, y.data<T>());
  });
}

void depth_to_space_kernel(KernelContext& ctx) { depth_space(ctx, true); }
void space_to_depth_kernel(KernelContext& ctx) { depth_space(ctx, false); }

void trilu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2");
  int64_t k = ctx.has_input(1) ? ctx.input_ints(1).at(0) : 0;
  bool upper = ctx.attr_i("upper", 1) != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t at = (m * rows + i) * cols + j;
          bool keep = upper ? j - i >= k : j - i <= k;
          dst[at] = keep ? src[at] : T{};
        }
  });
}

void eye_like_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  if (y.rank() != 2) ctx.fail("output must be 2-D");
  int64_t k = ctx.attr_i("k", 0), rows = y.dim(0), cols = y.dim(1);
  dispatch_all(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string>) {
      ctx.fail("EyeLike does not support string");
    } else {
      T* p = y.data<T>();
      std::fill(p, p + y.numel(), from_double<T>(0));
      if (k < cols && k > -rows)  // else no diagonal entry falls inside (and i + k could overflow)
        for (int64_t i = 0; i < rows; ++i)
          if (i + k >= 0 && i + k < cols) p[i * cols + i + k] = from_double<T>(1);
    }
  }, "EyeLike");
}

void one_hot_kernel(KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& y = ctx.output(0);
  if (values.numel() != 2 || values.dtype() != y.dtype()) ctx.fail("values must hold (off, on)");
  const double depth_value = scalar_double(ctx.input(1), "depth");
  // As the shape function: a NaN, a fraction below 1 or a depth past int64 is refused
  // before the cast (which would be UB).
  if (!(depth_value >= 1) || depth_value > 9.0e18) ctx.fail("depth must be positive, got {}", depth_value);
  auto depth = static_cast<int64_t>(depth_value);
  auto r = static_cast<int64_t>(ind.rank());
  int64_t axis = ctx.attr_i("axis", -1);
  if (axis < -r - 1 || axis > r) ctx.fail("axis {} is out of range", axis);
  if (axis < 0) axis += r + 1;
  int64_t outer = span(ind.dims(), 0, static_cast<size_t>(axis));
  int64_t inner = span(ind.dims(), static_cast<size_t>(axis), ind.rank());
  int64_t count = 0;
  if (!mul_fits(outer, depth, count) || !mul_fits(count, inner, count) || y.numel() != count)
    ctx.fail("output shape does not match depth");
  // Indices outside [-depth, depth) select no entry. A float index is truncated as a cast
  // would, but NaN and values past int64 are out of range before the cast, not UB in it:
  // they become INT64_MIN, which stays negative after adding depth.
  std::vector<int64_t> idx(static_cast<size_t>(ind.numel()));
  dispatch_numeric(ind.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < idx.size(); ++k) {
      const auto v = static_cast<acc_t<T>>(ind.data<T>()[k]);
      if constexpr (std::is_floating_point_v<acc_t<T>>)
        idx[k] = v > -9.0e18 && v < 9.0e18 ? static_cast<int64_t>(v) : INT64_MIN;
      else
        idx[k] = static_cast<int64_t>(v);
    }
  }, "OneHot indices");
  dispatch_bytes(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = y.data<T>();
    std::fill(p, p + y.numel(), values.data<T>()[0]);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[static_cast<size_t>(o * inner + i)];
        if (v < 0) v += depth;
        if (v >= 0 && v < depth) p[(o * depth + v) * inner + i] = values.data<T>()[1];
      }
  });
}

}  // namespace

void register_tensor(Registry& r) {
  // dtypes are checked by the dispatch inside each kernel, so every op takes any dtype.
  r.add("", "Constant", 1, 1000, {}, constant_kernel, -1);
  r.add("", "Identity", 1, 1000, {}, identity_kernel);
  r.add("", "Dropout", 1, 1000, {}, dropout_kernel);
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) r.add("", op, 1, 1000, {}, copy_kernel);
  r.add("", "Transpose", 1, 1000, {}, transpose_kernel);
  r.add("", "Concat", 1, 1000, {}, concat_kernel);
  r.add("", "Split", 1, 1000, {}, split_kernel);
  r.add("", "Slice", 1, 1000, {}, slice_kernel);
  r.add("", "Shape", 1, 1000, {}, shape_kernel);
  r.add("", "Size", 1, 1000, {}, size_kernel);
  r.add("", "Expand", 1, 1000, {}, expand_kernel);
  r.add("", "Tile", 1, 1000, {}, tile_kernel);
  r.add("", "ConstantOfShape", 1, 1000, {}, constant_of_shape_kernel, -1);
  r.add("", "Range", 1, 1000, {}, range_kernel);
  r.add("", "DepthToSpace", 1, 1000, {}, depth_to_space_kernel);
  r.add("", "SpaceToDepth", 1, 1000, {}, space_to_depth_kernel);
  r.add("", "Trilu", 1, 1000, {}, trilu_kernel);
  r.add("", "EyeLike", 1, 1000, {}, eye_like_kernel);
  r.add("", "OneHot", 1, 1000, {}, one_hot_kernel);
  register_tensor_pad(r);
}

}  // namespace onyx::kernels
