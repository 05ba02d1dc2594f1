// Tensor and Value: the data that flows through a session.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onyx/dtype.h"

namespace onyx {

/// Concrete shape: one extent per axis.
using Dims = std::vector<int64_t>;

/// Number of elements of `dims`; throws onyx::Error on a negative dim or overflow.
int64_t dims_numel(const Dims& dims);

/// "[1, 3, 224, 224]"
std::string dims_str(const Dims& dims);

/// A dense tensor. Storage is shared (copying a Tensor shares the buffer); it may own
/// its memory or view memory kept alive by another object (an mmap'ed model file).
/// In memory every element takes dtype_size() bytes: sub-byte types (int4, uint4,
/// float4, int2, uint2) are held unpacked, one element per byte; strings are
/// std::string objects.
class Tensor {
 public:
  Tensor() = default;
  /// Allocates a zero-filled tensor.
  Tensor(DType dtype, Dims dims);
  /// A view of `data` (which must outlive the tensor via `keepalive`). `keepalive` is also
  /// the buffer's identity, by which Session::run tells that an output would share memory
  /// with a feed: pass a non-null one (a no-op deleter where the caller keeps the memory).
  static Tensor view(DType dtype, Dims dims, void* data, std::shared_ptr<void> keepalive);
  /// A scalar (rank 0) tensor holding `v`.
  template <typename T>
  static Tensor scalar(DType dtype, T v) {
    Tensor t(dtype, {});
    *t.data<T>() = v;
    return t;
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t axis) const { return dims_[axis]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  /// The elements as T. T may not be wider than one element (dtype_size): a kernel that
  /// read a float16 input as double would run past the buffer, so that is an onyx::Error
  /// (kRuntime) instead. Narrower views (bytes, uint16 of float16) are allowed.
  template <typename T>
  T* data() {
    if (sizeof(T) > elem_bytes_ && numel_ > 0) width_error(sizeof(T));
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    if (sizeof(T) > elem_bytes_ && numel_ > 0) width_error(sizeof(T));
    return static_cast<const T*>(data_);
  }

  /// Same buffer, other dims (numel must match).
  Tensor reshaped(Dims dims) const;
  /// A view of `dims` elements of `dtype` at `data`, which the caller guarantees lies
  /// inside this tensor's buffer: it shares the buffer (storage(), storage_users()), as a
  /// slice of a Concat's output that a producer writes in place does.
  Tensor view_inside(DType dtype, Dims dims, void* data) const;
  /// Deep copy.
  Tensor clone() const;
  /// True when both share one buffer.
  bool shares_buffer_with(const Tensor& other) const { return holder_ == other.holder_; }
  /// Identity of the allocation the data lives in (the same for every view of one
  /// buffer or one mapped file); null for an undefined tensor.
  const void* storage() const { return holder_.get(); }
  /// How many tensors share the buffer (1: this one alone).
  long storage_users() const { return holder_.use_count(); }

 private:
  [[noreturn]] void width_error(size_t width) const;

  DType dtype_ = DType::kUndefined;
  uint8_t elem_bytes_ = 0;  ///< dtype_size(dtype_)
  Dims dims_;
  int64_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<void> holder_;
};

/// What a graph value holds at run time: a tensor, a sequence of tensors, or an
/// optional that may be empty. `kNone` is an empty optional (or an absent value).
class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence };
  Value() = default;
  Value(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {}  // NOLINT implicit
  static Value sequence(DType elem, std::vector<Tensor> items) {
    Value v;
    v.kind_ = Kind::kSequence;
    v.seq_dtype_ = elem;
    v.seq_ = std::make_shared<std::vector<Tensor>>(std::move(items));
    return v;
  }
  static Value none() { return Value(); }

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_none() const { return kind_ == Kind::kNone; }
  const Tensor& tensor() const;
  Tensor& tensor();
  const std::vector<Tensor>& seq() const;
  DType seq_dtype() const { return seq_dtype_; }

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  DType seq_dtype_ = DType::kUndefined;
  std::shared_ptr<std::vector<Tensor>> seq_;
};

}  // namespace onyx
