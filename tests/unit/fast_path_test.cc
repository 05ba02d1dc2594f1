// Twin tests of the optimized float paths (src/simd/ GEMM in MatMul, Gemm, Conv,
// ConvTranspose; src/kernels/cpu/rnn.cc for LSTM): each random model runs once through the
// optimized kernels (on a 2-thread session) and once through the reference kernels
// (SessionOptions::reference_kernels), and the outputs are compared with a per-op
// tolerance relative to 1 + |reference|.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using Feeds = std::vector<std::pair<std::string, Value>>;

std::vector<Value> run_model(const ModelSpec& m, const Feeds& feeds, bool fast, int fast_threads = 2) {
  std::string bytes = m.serialize();
  SessionOptions opts;
  opts.threads = fast ? fast_threads : 1;
  opts.reference_kernels = !fast;
  auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
  return s->run(feeds);
}

/// Runs both paths and fails when an output differs by more than tol * (1 + |ref|).
void expect_twins(const ModelSpec& m, const Feeds& feeds, double tol, const std::string& what,
                  int fast_threads = 2) {
  std::vector<Value> ref = run_model(m, feeds, false), got = run_model(m, feeds, true, fast_threads);
  ASSERT_EQ(ref.size(), got.size());
  for (size_t o = 0; o < ref.size(); ++o) {
    const Tensor& r = ref[o].tensor();
    const Tensor& g = got[o].tensor();
    ASSERT_EQ(r.dims(), g.dims()) << what;
    for (int64_t i = 0; i < r.numel(); ++i) {
      const double rv = r.data<float>()[i], gv = g.data<float>()[i];
      ASSERT_LE(std::fabs(rv - gv), tol * (1 + std::fabs(rv)))
          << what << " output " << o << " at " << i;
    }
  }
}

Tensor random_float(Dims d, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::kFloat, std::move(d));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

std::vector<DimSpec> spec(const Dims& d) {
  return std::vector<DimSpec>(d.begin(), d.end());
}

TEST(FastPath, MatMulMatchesReference) {
  std::mt19937 rng(21);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int64_t odd[] = {1, 3, 17, 63, 65};
  for (int it = 0; it < 40; ++it) {
    const int64_t M = it < 25 ? odd[it % 5] : ri(1, 80),
                  N = it < 25 ? odd[(it / 5) % 5] : ri(1, 80);
    const int64_t K = it < 25 ? odd[(it + 2) % 5] : ri(1, 300);
    Dims ad{M, K}, bd{K, N};
    switch (it % 5) {
      case 1:
        ad.insert(ad.begin(), {2, 1});
        bd.insert(bd.begin(), 3);
        break;  // broadcast batch
      case 2:
        ad.insert(ad.begin(), 3);
        break;  // shared B
      case 3:
        ad = {K};
        break;  // vector A
      case 4:
        bd = {K};
        break;  // vector B
      default:
        break;
    }
    Dims yd;
    if (it % 5 == 1)
      yd = {2, 3, M, N};
    else if (it % 5 == 2)
      yd = {3, M, N};
    else if (it % 5 == 3)
      yd = {N};
    else if (it % 5 == 4)
      yd = {M};
    else
      yd = {M, N};
    GraphSpec g;
    g.inputs = {tensor_info("a", kFloat, spec(ad)), tensor_info("b", kFloat, spec(bd))};
    g.outputs = {tensor_info("y", kFloat, spec(yd))};
    g.nodes = {NodeSpec("MatMul", {"a", "b"}, {"y"})};
    expect_twins(ModelSpec(g), {{"a", random_float(ad, rng)}, {"b", random_float(bd, rng)}}, 1e-5,
                 "MatMul " + dims_str(ad) + " x " + dims_str(bd));
  }
}

