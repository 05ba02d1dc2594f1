// Reference-parity tests of the optimized float attention kernels (src/kernels/cpu/attention.cc):
// ai.onyx Attention and ONNX Attention-23/24. Each random case runs once through a
// reference session (SessionOptions::reference_kernels: ai.onyx Attention as Transpose,
// MatMul, Mul, Add, Softmax, MatMul; ONNX Attention as the double loops of
// src/kernels/reference/attention.cc) and once through the optimized kernel object, made by
// the registry's factory and run directly at 1 and 3 threads with a reference callback that
// fails the test (so a case handed to the reference cannot pass on the oracle's numbers).
// Outputs start as NaN, so an element the kernel does not write fails; rows whose keys are
// all masked must be NaN in both. Cases cover broadcast leading axes, float and bool masks
// of every broadcastable form, scale given or not, sizes 1, primes, more than one key block
// (S > 512) and more than one query block (T > 64), S = 0; for ONNX Attention 3-D and 4-D
// inputs, grouped K/V heads, causal, softcap, past/present key and value, padded masks
// (opset 24) and nonpad_kv_seqlen.
//
// Tolerance: |got - ref| <= 2e-5 * (1 + |ref|): float dot products of up to 67 terms and a
// SIMD exp (a few ulp) against the reference's float (ai.onyx) or double (ONNX) arithmetic;
// the online softmax rescales partial sums, which keeps the error at the rounding level.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/loader.h"
#include "kernels/registry.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

constexpr double kTol = 2e-5;

