// Numpy-style broadcast iteration for elementwise reference kernels.
//
//   map2<float, float, float>(a, b, out, [](float x, float y) { return x + y; });
//
// Equal shapes and scalar operands take straight loops; otherwise the output index
// space is collapsed (size-1 axes dropped, contiguous runs merged) and walked row by
// row, where a row is the innermost axis and every input steps by 0 or 1 along it.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "base/checked.h"
#include "base/error.h"
#include "kernels/kernel.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

/// Output index space of an N-input broadcast, collapsed to as few axes as possible.
/// strides[k][d] is the element stride of input k along collapsed axis d (0 where the
/// input is broadcast along it).
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> shape;
  std::array<std::vector<int64_t>, N> strides;
  int64_t numel = 0;
};

/// Builds the plan of `ins` broadcast to `out`. Fails (instead of reading out of bounds)
/// when an input cannot be broadcast to `out`.
template <size_t N>
BroadcastPlan<N> make_broadcast_plan(const Dims& out, const std::array<const Dims*, N>& ins) {
  const size_t rank = out.size();
  BroadcastPlan<N> p;
  p.numel = dims_numel(out);
  if (p.numel == 0) return p;  // nothing to walk (for_each_row returns); extents may not multiply
  // Per input: stride along every output axis (missing leading axes are broadcast).
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) {
    const Dims& d = *ins[k];
    if (d.size() > rank)
      fail_runtime("broadcast: input {} has shape {} of higher rank than the output {}", k,
                   dims_str(d), dims_str(out));
    full[k].assign(rank, 0);
    int64_t s = 1;
    for (size_t j = d.size(); j-- > 0;) {
      size_t axis = j + rank - d.size();
      if (d[j] == out[axis]) {
        full[k][axis] = d[j] == 1 ? 0 : s;
      } else if (d[j] != 1) {
        fail_runtime("broadcast: input {} of shape {} does not broadcast to {}", k, dims_str(d),
                     dims_str(out));
      }
      if (!mul_fits(s, d[j], s)) s = 0;  // only for an empty input, which is never read
    }
  }
  // Drop size-1 axes, then merge axis d into the previous one when every input's
  // stride along the previous axis equals its stride along d times the extent of d.
  for (size_t axis = 0; axis < rank; ++axis) {
    if (out[axis] == 1) continue;
    if (!p.shape.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N && merge; ++k)
        merge = p.strides[k].back() == full[k][axis] * out[axis];
      if (merge) {
        p.shape.back() *= out[axis];
        for (size_t k = 0; k < N; ++k) p.strides[k].back() = full[k][axis];
        continue;
      }
    }
    p.shape.push_back(out[axis]);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(full[k][axis]);
  }
  if (p.shape.empty()) {  // a single element
    p.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(0);
  }
  return p;
}

/// Calls row(n, out_offset, in_offsets, in_steps) for every innermost run of `n`
/// output elements; in_steps[k] is 0 or 1.
template <size_t N, typename Row>
void for_each_row(const BroadcastPlan<N>& p, Row&& row) {
  if (p.numel == 0) return;
  const size_t outer = p.shape.size() - 1;
  const int64_t n = p.shape.back();
  std::array<int64_t, N> step{};
  for (size_t k = 0; k < N; ++k) step[k] = p.strides[k].back();
  std::vector<int64_t> idx(outer, 0);
  std::array<int64_t, N> off{};
  for (int64_t o = 0; o < p.numel; o += n) {
    row(n, o, off, step);
    // odometer over the outer axes, updating offsets incrementally
    for (size_t d = outer; d-- > 0;) {
      if (++idx[d] < p.shape[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d];
        break;
      }
      idx[d] = 0;
      for (size_t k = 0; k < N; ++k) off[k] -= p.strides[k][d] * (p.shape[d] - 1);
    }
  }
}

/// out[i] = f(a[ia], b[ib]) over the broadcast of a_dims and b_dims to out_dims.
/// `out` may alias `a` or `b` only when that input has the output's shape.
template <typename A, typename B, typename O, typename F>
void map2_raw(const A* a, const Dims& a_dims, const B* b, const Dims& b_dims, O* out,
              const Dims& out_dims, F&& f) {
  const int64_t n = dims_numel(out_dims);
  const int64_t na = dims_numel(a_dims), nb = dims_numel(b_dims);
  // An input with the output's element count has the output's linear layout (the
  // shape function checked that the shapes broadcast), so these paths index by i.
  if (na == n && nb == n) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  if (nb == 1 && na == n) {
    const B& s = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
    return;
  }
  if (na == 1 && nb == n) {
    const A& s = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(s, b[i]);
    return;
  }
  auto plan = make_broadcast_plan<2>(out_dims, {&a_dims, &b_dims});
  for_each_row(plan, [&](int64_t len, int64_t o, const std::array<int64_t, 2>& off,
                         const std::array<int64_t, 2>& st) {
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    O* po = out + o;
    if (st[0] && st[1]) {
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
    } else if (st[0]) {
      const B& s = *pb;
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], s);
    } else if (st[1]) {
      const A& s = *pa;
      for (int64_t i = 0; i < len; ++i) po[i] = f(s, pb[i]);
    } else {
      const auto v = f(*pa, *pb);
      for (int64_t i = 0; i < len; ++i) po[i] = v;
    }
  });
}

/// map2_raw over tensors: out = f(a, b) with numpy broadcasting.
template <typename A, typename B, typename O, typename F>
void map2(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  map2_raw<A, B, O>(a.data<A>(), a.dims(), b.data<B>(), b.dims(), out.data<O>(), out.dims(),
                    std::forward<F>(f));
}

/// out[i] = f(a[ia], b[ib], c[ic]) over the broadcast of three inputs.
template <typename A, typename B, typename C, typename O, typename F>
void map3(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F&& f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  O* po = out.data<O>();
  auto plan = make_broadcast_plan<3>(out.dims(), {&a.dims(), &b.dims(), &c.dims()});
  for_each_row(plan, [&](int64_t len, int64_t o, const std::array<int64_t, 3>& off,
                         const std::array<int64_t, 3>& st) {
    for (int64_t i = 0; i < len; ++i)
      po[o + i] = f(pa[off[0] + i * st[0]], pb[off[1] + i * st[1]], pc[off[2] + i * st[2]]);
  });
}

/// The dims input B takes in a pre-opset-7 binary op (Add-1..6, Equal-1..6, ...): with
/// broadcast=1 and `axis` set, B aligns to A's axes starting at `axis`, which is numpy
/// alignment once B is padded with trailing 1s. Other cases are B's own dims.
inline Dims legacy_rhs_dims(const KernelContext& ctx, const Dims& a, const Dims& b) {
  if (ctx.opset() >= 7 || ctx.attr_i("broadcast", 0) == 0 || !ctx.has_attr("axis")) return b;
  int64_t rank = static_cast<int64_t>(a.size());
  int64_t axis = ctx.attr_i("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis + static_cast<int64_t>(b.size()) > rank)
    ctx.fail("B of shape {} does not fit into A of shape {} at axis {}", dims_str(b), dims_str(a),
             ctx.attr_i("axis", 0));
  Dims out = b;
  out.resize(static_cast<size_t>(rank - axis), 1);
  return out;
}

}  // namespace onyx::kernels
