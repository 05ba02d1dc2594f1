// Reference kernels of the gather family: Gather, GatherElements, GatherND and the
// scatters. Every index read from a tensor is range-checked before it is used.
#include <algorithm>

#include "base/checked.h"
#include "kernels/reference/arith.h"
#include "kernels/reference/dispatch.h"
#include "kernels/reference/tensor_data.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

int64_t norm_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

/// Index `v` into an axis of size `dim`, negative counting from the end; fails when outside.
int64_t norm_index(const KernelContext& ctx, int64_t v, int64_t dim) {
  if (v < -dim || v >= dim) ctx.fail("index {} is out of range for an axis of size {}", v, dim);
  return v < 0 ? v + dim : v;
}

/// Product of dims [from, to), checked: a subset of an empty tensor's dims is bounded
/// by nothing.
int64_t span(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to; ++k) p = checked_mul(p, d[k], "a product of dims");
  return p;
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> ind = int_values(ctx.input(1), "Gather indices");
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(data.rank())));
  int64_t outer = span(data.dims(), 0, axis), dim = data.dim(axis);
  int64_t inner = span(data.dims(), axis + 1, data.rank());
  auto n = static_cast<int64_t>(ind.size());
  int64_t want = 0;
  if (!mul_fits(outer, n, want) || !mul_fits(want, inner, want) || y.numel() != want)
    ctx.fail("output shape does not match data and indices");
  for (int64_t& v : ind) v = norm_index(ctx, v, dim);
  dispatch_bytes(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data.data<T>();
    T* out = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t v : ind) {
        const T* s = in + (o * dim + v) * inner;
        out = std::copy(s, s + inner, out);
      }
  });
}

/// Walks every position of `dims`, calling f(flat position, per-axis index vector).
template <typename F>
void for_each_index(const Dims& dims, F&& f) {
  int64_t n = dims_numel(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(k, idx);
    for (size_t a = dims.size(); a-- > 0;) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}

/// For GatherElements and the element scatters: the data offset of every indices
/// position, with the axis coordinate taken from the index values.
std::vector<int64_t> element_offsets(const KernelContext& ctx, const Tensor& data, const Tensor& indices,
                                     size_t axis) {
  if (indices.rank() != data.rank()) ctx.fail("indices must have the rank of data");
  for (size_t k = 0; k < data.rank(); ++k)
    if (k != axis && indices.dim(k) > data.dim(k))
      ctx.fail("indices dim {} on axis {} exceeds data dim {}", indices.dim(k), k, data.dim(k));
  std::vector<int64_t> ind = int_values(indices, "indices");
  std::vector<int64_t> strides = strides_of(data.dims());
  std::vector<int64_t> off(ind.size());
  for_each_index(indices.dims(), [&](int64_t k, const std::vector<int64_t>& idx) {
    int64_t pos = 0;
    for (size_t a = 0; a < idx.size(); ++a)
      pos += (a == axis ? norm_index(ctx, ind[static_cast<size_t>(k)], data.dim(a)) : idx[a]) * strides[a];
    off[static_cast<size_t>(k)] = pos;
  });
  return off;
}

void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& y = ctx.output(0);
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(data.rank())));
  std::vector<int64_t> off = element_offsets(ctx, data, indices, axis);
  if (y.numel() != static_cast<int64_t>(off.size())) ctx.fail("output shape does not match indices");
  dispatch_bytes(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data.data<T>();
    T* out = y.data<T>();
    for (size_t k = 0; k < off.size(); ++k) out[k] = in[off[k]];
  });
}

/// GatherND / ScatterND addressing: data = [batch..., rest], indices = [batch..., m..., k].
/// Gives, per (batch, m) tuple, the offset of the addressed slice in data, and the slice size.
struct NdPlan {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  /// Elements gathered (or scattered): offsets * slice, -1 when that overflows.
  int64_t elements() const {
    int64_t n = 0;
    return mul_fits(static_cast<int64_t>(offsets.size()), slice, n) ? n : -1;
  }
};