TEST(FastPath, GemmMatchesReference) {
  std::mt19937 rng(22);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 40; ++it) {
    const int64_t M = ri(1, 70), N = ri(1, 70), K = it % 7 == 0 ? 300 : ri(1, 70);
    const bool ta = it & 1, tb = it & 2;
    const float alpha = it % 3 == 0 ? 1.0f : 0.5f, beta = it % 4 == 0 ? 0.0f : -1.5f;
    const Dims ad = ta ? Dims{K, M} : Dims{M, K}, bd = tb ? Dims{N, K} : Dims{K, N};
    Dims cd;
    const int cform = it % 5;  // 0: no C, 1: scalar, 2: [N], 3: [M, 1], 4: [M, N]
    if (cform == 1) cd = {};
    if (cform == 2) cd = {N};
    if (cform == 3) cd = {M, 1};
    if (cform == 4) cd = {M, N};
    GraphSpec g;
    g.inputs = {tensor_info("a", kFloat, spec(ad)), tensor_info("b", kFloat, spec(bd))};
    std::vector<std::string> ins = {"a", "b"};
    Feeds feeds = {{"a", random_float(ad, rng)}, {"b", random_float(bd, rng)}};
    if (cform != 0) {
      g.inputs.push_back(tensor_info("c", kFloat, spec(cd)));
      ins.push_back("c");
      feeds.push_back({"c", random_float(cd, rng)});
    }
    g.outputs = {tensor_info("y", kFloat, {M, N})};
    g.nodes = {NodeSpec("Gemm", ins, {"y"},
                        {AttrSpec::Int("transA", ta), AttrSpec::Int("transB", tb),
                         AttrSpec::Float("alpha", alpha), AttrSpec::Float("beta", beta)})};
    expect_twins(ModelSpec(g), feeds, 1e-5,
                 "Gemm M " + std::to_string(M) + " N " + std::to_string(N));
  }
}

TEST(FastPath, ConvMatchesReference) {
  std::mt19937 rng(23);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 20; ++it) {
    const int64_t group = it % 4 == 3 ? 2 : 1, cg = ri(1, 20), mg = ri(1, 40), n = ri(1, 2);
    const int64_t h = ri(3, 30), w = ri(3, 30), k = it % 5 == 0 ? 1 : ri(1, 3),
                  s = it % 5 == 0 ? 1 : ri(1, 2);
    const int64_t pad = it % 5 == 0 ? 0 : ri(0, 1);
    const Dims xd{n, cg * group, h, w}, wd{mg * group, cg, k, k};
    const Dims yd{n, mg * group, (h + 2 * pad - k) / s + 1, (w + 2 * pad - k) / s + 1};
    GraphSpec g;
    g.inputs = {tensor_info("x", kFloat, spec(xd)), tensor_info("w", kFloat, spec(wd)),
                tensor_info("b", kFloat, {mg * group})};
    g.outputs = {tensor_info("y", kFloat, spec(yd))};
    g.nodes = {NodeSpec("Conv", {"x", "w", "b"}, {"y"},
                        {AttrSpec::Int("group", group), AttrSpec::Ints("strides", {s, s}),
                         AttrSpec::Ints("pads", {pad, pad, pad, pad})})};
    expect_twins(ModelSpec(g),
                 {{"x", random_float(xd, rng)},
                  {"w", random_float(wd, rng)},
                  {"b", random_float({mg * group}, rng)}},
                 1e-5, "Conv x " + dims_str(xd) + " w " + dims_str(wd));
  }
}

