// GEMM microbenchmark (Google Benchmark): onyx's SGEMM (src/simd/gemm) in GFLOP/s beside an
// FMA-throughput loop that measures the peak of one core on the widest vectors the CPU has.
// Shapes: M = N = K in {64, 256, 1024} (B prepacked, as for constant weights, and B packed
// per call), GEMV (M = 1), and the GEMMs of resnet50's convolutions as im2col + GEMM gives
// them (M = out channels, N = out H * W, K = in channels * kh * kw; A = the weights, B = the
// im2col panels). `make bench` runs the peak and the 1024^3 shape and writes them in
// bench/RESULTS.md; run it alone for every shape.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/gemm_bench.cc"
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace onyx::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Independent FMA chains per loop iteration: enough to cover latency x FMA pipes on every
// core we know (Zen 5 at 4 cycles x 2 pipes of 512 bits needs 8; 12 measured 14% low
// there), one register each plus the two constants: 24 in the 32 vector registers of
// AVX-512; 12 on targets with 16 (AVX2, SSE4), where 24 spilled to the stack and the
// loop measured 77 GFLOP/s on a Zen 3 core whose SGEMM reached 93.
#if HWY_TARGET <= HWY_AVX3
constexpr int kChains = 24;
#define ONYX_FMA_CHAINS(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
  X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#else
constexpr int kChains = 12;
#define ONYX_FMA_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#endif

/// `iters` rounds of kChains independent FMA chains on full vectors; returns a value that
/// depends on every chain (so nothing is optimized away). Flops: 2 * kChains * lanes *
/// iters (FmaChainCount).
HWY_NOINLINE float FmaChains(int64_t iters) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.99999994f), c = hn::Set(d, 1e-8f);
  // Named variables, not an array: GCC keeps an array of vectors in memory.
#define ONYX_INIT(k) auto a##k = hn::Set(d, 1.0f + 0.05f * (k));
#define ONYX_STEP(k) a##k = hn::MulAdd(a##k, m, c);
#define ONYX_SUM(k) s = hn::Add(s, a##k);
  ONYX_FMA_CHAINS(ONYX_INIT)
  for (int64_t i = 0; i < iters; ++i) {
    ONYX_FMA_CHAINS(ONYX_STEP)
  }
  auto s = hn::Zero(d);
  ONYX_FMA_CHAINS(ONYX_SUM)
#undef ONYX_SUM
#undef ONYX_STEP
#undef ONYX_INIT
  return hn::GetLane(hn::SumOfLanes(d, s));
}
#undef ONYX_FMA_CHAINS

int64_t FmaChainCount() {
  return kChains;
}

int64_t FloatLanes() {
  return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>()));
}

}  // namespace HWY_NAMESPACE
}  // namespace onyx::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/thread_pool.h"
#include "simd/gemm.h"