NdPlan nd_plan(const KernelContext& ctx, const Tensor& data, const Tensor& indices, size_t batch_dims) {
  if (indices.rank() < 1 || indices.rank() <= batch_dims || data.rank() <= batch_dims)
    ctx.fail("indices and data must have rank > batch_dims");
  auto k = static_cast<size_t>(indices.dim(indices.rank() - 1));
  if (k > data.rank() - batch_dims) ctx.fail("indices.shape[-1] = {} exceeds the data rank", k);
  for (size_t a = 0; a < batch_dims; ++a)
    if (indices.dim(a) != data.dim(a)) ctx.fail("batch dim {} differs between data and indices", a);
  std::vector<int64_t> ind = int_values(indices, "indices");
  std::vector<int64_t> strides = strides_of(data.dims());
  NdPlan p;
  p.slice = span(data.dims(), batch_dims + k, data.rank());
  int64_t batches = span(data.dims(), 0, batch_dims);
  int64_t batch_block = span(data.dims(), batch_dims, data.rank());
  int64_t per_batch = span(indices.dims(), batch_dims, indices.rank() - 1);
  p.offsets.resize(checked_count({batches, per_batch}, "the index tuples of indices"));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t m = 0; m < per_batch; ++m) {
      int64_t tuple = b * per_batch + m, pos = b * batch_block;
      for (size_t j = 0; j < k; ++j) {
        size_t a = batch_dims + j;
        pos += norm_index(ctx, ind[static_cast<size_t>(tuple) * k + j], data.dim(a)) * strides[a];
      }
      p.offsets[static_cast<size_t>(tuple)] = pos;
    }
  return p;
}

void gather_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& y = ctx.output(0);
  int64_t b = ctx.opset() >= 12 ? ctx.attr_i("batch_dims", 0) : 0;
  if (b < 0) ctx.fail("batch_dims must be >= 0");
  NdPlan p = nd_plan(ctx, data, ctx.input(1), static_cast<size_t>(b));
  if (y.numel() != p.elements()) ctx.fail("output shape does not match");
  dispatch_bytes(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data.data<T>();
    T* out = y.data<T>();
    for (int64_t off : p.offsets) out = std::copy(in + off, in + off + p.slice, out);
  });
}

// ---- scatters ----

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const KernelContext& ctx) {
  std::string r = ctx.attr_s("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  ctx.fail("unknown reduction '{}'", r);
}

/// dst = reduce(dst, v): the update step of every scatter.
template <typename T>
void apply(T& dst, const T& v, Reduction r) {
  if (r == Reduction::kNone) {
    dst = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    dst = (r == Reduction::kAdd || r == Reduction::kMax) ? (dst || v) : (dst && v);
  } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Float16> ||
                       std::is_same_v<T, BFloat16>) {
    using A = acc_t<T>;
    A a = static_cast<A>(dst), b = static_cast<A>(v);
    switch (r) {
      // integers wrap (two's complement) rather than overflow, as in Add and Mul
      case Reduction::kAdd: dst = T(wadd(a, b)); break;
      case Reduction::kMul: dst = T(wmul(a, b)); break;
      case Reduction::kMax: dst = T(std::max(a, b)); break;
      default: dst = T(std::min(a, b)); break;
    }
  }
}

/// Runs `f` with the element type of `dt`: any type for plain assignment, numbers and
/// bool for reductions.
template <typename F>
void dispatch_scatter(const KernelContext& ctx, DType dt, Reduction r, F&& f) {
  if (r == Reduction::kNone) {
    dispatch_bytes(dt, f);
  } else {
    if (dt == DType::kString) ctx.fail("reduction is not defined for strings");
    dispatch_all(dt, f, "scatter with reduction");
  }
}

