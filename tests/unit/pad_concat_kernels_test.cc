// Reference-parity tests of the copy kernels src/kernels/cpu/pad.cc and concat.cc: random
// models run once through the reference kernels (SessionOptions::reference_kernels) and
// once through the optimized ones at 1 and 3 threads; the outputs must be identical (both
// only move bytes). Covered: ranks 1-4, pads zero (the view), positive, negative (a crop:
// the reference path), as an initializer and as a graph input, with and without the
// constant; Concat along every axis (negative too), 1-5 inputs, empty inputs, tensors of
// several MiB (pieces spread over the threads), 1-, 4- and 8-byte elements.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

std::vector<Value> run_model(const std::string& bytes, const Feeds& feeds, bool reference,
                             int threads) {
  SessionOptions opts;
  opts.threads = threads;
  opts.reference_kernels = reference;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  return s->run(feeds);
}

void expect_identical(const ModelSpec& m, const Feeds& feeds, const std::string& what) {
  const std::string bytes = m.serialize();
  const Tensor ref = run_model(bytes, feeds, true, 1)[0].tensor();
  for (int threads : {1, 3}) {
    const Tensor got = run_model(bytes, feeds, false, threads)[0].tensor();
    ASSERT_EQ(ref.dims(), got.dims()) << what;
    ASSERT_EQ(ref.dtype(), got.dtype()) << what;
    ASSERT_EQ(std::memcmp(ref.raw(), got.raw(), ref.nbytes()), 0)
        << what << " (" << threads << " threads)";
  }
}

/// Elements of dtype `elem` (ONNX code) with random bytes.
Tensor random_tensor(int32_t elem, const Dims& d, std::mt19937& rng) {
  const DType dt = elem == kFloat ? DType::kFloat : elem == kInt64 ? DType::kInt64 : DType::kUint8;
  Tensor t(dt, d);
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(rng() & 0xff);
  if (dt == DType::kFloat)  // finite values, so NaN payloads cannot hide a difference
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng() % 2001) - 1000;
  return t;
}

std::vector<DimSpec> spec(const Dims& d) {
  return std::vector<DimSpec>(d.begin(), d.end());
}

TEST(PadKernels, MatchReference) {
  std::mt19937 rng(71);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int32_t elems[] = {kFloat, kInt64, kUint8};
  for (int it = 0; it < 60; ++it) {
    const int32_t elem = elems[it % 3];
    Dims xd(static_cast<size_t>(1 + it % 4));
    for (int64_t& v : xd) v = ri(it % 7 == 0 ? 0 : 1, xd.size() >= 3 ? 9 : 40);
    if (it == 5) xd = {1, 64, 120, 130};  // 4 MB: the rows spread over the threads
    const size_t rank = xd.size();
    const int kind = it % 5;  // 0: zeros (view), 1-3: positive, 4: some negative (a crop)
    std::vector<int64_t> pads(2 * rank, 0);
    Dims yd = xd;
    for (size_t a = 0; a < rank; ++a) {
      if (kind != 0) {
        pads[a] = ri(kind == 4 && xd[a] > 1 ? -1 : 0, 3);
        pads[a + rank] = ri(0, 2);
      }
      yd[a] = xd[a] + pads[a] + pads[a + rank];
    }
    const bool pads_input = it % 4 == 3, with_value = it % 3 != 1;
    GraphSpec g;
    g.inputs = {tensor_info("x", elem, spec(xd))};
    if (pads_input)
      g.inputs.push_back(tensor_info("pads", kInt64, {static_cast<int64_t>(2 * rank)}));
    else
      g.initializers.push_back(TensorSpec::int64s("pads", {static_cast<int64_t>(2 * rank)}, pads));
    std::vector<std::string> ins{"x", "pads"};
    if (with_value) {
      Tensor v = random_tensor(elem, {}, rng);
      g.initializers.push_back(TensorSpec::raw_of(
          "value", elem, {}, std::string(static_cast<const char*>(v.raw()), v.nbytes())));
      ins.push_back("value");
    }
    g.nodes = {NodeSpec("Pad", ins, {"y"}, {AttrSpec::String("mode", "constant")})};
    g.outputs = {tensor_info("y", elem, spec(yd))};
    Feeds feeds{{"x", Value(random_tensor(elem, xd, rng))}};
    if (pads_input) {
      Tensor p(DType::kInt64, {static_cast<int64_t>(2 * rank)});
      std::copy(pads.begin(), pads.end(), p.data<int64_t>());
      feeds.push_back({"pads", Value(p)});
    }
    expect_identical(ModelSpec(g, 19), feeds,
                     "Pad x " + dims_str(xd) + " pads " + dims_str(pads) + " elem " + std::to_string(elem));
    if (HasFatalFailure()) return;
  }
}

TEST(ConcatKernels, MatchReference) {
  std::mt19937 rng(72);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int32_t elems[] = {kFloat, kUint8, kInt64};
  for (int it = 0; it < 60; ++it) {
    const int32_t elem = elems[it % 3];
    const auto rank = static_cast<int64_t>(1 + it % 4);
    Dims base(static_cast<size_t>(rank));
    for (int64_t& v : base) v = ri(1, rank >= 3 ? 8 : 30);
    if (rank == 4 && it == 7) base = {1, 64, 56, 56};  // DenseNet-like: MiB-sized inputs
    const int64_t axis = base[1] == 64 ? 1 : ri(static_cast<int>(-rank), static_cast<int>(rank - 1));
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    const int n = 1 + it % 5;
    GraphSpec g;
    std::vector<std::string> ins;
    Feeds feeds;
    Dims yd = base;
    yd[a] = 0;
    for (int i = 0; i < n; ++i) {
      Dims d = base;
      d[a] = base[1] == 64 ? 32 * (i + 1) : ri(i == 1 ? 0 : 1, 6);  // an empty input now and then
      yd[a] += d[a];
      const std::string name = "x" + std::to_string(i);
      g.inputs.push_back(tensor_info(name, elem, spec(d)));
      ins.push_back(name);
      feeds.push_back({name, Value(random_tensor(elem, d, rng))});
    }
    g.nodes = {NodeSpec("Concat", ins, {"y"}, {AttrSpec::Int("axis", axis)})};
    g.outputs = {tensor_info("y", elem, spec(yd))};
    expect_identical(ModelSpec(g, 17), feeds,
                     "Concat of " + std::to_string(n) + " along " + std::to_string(axis) + " to " +
                         dims_str(yd));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace onyx::test
