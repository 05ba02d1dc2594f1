// Shape functions of the logic family: comparisons, boolean and bitwise ops, Where.
#include "shape/elementwise.h"

namespace onyx::shape {

namespace {

void compare(InferContext& ctx) {
  require_same_dtype(ctx, {0, 1});
  infer_broadcast(ctx, {0, 1}, DType::kBool, true);
}

void boolean(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::kBool}, "a bool tensor");
  require_dtype(ctx, 1, {DType::kBool}, "a bool tensor");
  infer_broadcast(ctx, {0, 1}, DType::kBool, true);
}

void not_shape(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::kBool}, "a bool tensor");
  propagate(ctx, 0, 0);
}

const std::vector<DType>& int_dtypes() {
  static const std::vector<DType> v = {DType::kInt8,  DType::kInt16,  DType::kInt32,
                                       DType::kInt64, DType::kUint8,  DType::kUint16,
                                       DType::kUint32, DType::kUint64};
  return v;
}

void bitwise(InferContext& ctx) {
  require_same_dtype(ctx, {0, 1});
  require_dtype(ctx, 0, int_dtypes(), "an integer tensor");
  infer_broadcast(ctx, {0, 1}, ctx.input_dtype(0));
}

void bitwise_not(InferContext& ctx) {
  require_dtype(ctx, 0, int_dtypes(), "an integer tensor");
  propagate(ctx, 0, 0);
}

void where(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::kBool}, "a bool tensor (the condition)");
  require_same_dtype(ctx, {1, 2});
  infer_broadcast(ctx, {0, 1, 2}, ctx.input_dtype(1));
}

}  // namespace

void register_logic_shapes(ShapeRegistry& r) {
  for (const char* op : {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"})
    r.add("", op, compare);
  for (const char* op : {"And", "Or", "Xor"}) r.add("", op, boolean);
  r.add("", "Not", not_shape);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) r.add("", op, bitwise);
  r.add("", "BitwiseNot", bitwise_not);
  r.add("", "Where", where);
}

}  // namespace onyx::shape
