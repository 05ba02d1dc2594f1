// Shape helpers shared by the elementwise, logic and cast shape files.
#pragma once
#include <vector>

#include "shape/infer.h"

namespace onyx::shape {

/// Output 0 = numpy broadcast of the shapes of `inputs` (unranked when one is), with
/// element type `out`. Applies the opset<7 `broadcast`/`axis` rules of binary ops when
/// `legacy` is set.
void infer_broadcast(InferContext& ctx, const std::vector<size_t>& inputs, DType out,
                     bool legacy = false);

/// Fails unless the given inputs all have the same element type (when known).
void require_same_dtype(const InferContext& ctx, const std::vector<size_t>& inputs);

/// Fails unless input `i` has one of `allowed` element types.
void require_dtype(const InferContext& ctx, size_t i, const std::vector<DType>& allowed,
                   const char* what);

/// Shape B takes in a pre-opset-7 binary op (Add-1..6, Equal-1..6, ...): with
/// broadcast=1 and `axis`, B's dims align to A's starting at `axis` (suffix otherwise);
/// the result is B's shape padded with trailing 1s so numpy broadcasting applies.
ir::Shape legacy_rhs_shape(const InferContext& ctx, const ir::Shape& a, const ir::Shape& b);

}  // namespace onyx::shape