Tensor random_float(const Dims& d, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::kFloat, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

/// A bool tensor, true with probability `p`.
Tensor random_bool(const Dims& d, double p, std::mt19937& rng) {
  std::bernoulli_distribution b(p);
  Tensor t(DType::kBool, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = b(rng) ? 1 : 0;
  return t;
}

/// One node with its inputs ("" for an omitted one) and how many outputs it has.
struct Case {
  std::string domain, op = "Attention";
  int opset = 1;
  std::vector<std::string> in_names;
  std::vector<Tensor> inputs;  // by input index; empty where omitted
  std::vector<std::string> out_names;
  std::vector<AttrSpec> attrs;
  std::string what;
};

ModelSpec make_model(const Case& c, Feeds& feeds) {
  GraphSpec g;
  for (size_t i = 0; i < c.in_names.size(); ++i) {
    if (c.in_names[i].empty()) continue;
    const Tensor& t = c.inputs[i];
    const int32_t elem =
        t.dtype() == DType::kBool ? kBool : (t.dtype() == DType::kInt64 ? kInt64 : kFloat);
    g.inputs.push_back(
        tensor_info(c.in_names[i], elem, std::vector<DimSpec>(t.dims().begin(), t.dims().end())));
    feeds.push_back({c.in_names[i], Value(t)});
  }
  for (const std::string& o : c.out_names)
    if (!o.empty()) g.outputs.push_back(ValueInfoSpec(o, TypeSpec::unranked(kFloat)));
  g.nodes = {NodeSpec(c.op, c.in_names, c.out_names, c.attrs, "", c.domain)};
  ModelSpec m(g, c.domain.empty() ? c.opset : 21);
  if (!c.domain.empty()) m.opsets.push_back({c.domain, c.opset});
  return m;
}

std::vector<Tensor> run_reference(const Case& c) {
  Feeds feeds;
  const ModelSpec m = make_model(c, feeds);
  const std::string bytes = m.serialize();
  SessionOptions opts;
  opts.reference_kernels = true;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  std::vector<Tensor> out;
  for (const Value& v : s->run(feeds)) out.push_back(v.tensor());
  return out;
}

void no_reference(kernels::KernelContext& ctx) {
  ctx.fail("the optimized attention kernel handed a valid case to the reference");
}

ir::Attribute attribute(const AttrSpec& a) {
  ir::Attribute at;
  at.name = a.name;
  if (a.type == AttrSpec::kInt) {
    at.type = ir::Attribute::Type::kInt;
    at.i = *a.i;
  } else {
    at.type = ir::Attribute::Type::kFloat;
    at.f = *a.f;
  }
  return at;
}

/// The optimized kernel run directly, its outputs allocated with `dims` and NaN-filled.
std::vector<Tensor> run_kernel(const Case& c, const std::vector<Dims>& dims, int threads) {
  ir::Node node;
  node.op_type = c.op;
  node.domain = c.domain;
  node.opset = c.opset;
  node.inputs = c.in_names;
  node.outputs = c.out_names;
  for (const AttrSpec& a : c.attrs) node.attrs.push_back(attribute(a));
  const std::vector<const kernels::KernelDef*> defs =
      kernels::default_registry().find_optimized(c.domain, c.op, c.opset, DType::kFloat);
  if (defs.empty()) throw std::runtime_error("no optimized " + c.op + " kernel is registered");
  ThreadPool pool(threads);
  kernels::KernelInit init{
      node, {}, {}, std::vector<const Tensor*>(c.in_names.size(), nullptr), no_reference, &pool};
  std::unique_ptr<kernels::Kernel> k = defs[0]->factory(init);
  if (!k) throw std::runtime_error("the optimized kernel declined " + c.what);
  if (!k->overwrites_outputs()) throw std::runtime_error("attention does not overwrite outputs");
  std::vector<Value> vals;
  vals.reserve(c.in_names.size());
  for (size_t i = 0; i < c.in_names.size(); ++i)
    vals.push_back(c.in_names[i].empty() ? Value() : Value(c.inputs[i]));
  std::vector<const Value*> ins;
  for (size_t i = 0; i < c.in_names.size(); ++i)
    ins.push_back(c.in_names[i].empty() ? nullptr : &vals[i]);
  std::vector<Value> outs;
  size_t o = 0;
  for (const std::string& name : c.out_names) {
    Tensor t(DType::kFloat, name.empty() ? Dims{0} : dims[o++]);
    for (int64_t e = 0; e < t.numel(); ++e) t.data<float>()[e] = std::nanf("");
    outs.push_back(Value(t));
  }
  kernels::KernelContext ctx(node, ins, &outs, nullptr, &pool);
  k->run(ctx);
  std::vector<Tensor> got;
  for (size_t i = 0; i < c.out_names.size(); ++i)
    if (!c.out_names[i].empty()) got.push_back(outs[i].tensor());
  return got;
}

void check(const Case& c) {
  const std::vector<Tensor> ref = run_reference(c);
  std::vector<Dims> dims;
  for (const Tensor& t : ref) dims.push_back(t.dims());
  for (int threads : {1, 3}) {
    const std::vector<Tensor> got = run_kernel(c, dims, threads);
    ASSERT_EQ(got.size(), ref.size()) << c.what;
    for (size_t o = 0; o < ref.size(); ++o)
      for (int64_t i = 0; i < ref[o].numel(); ++i) {
        const double r = ref[o].data<float>()[i], g = got[o].data<float>()[i];
        if (std::isnan(r)) {
          ASSERT_TRUE(std::isnan(g)) << c.what << " threads " << threads << " output " << o
                                     << " at " << i << ": " << g << " vs NaN";
          continue;
        }
        ASSERT_LE(std::fabs(r - g), kTol * (1 + std::fabs(r)))
            << c.what << " threads " << threads << " output " << o << " at " << i << ": " << g
            << " vs " << r;
      }
  }
}

// ---- ai.onyx Attention ----

TEST(AttentionKernels, FusedAttentionMatchesReference) {
  std::mt19937 rng(41);
  auto ri = [&](int lo, int hi) {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  const int64_t sizes[] = {1, 2, 7, 16, 31, 64, 67};
  for (int it = 0; it < 48; ++it) {
    const int64_t T = it % 11 == 5 ? 130 : sizes[ri(0, 6)];
    const int64_t S = it % 9 == 4 ? 700 : (it % 13 == 12 ? 0 : sizes[ri(0, 6)]);
    const int64_t D = sizes[ri(0, 6)], Dv = it % 3 == 0 ? D : sizes[ri(0, 6)];
    Dims q{T, D}, k{S, D}, v{S, Dv};
    switch (it % 4) {  // leading axes
      case 1:
        q.insert(q.begin(), 3);
        k.insert(k.begin(), 3);
        v.insert(v.begin(), 3);
        break;
      case 2:  // K and V shared by every head
        q.insert(q.begin(), {2, 3});
        k.insert(k.begin(), {2, 1});
        v.insert(v.begin(), 1);
        break;
      case 3:
        q.insert(q.begin(), 2);
        break;
      default:
        break;
    }
    Case c;
    c.domain = "ai.onyx";
    c.in_names = {"q", "k", "v"};
    c.inputs = {random_float(q, rng), random_float(k, rng), random_float(v, rng)};
    c.out_names = {"y"};
    c.what = "Attention q " + dims_str(q) + " k " + dims_str(k) + " v " + dims_str(v);
    const int mform = it % 7;  // 0: none; the mask's last axes: [T, S], [1, S], [S], [T, 1], lead
    if (mform != 0) {
      Dims md;
      if (mform == 1) md = {T, S};
      if (mform == 2) md = {1, S};
      if (mform == 3) md = {S};
      if (mform == 4) md = {T, 1};
      if (mform == 5) md = {2, 1, T, S};
      if (mform == 6) md = {1, 1, S};
      const bool boolean = it % 2 == 1;
      c.in_names.push_back("mask");
      c.inputs.push_back(boolean ? random_bool(md, it % 5 == 1 ? 0.15 : 0.7, rng)
                                 : random_float(md, rng));
      c.what += std::string(boolean ? " bool" : " float") + " mask " + dims_str(md);
    }
    if (it % 5 == 2) {
      c.attrs.push_back(AttrSpec::Float("scale", 0.37f));
      c.what += " scale";
    }
    SCOPED_TRACE(c.what);
    check(c);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// ---- ONNX Attention ----

TEST(AttentionKernels, OnnxAttentionMatchesReference) {
  std::mt19937 rng(42);
  auto ri = [&](int lo, int hi) {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  for (int it = 0; it < 48; ++it) {
    const bool three_d = it % 2 == 1;
    const int opset = it % 3 == 2 ? 24 : 23;
    const int64_t b = ri(1, 2), kvh = ri(1, 3), qh = kvh * (it % 4 == 3 ? 2 : 1);
    const int64_t sq = it % 10 == 7 ? 1 : ri(1, 70), skv = it % 8 == 5 ? 600 : ri(1, 40);
    const int64_t hd = ri(1, 33), vd = it % 3 == 0 ? hd : ri(1, 20);
    const bool past = it % 5 == 1, present = past || it % 7 == 3;
    const int64_t np = past ? ri(1, 9) : 0, total = np + skv;
    Case c;
    c.opset = opset;
    c.what = "Attention-" + std::to_string(opset) + (three_d ? " 3-D" : " 4-D") + " b " +
             std::to_string(b) + " heads " + std::to_string(qh) + "/" + std::to_string(kvh) +
             " sq " + std::to_string(sq) + " skv " + std::to_string(skv) + " hd " +
             std::to_string(hd) + " vd " + std::to_string(vd);
    c.in_names = {"q", "k", "v"};
    if (three_d) {
      c.inputs = {random_float({b, sq, qh * hd}, rng), random_float({b, skv, kvh * hd}, rng),
                  random_float({b, skv, kvh * vd}, rng)};
      c.attrs = {AttrSpec::Int("q_num_heads", qh), AttrSpec::Int("kv_num_heads", kvh)};
    } else {
      c.inputs = {random_float({b, qh, sq, hd}, rng), random_float({b, kvh, skv, hd}, rng),
                  random_float({b, kvh, skv, vd}, rng)};
    }
    const int mform = it % 6;  // 0: none; 1: [sq, total]; 2: [b, qh, sq, total]; 3: [1, total];
                               // 4: [b, 1, sq, total] bool; 5: shorter than total (opset 24)
    c.in_names.push_back("");
    c.inputs.push_back(Tensor());
    if (mform != 0 && !(mform == 5 && opset < 24)) {
      Dims md;
      if (mform == 1) md = {sq, total};
      if (mform == 2) md = {b, qh, sq, total};
      if (mform == 3) md = {1, total};
      if (mform == 4) md = {b, 1, sq, total};
      if (mform == 5) md = {sq, std::max<int64_t>(1, total - 3)};
      c.in_names[3] = "mask";
      c.inputs[3] = mform == 4 ? random_bool(md, 0.6, rng) : random_float(md, rng);
      c.what += " mask " + dims_str(md);
    }
    if (past) {
      c.in_names.insert(c.in_names.end(), {"past_k", "past_v"});
      c.inputs.push_back(random_float({b, kvh, np, hd}, rng));
      c.inputs.push_back(random_float({b, kvh, np, vd}, rng));
      c.what += " past " + std::to_string(np);
    }
    if (opset == 24 && !past && it % 4 == 0) {
      while (c.in_names.size() < 6) {
        c.in_names.push_back("");
        c.inputs.push_back(Tensor());
      }
      std::vector<int64_t> lens(static_cast<size_t>(b));
      for (auto& l : lens) l = ri(0, static_cast<int>(skv));
      c.in_names.push_back("nonpad");
      c.inputs.push_back(make_tensor<int64_t>(DType::kInt64, {b}, lens));
      c.what += " nonpad_kv_seqlen";
    }
    c.out_names = {"y"};
    if (present) {
      c.out_names.insert(c.out_names.end(), {"present_k", "present_v"});
      c.what += " present";
    }
    if (it % 4 == 1) {
      c.attrs.push_back(AttrSpec::Int("is_causal", 1));
      c.what += " causal";
    }
    if (it % 5 == 3) {
      c.attrs.push_back(AttrSpec::Float("softcap", it % 2 ? 2.5f : -1.5f));
      c.what += " softcap";
    }
    if (it % 7 == 2) {
      c.attrs.push_back(AttrSpec::Float("scale", 0.21f));
      c.what += " scale";
    }
    SCOPED_TRACE(c.what);
    check(c);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The cases the optimized ONNX kernel leaves to the reference: the raw scores output.
TEST(AttentionKernels, QkOutputIsLeftToTheReference) {
  ir::Node node;
  node.op_type = "Attention";
  node.opset = 23;
  node.inputs = {"q", "k", "v"};
  node.outputs = {"y", "", "", "qk"};
  const std::vector<const kernels::KernelDef*> defs =
      kernels::default_registry().find_optimized("", "Attention", 23, DType::kFloat);
  ASSERT_FALSE(defs.empty());
  kernels::KernelInit init{node, {}, {}, {}, no_reference, nullptr};
  EXPECT_EQ(defs[0]->factory(init), nullptr);
}

}  // namespace
}  // namespace onyx::test