namespace onyx::bench {
HWY_EXPORT(FmaChains);
HWY_EXPORT(FloatLanes);
HWY_EXPORT(FmaChainCount);
namespace {

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

void set_flops(benchmark::State& state, double flops_per_iter) {
  state.counters["FLOPS"] = benchmark::Counter(
      flops_per_iter * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

std::unique_ptr<ThreadPool> pool_of(int64_t threads) {
  return threads > 1 ? std::make_unique<ThreadPool>(static_cast<int>(threads)) : nullptr;
}

/// The peak of one core: independent FMA chains on the widest vectors (FmaChains).
void BM_FmaPeak(benchmark::State& state) {
  constexpr int64_t kIters = 1 << 20;
  const int64_t lanes = HWY_DYNAMIC_DISPATCH(FloatLanes)();
  const int64_t chains = HWY_DYNAMIC_DISPATCH(FmaChainCount)();
  for (auto _ : state) benchmark::DoNotOptimize(HWY_DYNAMIC_DISPATCH(FmaChains)(kIters));
  set_flops(state, 2.0 * static_cast<double>(chains * lanes) * kIters);
  state.SetLabel(std::string(simd::gemm_target_name()) + ", " + std::to_string(lanes) + " lanes");
}

/// C[M x N] = A[M x K] * B[K x N]: args M, N, K, threads, mode (0: B prepacked once,
/// 1: B packed on every call by sgemm, 2: B given as panels (as im2col writes them)).
void BM_Sgemm(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const int64_t threads = state.range(3), mode = state.range(4);
  const std::vector<float> a = random_floats(M * K, 1), b = random_floats(K * N, 2);
  std::vector<float> c(static_cast<size_t>(M * N));
  auto pool = pool_of(threads);
  const simd::PackedB pb = simd::pack_b(false, K, N, b.data(), N, nullptr);
  const int64_t nr = simd::gemm_panel_width();
  std::vector<float> panels;
  if (mode == 2) {
    const int64_t np = (N + nr - 1) / nr;
    panels.assign(static_cast<size_t>(np * K * nr), 0.0f);
    for (int64_t q = 0; q < np; ++q)
      for (int64_t p = 0; p < K; ++p)
        for (int64_t t = 0; t < nr && q * nr + t < N; ++t)
          panels[static_cast<size_t>((q * K + p) * nr + t)] =
              b[static_cast<size_t>(p * N + q * nr + t)];
  }
  for (auto _ : state) {
    if (mode == 0)
      simd::sgemm_packed(false, M, 1.0f, a.data(), K, pb, 0.0f, c.data(), N, pool.get());
    else if (mode == 1)
      simd::sgemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N,
                  pool.get());
    else
      simd::sgemm_panels(false, M, N, K, 1.0f, a.data(), K, panels.data(), 0.0f, c.data(), N,
                         pool.get());
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K));
}

void square_args(benchmark::internal::Benchmark* b, int64_t threads) {
  b->ArgNames({"M", "N", "K", "threads", "mode"});
  for (int64_t s : {64, 256, 1024})
    for (int64_t mode : {0, 1}) b->Args({s, s, s, threads, mode});
}

/// GEMV: one row against a prepacked weight (a classifier head, a decoder step).
void gemv_args(benchmark::internal::Benchmark* b, int64_t threads) {
  b->ArgNames({"M", "N", "K", "threads", "mode"});
  b->Args({1, 1000, 2048, threads, 0});  // resnet50's fc
  b->Args({1, 1000, 512, threads, 0});   // resnet18's fc
  b->Args({1, 4096, 1024, threads, 0});
  b->Args({4, 1024, 1024, threads, 0});  // a few rows (a small batch, a decoder step)
}

/// The distinct GEMMs of resnet50's convolutions at 224 x 224, batch 1 (torchvision's
/// v1.5: the stride sits on the 3x3 of each first bottleneck): M = out channels, N = out
/// H * W, K = in channels * kh * kw. A is the weights (row-major), B the im2col panels.
void resnet50_args(benchmark::internal::Benchmark* b, int64_t threads) {
  b->ArgNames({"M", "N", "K", "threads", "mode"});
  const int64_t shapes[][3] = {
      {64, 12544, 147},                                                       // conv1 7x7 s2
      {64, 3136, 64},   {64, 3136, 576},  {256, 3136, 64},  {64, 3136, 256},  // layer1
      {128, 3136, 256}, {128, 784, 1152}, {512, 784, 128},  {512, 784, 256},  // layer2
      {128, 784, 512},  {256, 784, 512},  {256, 196, 2304}, {1024, 196, 256},
      {1024, 196, 512},  // layer3
      {256, 196, 1024}, {512, 196, 1024}, {512, 49, 4608},  {2048, 49, 512},
      {2048, 49, 1024},  // layer4
      {512, 49, 2048},
  };
  for (const auto& s : shapes) b->Args({s[0], s[1], s[2], threads, 2});
}

BENCHMARK(BM_FmaPeak);
// One thread: FLOP/s over the thread's CPU time (the machine may be shared); two threads:
// over wall-clock time (every thread's work counts).
BENCHMARK(BM_Sgemm)->Name("sgemm/square")->Apply([](auto* b) { square_args(b, 1); });
BENCHMARK(BM_Sgemm)->Name("sgemm/square")->Apply([](auto* b) {
                                           square_args(b, 2);
                                         }) -> UseRealTime();
BENCHMARK(BM_Sgemm)->Name("sgemm/gemv")->Apply([](auto* b) { gemv_args(b, 1); });
BENCHMARK(BM_Sgemm)->Name("sgemm/gemv")->Apply([](auto* b) { gemv_args(b, 2); }) -> UseRealTime();
BENCHMARK(BM_Sgemm)->Name("sgemm/resnet50")->Apply([](auto* b) { resnet50_args(b, 1); });
BENCHMARK(BM_Sgemm)->Name("sgemm/resnet50")->Apply([](auto* b) {
                                             resnet50_args(b, 2);
                                           }) -> UseRealTime();

}  // namespace
}  // namespace onyx::bench

BENCHMARK_MAIN();
#endif  // HWY_ONCE