TEST(FastPath, LstmMatchesReference) {
  std::mt19937 rng(24);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* dirs[] = {"forward", "reverse", "bidirectional"};
  for (int it = 0; it < 30; ++it) {
    const int64_t S = ri(1, 12), B = ri(1, 5), I = ri(1, 40), H = it % 6 == 0 ? 65 : ri(1, 33);
    const std::string dir = dirs[it % 3];
    const int64_t nd = dir == "bidirectional" ? 2 : 1, layout = (it / 3) % 2;
    const bool seq = it % 4 == 1, init = it % 3 == 2, peep = it % 5 == 3, bias = it % 7 != 4;
    const Dims xd = layout == 0 ? Dims{S, B, I} : Dims{B, S, I};
    const Dims sd = layout == 0 ? Dims{nd, B, H} : Dims{B, nd, H};
    GraphSpec g;
    Feeds feeds;
    std::vector<std::string> ins;
    auto add = [&](const std::string& name, Dims d) {
      g.inputs.push_back(tensor_info(name, kFloat, spec(d)));
      feeds.push_back({name, random_float(d, rng)});
      ins.push_back(name);
    };
    add("x", xd);
    add("w", {nd, 4 * H, I});
    add("r", {nd, 4 * H, H});
    if (bias)
      add("bias", {nd, 8 * H});
    else
      ins.push_back("");
    if (seq) {
      std::vector<int32_t> lens(static_cast<size_t>(B));
      for (auto& l : lens) l = ri(0, static_cast<int>(S));
      g.inputs.push_back(tensor_info("lens", kInt32, {B}));
      feeds.push_back({"lens", make_tensor<int32_t>(DType::kInt32, {B}, lens)});
      ins.push_back("lens");
    } else {
      ins.push_back("");
    }
    if (init) {
      add("h0", sd);
      add("c0", sd);
    } else {
      ins.push_back("");
      ins.push_back("");
    }
    if (peep) add("p", {nd, 3 * H});
    std::vector<AttrSpec> attrs = {AttrSpec::String("direction", dir),
                                   AttrSpec::Int("hidden_size", H),
                                   AttrSpec::Int("layout", layout)};
    if (it % 8 == 5) attrs.push_back(AttrSpec::Float("clip", 0.7f));
    if (it % 9 == 7) attrs.push_back(AttrSpec::Int("input_forget", 1));
    if (it % 10 == 9)  // not the defaults: the optimized path declines, the reference runs
      attrs.push_back(AttrSpec::Strings("activations", {"HardSigmoid", "Tanh", "Relu"}));
    const Dims yd = layout == 0 ? Dims{S, nd, B, H} : Dims{B, S, nd, H};
    g.outputs = {tensor_info("y", kFloat, spec(yd)), tensor_info("yh", kFloat, spec(sd)),
                 tensor_info("yc", kFloat, spec(sd))};
    g.nodes = {NodeSpec("LSTM", ins, {"y", "yh", "yc"}, attrs)};
    expect_twins(ModelSpec(g), feeds, 1e-4,
                 "LSTM " + dir + " x " + dims_str(xd) + " H " + std::to_string(H));
  }
}

// Depthwise Conv (group == C == M): src/simd/depthwise.cc for dilation 1, the direct
// depthwise loop of conv.cc otherwise; 1 and 2 threads.
TEST(FastPath, DepthwiseConvMatchesReference) {
  std::mt19937 rng(29);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 120; ++it) {
    // Some wide rows so whole vectors (AVX-512: 16 floats) run in the row and copy loops.
    const int64_t c = ri(1, 37), n = ri(1, 2), h = ri(1, 20), w = it % 5 == 4 ? ri(21, 90) : ri(1, 20);
    const int64_t kh = ri(1, 5), kw = it % 3 == 0 ? kh : ri(1, 5), sh = ri(1, 2), sw = ri(1, 2);
    const int64_t dil = it % 8 == 7 ? 2 : 1;
    const int64_t pt = ri(0, 2), pl = ri(0, 2), pb = ri(0, 2), pr = ri(0, 2);
    const int64_t ekh = (kh - 1) * dil + 1, ekw = (kw - 1) * dil + 1;
    if (h + pt + pb < ekh || w + pl + pr < ekw) continue;
    const bool bias = it % 2 == 0;
    const Dims xd{n, c, h, w}, wd{c, 1, kh, kw};
    const Dims yd{n, c, (h + pt + pb - ekh) / sh + 1, (w + pl + pr - ekw) / sw + 1};
    GraphSpec g;
    g.inputs = {tensor_info("x", kFloat, spec(xd)), tensor_info("w", kFloat, spec(wd))};
    std::vector<std::string> ins{"x", "w"};
    Feeds feeds{{"x", random_float(xd, rng)}, {"w", random_float(wd, rng)}};
    if (bias) {
      g.inputs.push_back(tensor_info("b", kFloat, {c}));
      ins.push_back("b");
      feeds.push_back({"b", random_float({c}, rng)});
    }
    g.outputs = {tensor_info("y", kFloat, spec(yd))};
    g.nodes = {NodeSpec("Conv", ins, {"y"},
                        {AttrSpec::Int("group", c), AttrSpec::Ints("strides", {sh, sw}),
                         AttrSpec::Ints("dilations", {dil, dil}), AttrSpec::Ints("pads", {pt, pl, pb, pr})})};
    const int threads = (it / 2) % 2 == 0 ? 1 : 2;  // with bias = it % 2: it % 4 covers all four pairs
    ++runs;
    expect_twins(ModelSpec(g), feeds, 1e-5,
                 "depthwise Conv x " + dims_str(xd) + " w " + dims_str(wd) + " strides " + std::to_string(sh) +
                     "," + std::to_string(sw) + " pads " + std::to_string(pt) + "," + std::to_string(pl) + "," +
                     std::to_string(pb) + "," + std::to_string(pr) + " threads " + std::to_string(threads),
                 threads);
  }
  EXPECT_GT(runs, 80);
}