void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  Tensor& y = ctx.output(0);
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", 0), static_cast<int64_t>(data.rank())));
  if (updates.dims() != indices.dims() || updates.dtype() != data.dtype())
    ctx.fail("updates must have the shape of indices and the dtype of data");
  Reduction red = ctx.node().op_type == "Scatter" ? Reduction::kNone : reduction_of(ctx);
  std::vector<int64_t> off = element_offsets(ctx, data, indices, axis);
  copy_elements(data, y);
  dispatch_scatter(ctx, data.dtype(), red, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* u = updates.data<T>();
    T* out = y.data<T>();
    for (size_t k = 0; k < off.size(); ++k) apply(out[off[k]], u[k], red);
  });
}

void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& updates = ctx.input(2);
  Tensor& y = ctx.output(0);
  NdPlan p = nd_plan(ctx, data, ctx.input(1), 0);
  if (updates.numel() != p.elements() || updates.dtype() != data.dtype())
    ctx.fail("updates must have shape indices.shape[:-1] + data.shape[k:] and the dtype of data");
  Reduction red = reduction_of(ctx);
  copy_elements(data, y);
  dispatch_scatter(ctx, data.dtype(), red, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* u = updates.data<T>();
    T* out = y.data<T>();
    for (size_t t = 0; t < p.offsets.size(); ++t)
      for (int64_t j = 0; j < p.slice; ++j) apply(out[p.offsets[t] + j], u[static_cast<int64_t>(t) * p.slice + j], red);
  });
}

void tensor_scatter_kernel(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  Tensor& y = ctx.output(0);
  auto r = static_cast<int64_t>(past.rank());
  auto axis = static_cast<size_t>(norm_axis(ctx, ctx.attr_i("axis", -2), r));
  if (axis == 0 || update.rank() != past.rank()) ctx.fail("needs axis != 0 and inputs of equal rank");
  for (size_t k = 0; k < past.rank(); ++k)
    if (k != axis && update.dim(k) != past.dim(k)) ctx.fail("update and past_cache differ on axis {}", k);
  bool circular = ctx.attr_s("mode", "linear") == "circular";
  int64_t batch = past.dim(0), max_len = past.dim(axis), len = update.dim(axis);
  std::vector<int64_t> write(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    write = int_values(ctx.input(2), "write_indices");
    if (static_cast<int64_t>(write.size()) != batch) ctx.fail("write_indices must have one entry per batch");
  }
  int64_t prefix = span(past.dims(), 0, axis), inner = span(past.dims(), axis + 1, past.rank());
  int64_t per_batch = batch == 0 ? 0 : prefix / batch;
  copy_elements(past, y);
  dispatch_bytes(past.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* u = update.data<T>();
    T* out = y.data<T>();
    for (int64_t p = 0; p < prefix; ++p) {
      int64_t start = write[static_cast<size_t>(p / per_batch)];
      for (int64_t s = 0; s < len; ++s) {
        int64_t pos = -1;
        if (circular && max_len > 0)
          pos = (((start % max_len) + max_len) % max_len + s) % max_len;
        else if (!add_fits(start, s, pos))
          pos = -1;
        if (pos < 0 || pos >= max_len)
          ctx.fail("write index {} + {} is outside the cache of length {}", start, s, max_len);
        const T* src = u + (p * len + s) * inner;
        std::copy(src, src + inner, out + (p * max_len + pos) * inner);
      }
    }
  });
}

}  // namespace

void register_gather(Registry& r) {
  r.add("", "Gather", 1, 1000, {}, gather_kernel);
  r.add("", "GatherElements", 1, 1000, {}, gather_elements_kernel);
  r.add("", "GatherND", 1, 1000, {}, gather_nd_kernel);
  r.add("", "Scatter", 1, 1000, {}, scatter_elements_kernel);
  r.add("", "ScatterElements", 1, 1000, {}, scatter_elements_kernel);
  r.add("", "ScatterND", 1, 1000, {}, scatter_nd_kernel);
  r.add("", "TensorScatter", 1, 1000, {}, tensor_scatter_kernel);
}

}  // namespace onyx::kernels
