#include "inputs.h"

#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "base/half.h"

namespace onyx::fuzz {

Watchdog::Watchdog(int seconds) : seconds_(seconds) {
  std::thread([this] { loop(); }).detach();
}

void Watchdog::arm(RunOptions* o) {
  std::lock_guard<std::mutex> l(mu_);
  current_ = o;
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
  cv_.notify_one();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> l(mu_);
  current_ = nullptr;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (!current_) {
      cv_.wait(l);
    } else if (std::chrono::steady_clock::now() >= deadline_) {
      current_->terminate = true;
      current_ = nullptr;
    } else {
      cv_.wait_until(l, deadline_);
    }
  }
}

float InputMaker::any_float() {
  static const float kSpecial[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 65504.0f, 1e30f, -1e30f,
                                   1e-40f, 3.4e38f, std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN()};
  size_t k = below(10);
  if (k < 7) return std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng_);
  if (k < 9) return static_cast<float>(static_cast<int>(below(9)) - 4);
  return kSpecial[below(std::size(kSpecial))];
}

int64_t InputMaker::any_int() {
  static const int64_t kSpecial[] = {0, -1, 1, 127, -128, 255, 32767, INT32_MAX, INT32_MIN,
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min(), int64_t{1} << 32};
  size_t k = below(10);
  if (k < 8) return static_cast<int64_t>(below(9)) - 3;
  if (k < 9) return static_cast<int64_t>(rng_());
  return kSpecial[below(std::size(kSpecial))];
}

std::string InputMaker::any_string() {
  static const char* const kWords[] = {"", "a", "abc", "Hello", " x ", "0", "-1", "3.5",
                                       "\xc3\xa9t\xc3\xa9", "\xff\xfe", "A B  C"};
  if (below(3) == 0) return kWords[below(std::size(kWords))];
  std::string s(below(7), ' ');
  for (char& c : s) c = static_cast<char>(below(4) ? 'a' + below(26) : below(256));
  return s;
}

void InputMaker::fill(Tensor& t) {
  const int64_t n = t.numel();
  auto each = [&](auto* p, auto make) {
    for (int64_t i = 0; i < n; ++i) p[i] = make();
  };
  switch (t.dtype()) {
    case DType::kFloat: each(t.data<float>(), [&] { return any_float(); }); break;
    case DType::kDouble: each(t.data<double>(), [&] { return double{any_float()}; }); break;
    case DType::kComplex64: {
      float* p = t.data<float>();
      for (int64_t i = 0; i < 2 * n; ++i) p[i] = any_float();
      break;
    }
    case DType::kComplex128: {
      double* p = t.data<double>();
      for (int64_t i = 0; i < 2 * n; ++i) p[i] = any_float();
      break;
    }
    case DType::kFloat16: each(t.data<uint16_t>(), [&] { return Float16::from_float(any_float()); }); break;
    case DType::kBFloat16: each(t.data<uint16_t>(), [&] { return BFloat16::from_float(any_float()); }); break;
    case DType::kInt8: each(t.data<int8_t>(), [&] { return static_cast<int8_t>(any_int()); }); break;
    case DType::kUint8: each(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(any_int()); }); break;
    case DType::kInt16: each(t.data<int16_t>(), [&] { return static_cast<int16_t>(any_int()); }); break;
    case DType::kUint16: each(t.data<uint16_t>(), [&] { return static_cast<uint16_t>(any_int()); }); break;
    case DType::kInt32: each(t.data<int32_t>(), [&] { return static_cast<int32_t>(any_int()); }); break;
    case DType::kUint32: each(t.data<uint32_t>(), [&] { return static_cast<uint32_t>(any_int()); }); break;
    case DType::kInt64: each(t.data<int64_t>(), [&] { return any_int(); }); break;
    case DType::kUint64: each(t.data<uint64_t>(), [&] { return static_cast<uint64_t>(any_int()); }); break;
    case DType::kBool: each(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(below(2)); }); break;
    case DType::kString: each(t.data<std::string>(), [&] { return any_string(); }); break;
    // Unpacked sub-byte values, one per byte, in their ranges (as the loader makes them).
    case DType::kInt4: each(t.data<int8_t>(), [&] { return static_cast<int8_t>(static_cast<int>(below(16)) - 8); }); break;
    case DType::kInt2: each(t.data<int8_t>(), [&] { return static_cast<int8_t>(static_cast<int>(below(4)) - 2); }); break;
    case DType::kUint4:
    case DType::kFloat4E2M1: each(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(below(16)); }); break;
    case DType::kUint2: each(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(below(4)); }); break;
    default:  // the float8 types: any bit pattern
      each(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(rng_()); });
  }
}

int64_t InputMaker::symbol(const std::string& name) {
  auto it = symbols_.find(name);
  if (it == symbols_.end()) it = symbols_.emplace(name, small_dim()).first;
  return it->second;
}

bool InputMaker::tensor(const ir::TypeInfo& type, Tensor& out, int64_t max_elements) {
  DType dt = type.elem;
  if (dt == DType::kUndefined) dt = static_cast<DType>(1 + below(kMaxDTypeCode));
  Dims dims;
  if (type.has_shape) {
    for (const auto& d : type.shape) {
      if (d.known()) dims.push_back(d.value);
      else if (!d.param.empty()) dims.push_back(symbol(d.param));
      else dims.push_back(small_dim());
    }
  } else {
    for (size_t r = below(4); r > 0; --r) dims.push_back(small_dim());
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d > max_elements || (d > 0 && n > max_elements / d)) return false;
    n *= d;
  }
  out = Tensor(dt, dims);
  fill(out);
  return true;
}

bool InputMaker::value(const ir::TypeInfo& type, Value& out, int64_t max_elements, int depth) {
  switch (type.kind) {
    case ir::TypeInfo::Kind::kTensor: {
      Tensor t;
      if (!tensor(type, t, max_elements)) return false;
      out = Value(std::move(t));
      return true;
    }
    case ir::TypeInfo::Kind::kSequence: {
      if (!type.inner || !type.inner->is_tensor()) return false;
      std::vector<Tensor> items(below(4));
      for (Tensor& t : items)
        if (!tensor(*type.inner, t, max_elements)) return false;
      out = Value::sequence(type.inner->elem, std::move(items));
      return true;
    }
    case ir::TypeInfo::Kind::kOptional:
      if (below(3) == 0 || !type.inner || depth > 2) {
        out = Value::none();
        return true;
      }
      return value(*type.inner, out, max_elements, depth + 1);
    default: return false;
  }
}

}  // namespace onyx::fuzz