TEST(FastPath, MaxPoolMatchesReference) {
  std::mt19937 rng(25);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 40; ++it) {
    const int64_t n = ri(1, 2), c = ri(1, 5), h = ri(1, 20), w = ri(1, 20);
    const int64_t kh = ri(1, 3), kw = it % 3 == 0 ? 2 : ri(1, 3), sh = ri(1, 3),
                  sw = it % 3 == 0 ? 2 : ri(1, 3);
    const int64_t dh = it % 5 == 4 ? 2 : 1, dw = it % 7 == 6 ? 2 : 1;
    const int64_t ph = std::min<int64_t>(ri(0, 1), kh - 1),
                  pw = it % 3 == 0 ? 0 : std::min<int64_t>(ri(0, 1), kw - 1);
    const bool ceil_mode = it % 4 == 1;
    const int64_t ekh = (kh - 1) * dh + 1, ekw = (kw - 1) * dw + 1;
    if (h + 2 * ph < ekh || w + 2 * pw < ekw) continue;
    auto out = [&](int64_t in, int64_t p, int64_t ek, int64_t s) {
      const int64_t span = in + 2 * p - ek;
      int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= in + p) --o;  // the last window must start inside
      return o;
    };
    const Dims xd{n, c, h, w}, yd{n, c, out(h, ph, ekh, sh), out(w, pw, ekw, sw)};
    Tensor x = random_float(xd, rng);
    if (it % 6 == 2) {  // NaN and -inf propagate as in the reference
      x.data<float>()[ri(0, static_cast<int>(x.numel() - 1))] = std::nanf("");
      x.data<float>()[ri(0, static_cast<int>(x.numel() - 1))] = -INFINITY;
    }
    GraphSpec g;
    g.inputs = {tensor_info("x", kFloat, spec(xd))};
    g.outputs = {tensor_info("y", kFloat, spec(yd))};
    g.nodes = {
        NodeSpec("MaxPool", {"x"}, {"y"},
                 {AttrSpec::Ints("kernel_shape", {kh, kw}), AttrSpec::Ints("strides", {sh, sw}),
                  AttrSpec::Ints("dilations", {dh, dw}), AttrSpec::Ints("pads", {ph, pw, ph, pw}),
                  AttrSpec::Int("ceil_mode", ceil_mode)})};
    std::string bytes = ModelSpec(g).serialize();
    std::vector<Tensor> outs;
    for (bool fast : {false, true}) {
      SessionOptions opts;
      opts.reference_kernels = !fast;
      auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
      outs.push_back(s->run({{"x", x}})[0].tensor());
    }
    ASSERT_EQ(outs[0].dims(), outs[1].dims());
    for (int64_t i = 0; i < outs[0].numel(); ++i) {
      const float r = outs[0].data<float>()[i], f = outs[1].data<float>()[i];
      ASSERT_TRUE(r == f || (std::isnan(r) && std::isnan(f)))
          << "MaxPool x " << dims_str(xd) << " at " << i;
    }
  }
}

}  // namespace
}  // namespace onyx::test
