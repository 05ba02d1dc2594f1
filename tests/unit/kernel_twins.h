// Test helper for the optimized kernels of src/kernels/cpu/: runs one node through a
// session on the reference kernels (SessionOptions::reference_kernels, the oracle) and
// through sessions on the default (optimized) kernels at 1 and 3 threads, and compares
// the outputs elementwise within atol + rtol * |reference| (NaN must meet NaN, an
// infinity the same infinity).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {

/// One input of the node under test: a graph input fed at run time, or an initializer
/// (a constant the kernel sees at planning); an empty name is an omitted input.
struct TwinInput {
  std::string name;
  Tensor value;
  bool constant = false;
};

/// A one-node model and its inputs.
struct TwinCase {
  std::string op;
  std::vector<TwinInput> inputs;
  std::vector<AttrSpec> attrs;
  int64_t opset = 17;
  std::string domain;
  int outputs = 1;
};

inline int32_t elem_of(DType t) {
  switch (t) {
    case DType::kFloat:
      return kFloat;
    case DType::kInt64:
      return kInt64;
    case DType::kInt32:
      return kInt32;
    case DType::kDouble:
      return kDouble;
    case DType::kBool:
      return kBool;
    default:
      return 0;
  }
}

inline std::vector<DimSpec> dim_specs(const Dims& d) {
  return std::vector<DimSpec>(d.begin(), d.end());
}

inline TensorSpec tensor_spec(const std::string& name, const Tensor& t) {
  return TensorSpec::raw_of(name, elem_of(t.dtype()), t.dims(),
                            std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

inline std::string twin_model(const TwinCase& c) {
  GraphSpec g;
  std::vector<std::string> ins;
  for (const TwinInput& in : c.inputs) {
    ins.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.constant)
      g.initializers.push_back(tensor_spec(in.name, in.value));
    else
      g.inputs.push_back(
          tensor_info(in.name, elem_of(in.value.dtype()), dim_specs(in.value.dims())));
  }
  std::vector<std::string> outs;
  for (int o = 0; o < c.outputs; ++o) {
    outs.push_back("y" + std::to_string(o));
    g.outputs.push_back(ValueInfoSpec(outs.back(), TypeSpec::unranked(kFloat)));
  }
  g.nodes = {NodeSpec(c.op, ins, outs, c.attrs, "node", c.domain)};
  ModelSpec m(g, c.opset);
  if (!c.domain.empty()) m.opsets.push_back({c.domain, 1});
  return m.serialize();
}

inline std::vector<Value> run_twin(const TwinCase& c, bool reference, int threads) {
  const std::string bytes = twin_model(c);
  SessionOptions opts;
  opts.threads = threads;
  opts.reference_kernels = reference;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  std::vector<std::pair<std::string, Value>> feeds;
  for (const TwinInput& in : c.inputs)
    if (!in.name.empty() && !in.constant) feeds.push_back({in.name, in.value});
  return s->run(feeds);
}

/// True when got matches ref within atol + rtol * |ref| (NaN meets NaN, inf the same inf).
inline bool close_to(double ref, double got, double atol, double rtol) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return ref == got;
  return std::fabs(ref - got) <= atol + rtol * std::fabs(ref);
}

/// Runs the case on the reference and on the optimized kernels (1 and 3 threads) and
/// expects the same output shapes and values within the tolerance.
inline void expect_twins(const TwinCase& c, double atol, double rtol, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<Value> ref = run_twin(c, true, 1);
  for (int threads : {1, 3}) {
    const std::vector<Value> got = run_twin(c, false, threads);
    ASSERT_EQ(ref.size(), got.size());
    for (size_t o = 0; o < ref.size(); ++o) {
      const Tensor& r = ref[o].tensor();
      const Tensor& g = got[o].tensor();
      ASSERT_EQ(r.dims(), g.dims()) << "output " << o << ", threads " << threads;
      ASSERT_EQ(r.dtype(), DType::kFloat);
      ASSERT_EQ(g.dtype(), DType::kFloat);
      for (int64_t i = 0; i < r.numel(); ++i) {
        const float rv = r.data<float>()[i], gv = g.data<float>()[i];
        ASSERT_TRUE(close_to(rv, gv, atol, rtol))
            << "output " << o << " [" << i << "] of " << dims_str(r.dims()) << ": reference " << rv
            << ", optimized " << gv << ", threads " << threads;
      }
    }
  }
}

/// Uniform floats in [lo, hi].
inline Tensor random_floats(const Dims& d, std::mt19937& rng, float lo = -3.0f, float hi = 3.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kFloat, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

/// Puts NaN, +inf, -inf, ±0 and (huge = true) values near the float limits of exp and
/// of squares at random places of a float tensor. Sums are tested without the huge ones:
/// 1e30 - 1e30 + x is x in the reference's double sums and 0 in float.
inline void sprinkle_specials(Tensor& t, std::mt19937& rng, bool huge = true) {
  if (t.numel() == 0) return;
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 88.8f, -104.5f};
  std::uniform_int_distribution<int64_t> at(0, t.numel() - 1);
  for (float v : specials)
    if (huge || std::fabs(v) < 1e20f) t.data<float>()[at(rng)] = v;
}

}  // namespace onyx::test
