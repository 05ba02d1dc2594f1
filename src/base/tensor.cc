#include "onyx/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "base/checked.h"
#include "base/big_alloc.h"
#include "base/error.h"

namespace onyx {

int64_t dims_numel(const Dims& dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank))
    fail_model("a shape of rank {} has more than the {} axes onyx allows", dims.size(), kMaxRank);
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail_model("negative dimension {} in shape {}", d, dims_str(dims));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      fail_model("shape {} has more elements than fit in 64 bits", dims_str(dims));
    n *= d;
  }
  return n;
}

std::string dims_str(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

namespace {
constexpr size_t kAlign = 64;
// Refuse absurd allocations cleanly: 64 TiB natively, 2 GiB on 32-bit targets (WASM).
constexpr size_t kMaxBytes = sizeof(size_t) == 8 ? size_t{1} << 46 : size_t{1} << 31;
}  // namespace

Tensor::Tensor(DType dtype, Dims dims) : dtype_(dtype), dims_(std::move(dims)) {
  numel_ = dims_numel(dims_);
  size_t es = dtype_size(dtype);
  if (es == 0) fail_arg("cannot allocate a tensor of dtype {}", dtype_name(dtype));
  elem_bytes_ = static_cast<uint8_t>(es);
  if (static_cast<uint64_t>(numel_) > kMaxBytes / es)
    fail_arg("tensor of shape {} and dtype {} is too large to allocate", dims_str(dims_),
             dtype_name(dtype));
  if (dtype == DType::kString) {
    std::string* arr = nullptr;
    try {
      arr = new std::string[numel_ > 0 ? numel_ : 1];
    } catch (const std::bad_alloc&) {
      fail_runtime("out of memory allocating a string tensor of shape {} ({} strings)",
                   dims_str(dims_), numel_);
    }
    holder_ = std::shared_ptr<void>(arr, [](void* p) { delete[] static_cast<std::string*>(p); });
    data_ = arr;
    return;
  }
  size_t bytes = static_cast<size_t>(numel_) * es;
  size_t alloc = (bytes + kAlign - 1) / kAlign * kAlign;
  if (alloc == 0) alloc = kAlign;
  void* p = alloc_aligned(alloc);
  if (!p) fail_runtime("out of memory allocating {} bytes for shape {}", bytes, dims_str(dims_));
  std::memset(p, 0, alloc);
  holder_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

void Tensor::width_error(size_t width) const {
  fail_runtime("a {} tensor of shape {} was read as {}-byte elements: its inputs' types do not "
               "match what the op computes in (are all inputs bound to one type parameter of "
               "the same type?)", dtype_name(dtype_), dims_str(dims_), width);
}

Tensor Tensor::view(DType dtype, Dims dims, void* data, std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.elem_bytes_ = static_cast<uint8_t>(dtype_size(dtype));
  t.dims_ = std::move(dims);
  t.numel_ = dims_numel(t.dims_);
  t.data_ = data;
  t.holder_ = std::move(keepalive);
  return t;
}

Tensor Tensor::view_inside(DType dtype, Dims dims, void* data) const {
  return view(dtype, std::move(dims), data, holder_);
}

Tensor Tensor::reshaped(Dims dims) const {
  Tensor t = *this;
  int64_t n = dims_numel(dims);
  if (n != numel_)
    fail_runtime("cannot reshape {} elements of shape {} to {}", numel_, dims_str(dims_),
                 dims_str(dims));
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, dims_);
  if (dtype_ == DType::kString) {
    for (int64_t i = 0; i < numel_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (nbytes()) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

const Tensor& Value::tensor() const {
  if (kind_ != Kind::kTensor) fail_runtime("value is not a tensor");
  return tensor_;
}
Tensor& Value::tensor() {
  if (kind_ != Kind::kTensor) fail_runtime("value is not a tensor");
  return tensor_;
}
const std::vector<Tensor>& Value::seq() const {
  if (kind_ != Kind::kSequence) fail_runtime("value is not a sequence");
  return *seq_;
}

}  // namespace onyx
