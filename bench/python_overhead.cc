// The C++ side of bench/python_overhead.py: median time of one Session::run on a model
// with one float input of `count` elements, fed the same tensor every call.
// usage: onyx_python_overhead MODEL INPUT_NAME COUNT CALLS  -> prints the median in ns
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "onyx/session.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL INPUT_NAME COUNT CALLS\n", argv[0]);
    return 2;
  }
  auto session = onyx::Session::open(argv[1]);
  const int64_t count = std::atoll(argv[3]);
  const int calls = std::atoi(argv[4]);
  onyx::Tensor x(onyx::DType::kFloat, {count});
  std::vector<std::pair<std::string, onyx::Value>> feeds = {{argv[2], x}};
  for (int i = 0; i < 1000; ++i) session->run(feeds);  // warm-up: arena plans, caches
  std::vector<double> ns(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<onyx::Value> out = session->run(feeds);
    auto t1 = std::chrono::steady_clock::now();
    ns[static_cast<size_t>(i)] = std::chrono::duration<double, std::nano>(t1 - t0).count();
  }
  std::nth_element(ns.begin(), ns.begin() + calls / 2, ns.end());
  std::printf("%.0f\n", ns[static_cast<size_t>(calls / 2)]);
  return 0;
}
