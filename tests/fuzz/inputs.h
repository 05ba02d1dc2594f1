// Helpers of the run target (run_fuzz.cc): random inputs of a declared type, and a
// watchdog that sets RunOptions::terminate. Built without coverage instrumentation, so
// that the generator's branches and loop counts are not mistaken for new behaviour of
// the library.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "ir/graph.h"
#include "onyx/session.h"
#include "onyx/tensor.h"

namespace onyx::fuzz {

/// Sets RunOptions::terminate of the armed run once `seconds` have passed.
class Watchdog {
 public:
  explicit Watchdog(int seconds);
  void arm(RunOptions* o);
  void disarm();

 private:
  void loop();
  int seconds_;
  std::mutex mu_;
  std::condition_variable cv_;
  RunOptions* current_ = nullptr;
  std::chrono::steady_clock::time_point deadline_;
};

/// Values for graph inputs, drawn from a generator seeded by `seed`: floats mostly in
/// [-3, 3] with now and then 0, -0, inf, NaN or a huge value; integers mostly -3..5 with
/// now and then an extreme; short strings; symbolic and unknown dims 0..4 (one value per
/// symbol), an unknown rank 0..3.
class InputMaker {
 public:
  explicit InputMaker(uint64_t seed) : rng_(seed) {}
  size_t below(size_t n) { return static_cast<size_t>(rng_() % n); }

  /// A value of `type`; false when none is made (larger than `max_elements`, a map or a
  /// sparse tensor).
  bool value(const ir::TypeInfo& type, Value& out, int64_t max_elements, int depth = 0);

 private:
  float any_float();
  int64_t any_int();
  std::string any_string();
  void fill(Tensor& t);
  bool tensor(const ir::TypeInfo& type, Tensor& out, int64_t max_elements);
  int64_t small_dim() { return below(8) == 0 ? 0 : 1 + static_cast<int64_t>(below(4)); }
  int64_t symbol(const std::string& name);

  std::mt19937_64 rng_;
  std::map<std::string, int64_t> symbols_;
};

}  // namespace onyx::fuzz
