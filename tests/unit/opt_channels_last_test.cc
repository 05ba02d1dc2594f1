// Pass to_channels_last (src/opt/channels_last.cc), its ops (ai.onyx GlobalAveragePool
// with channels_last; FusedConv's is in conv_kernels_test.cc) and the Transpose kernel it
// leans on: MobileNet-like blocks at 14x14 run channels last and match the unoptimized
// graph on the reference kernels; near misses (large images, a pointwise layer that would
// leave the GEMM's panels part empty, no depthwise layer) stay channels first.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "opt_testing.h"

namespace onyx::test {
namespace {

/// x [1, c, hw, hw] -> pointwise c->e, Clip -> depthwise 3x3 -> Clip -> squeeze-excite
/// (GlobalAveragePool, 1x1 e->s, Relu, 1x1 s->e, HardSigmoid, Mul) -> pointwise e->c with
/// the residual x -> depthwise 5x5 stride 2 -> HardSwish. Outputs: the last value and
/// (side_output) the squeeze-excite Mul, read outside the block too.
ModelSpec block(int64_t c, int64_t e, int64_t s, int64_t hw, std::mt19937& rng,
                bool depthwise = true, bool side_output = true) {
  GraphSpec g;
  g.inputs.push_back(tensor_info("x", kFloat, {1, c, hw, hw}));
  auto conv = [&](const std::string& in, const std::string& out, int64_t ci, int64_t co, int64_t k,
                  int64_t group, int64_t stride) {
    g.initializers.push_back(random_init(out + "_w", {co, ci / group, k, k}, rng, -0.5f, 0.5f));
    g.initializers.push_back(random_init(out + "_b", {co}, rng, -0.2f, 0.2f));
    g.nodes.push_back(
        NodeSpec("Conv", {in, out + "_w", out + "_b"}, {out},
                 {AttrSpec::Ints("kernel_shape", {k, k}), AttrSpec::Int("group", group),
                  AttrSpec::Ints("strides", {stride, stride}),
                  AttrSpec::Ints("pads", {k / 2, k / 2, k / 2, k / 2})}));
  };
  g.initializers.push_back(scalar_init("lo", 0.0f));
  g.initializers.push_back(scalar_init("hi", 6.0f));
  conv("x", "pw1", c, e, 1, 1, 1);
  g.nodes.push_back(NodeSpec("Clip", {"pw1", "lo", "hi"}, {"a1"}));
  conv("a1", "dw1", e, e, 3, depthwise ? e : 1, 1);
  g.nodes.push_back(NodeSpec("Clip", {"dw1", "lo", "hi"}, {"a2"}));
  g.nodes.push_back(NodeSpec("GlobalAveragePool", {"a2"}, {"gap"}));
  conv("gap", "se1", e, s, 1, 1, 1);
  g.nodes.push_back(NodeSpec("Relu", {"se1"}, {"se1r"}));
  conv("se1r", "se2", s, e, 1, 1, 1);
  g.nodes.push_back(NodeSpec("HardSigmoid", {"se2"}, {"gate"}));
  g.nodes.push_back(NodeSpec("Mul", {"a2", "gate"}, {"scaled"}));
  conv("scaled", "pw2", e, c, 1, 1, 1);
  g.nodes.push_back(NodeSpec("Add", {"pw2", "x"}, {"res"}));
  conv("res", "dw2", c, c, 5, depthwise ? c : 1, 2);
  g.nodes.push_back(NodeSpec("HardSwish", {"dw2"}, {"y"}));
  const int64_t half = (hw - 1) / 2 + 1;
  g.outputs = {tensor_info("y", kFloat, {1, c, half, half})};
  if (side_output) g.outputs.push_back(tensor_info("scaled", kFloat, {1, e, hw, hw}));
  return ModelSpec(g, 17);
}

int channels_last_convs(const Optimized& o) {
  int n = 0;
  for (const auto& node : o.graph.nodes)
    if (node.domain == "ai.onyx" && node.op_type == "FusedConv" &&
        node.attr_i("channels_last", 0) == 1)
      ++n;
  return n;
}

TEST(OptChannelsLast, MobileNetBlockRunsChannelsLast) {
  std::mt19937 rng(301);
  const ModelSpec m = block(32, 96, 32, 14, rng);
  const Optimized o = optimize_spec(m);
  // Every Conv of the block, the pool channels last; one Transpose in, one out per output.
  EXPECT_EQ(channels_last_convs(o), 6);
  EXPECT_EQ(o.count("ai.onyx.GlobalAveragePool"), 1);
  EXPECT_EQ(o.count("Transpose"), 3);
  Feeds feeds{{"x", random_tensor({1, 32, 14, 14}, rng)}};
  expect_equivalent(m, feeds, "MobileNet block, channels last", 1e-4, 1e-5);
}

TEST(OptChannelsLast, NearMissesStayChannelsFirst) {
  std::mt19937 rng(302);
  // 56x56: pointwise layers of few channels run faster channels first there.
  EXPECT_EQ(channels_last_convs(optimize_spec(block(32, 96, 32, 56, rng))), 0);
  // A projection to 20 channels fills under 85% of any target's GEMM panels.
  EXPECT_EQ(channels_last_convs(optimize_spec(block(20, 96, 32, 14, rng))), 0);
  // No depthwise layer (the 3x3 and 5x5 run as Winograd / im2col channels first).
  EXPECT_EQ(channels_last_convs(optimize_spec(block(32, 96, 32, 14, rng, false))), 0);
  // DenseNet's BatchNormalization as a 1x1 depthwise Conv between channels-first 3x3
  // layers: no window, and a Transpose on each side.
  {
    GraphSpec g;
    g.inputs.push_back(tensor_info("x", kFloat, {1, 32, 14, 14}));
    g.initializers.push_back(random_init("w1", {32, 32, 3, 3}, rng));
    g.initializers.push_back(random_init("s", {32, 1, 1, 1}, rng));
    g.initializers.push_back(random_init("w2", {16, 32, 3, 3}, rng));
    g.nodes.push_back(NodeSpec("Conv", {"x", "w1"}, {"a"}, {AttrSpec::Ints("pads", {1, 1, 1, 1})}));
    g.nodes.push_back(NodeSpec("Conv", {"a", "s"}, {"b"}, {AttrSpec::Int("group", 32)}));
    g.nodes.push_back(NodeSpec("Relu", {"b"}, {"c"}));
    g.nodes.push_back(NodeSpec("Conv", {"c", "w2"}, {"y"}, {AttrSpec::Ints("pads", {1, 1, 1, 1})}));
    g.outputs = {tensor_info("y", kFloat, {1, 16, 14, 14})};
    EXPECT_EQ(channels_last_convs(optimize_spec(ModelSpec(g, 17))), 0);
  }
  // Not on the reference kernels, nor at basic, nor without fused ops.
  const ModelSpec m = block(32, 96, 32, 14, rng);
  EXPECT_EQ(channels_last_convs(optimize_spec(m, GraphOptimization::kBasic)), 0);
  EXPECT_EQ(channels_last_convs(optimize_spec(m, GraphOptimization::kAll, false)), 0);
  // The near misses still compute the same.
  Feeds feeds{{"x", random_tensor({1, 20, 14, 14}, rng)}};
  expect_equivalent(block(20, 96, 32, 14, rng), feeds, "projection to 20 channels", 1e-4, 1e-5);
}

TEST(OptChannelsLast, GlobalAveragePoolChannelsLast) {
  // ai.onyx GlobalAveragePool with channels_last on [N, H, W, C] against ONNX's on the
  // channels-first tensor (reference and default kernels; images up to 112x112, channel
  // counts around the kernel's 64-channel runs).
  std::mt19937 rng(303);
  const std::vector<Dims> shapes = {
      {1, 7, 7, 1280}, {2, 14, 13, 20}, {1, 112, 112, 32}, {3, 1, 1, 65}, {1, 5, 3, 129}};
  for (const Dims& d : shapes) {
    GraphSpec g;
    g.inputs.push_back(tensor_info("x", kFloat, dims_spec(d)));
    g.nodes.push_back(NodeSpec("GlobalAveragePool", {"x"}, {"y"},
                               {AttrSpec::Int("channels_last", 1)}, "", "ai.onyx"));
    g.outputs = {tensor_info("y", kFloat, {d[0], 1, 1, d[3]})};
    ModelSpec m(g, 17);
    m.opsets.push_back({"ai.onyx", 1});
    const Tensor x = random_tensor(d, rng, 0.0f, 2.0f);
    // The expected values in double, channels first.
    Tensor want(DType::kFloat, {d[0], 1, 1, d[3]});
    for (int64_t n = 0; n < d[0]; ++n)
      for (int64_t c = 0; c < d[3]; ++c) {
        double sum = 0;
        for (int64_t p = 0; p < d[1] * d[2]; ++p)
          sum += x.data<float>()[(n * d[1] * d[2] + p) * d[3] + c];
        want.data<float>()[n * d[3] + c] = static_cast<float>(sum / double(d[1] * d[2]));
      }
    for (bool reference : {true, false}) {
      const std::vector<Value> got =
          run_spec(m, {{"x", x}}, GraphOptimization::kNone, reference, 2);
      EXPECT_TRUE(close(Value(want), got[0], 1e-5, 1e-6))
          << dims_str(d) << (reference ? " reference" : " default");
    }
  }
}

TEST(OptChannelsLast, TransposeKernelMatchesReference) {
  // The optimized Transpose (batched 2-D transposes for perms that move one run of axes
  // past the next) against the reference on every permutation of ranks 2-4, float and
  // int32 (4-byte: the fast path) and int64 (the reference), odd extents.
  std::mt19937 rng(304);
  for (size_t rank = 2; rank <= 4; ++rank) {
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (int32_t elem : {kFloat, kInt32, kInt64}) {
        Dims d;
        for (size_t k = 0; k < rank; ++k)
          d.push_back(std::uniform_int_distribution<int64_t>(1, 19)(rng));
        GraphSpec g;
        g.inputs.push_back(tensor_info("x", elem, dims_spec(d)));
        g.nodes.push_back(NodeSpec("Transpose", {"x"}, {"y"}, {AttrSpec::Ints("perm", perm)}));
        g.outputs = {tensor_info("y", elem, {})};
        const ModelSpec m(g, 17);
        Tensor x(elem == kFloat   ? DType::kFloat
                 : elem == kInt32 ? DType::kInt32
                                  : DType::kInt64,
                 d);
        for (int64_t i = 0; i < x.numel(); ++i) {
          if (elem == kFloat) x.data<float>()[i] = static_cast<float>(i) * 0.5f - 3.0f;
          if (elem == kInt32) x.data<int32_t>()[i] = static_cast<int32_t>(i * 7 - 11);
          if (elem == kInt64) x.data<int64_t>()[i] = i * 13 - 5;
        }
        const Tensor want = run_spec(m, {{"x", x}}, GraphOptimization::kNone, true)[0].tensor();
        const Tensor got = run_spec(m, {{"x", x}}, GraphOptimization::kNone, false, 2)[0].tensor();
        ASSERT_EQ(want.dims(), got.dims());
        ASSERT_EQ(want.nbytes(), got.nbytes());
        EXPECT_EQ(0, std::memcmp(want.raw(), got.raw(), want.nbytes()))
            << "perm " << dims_str(perm) << " x " << dims_str(d) << " elem " << elem;
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Large enough to be split over threads: [1, 64, 56, 56] -> [1, 56, 56, 64] and back.
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 3, 1}, std::vector<int64_t>{0, 3, 1, 2}}) {
    GraphSpec g;
    g.inputs.push_back(tensor_info("x", kFloat, {1, 64, 56, 57}));
    g.nodes.push_back(NodeSpec("Transpose", {"x"}, {"y"}, {AttrSpec::Ints("perm", perm)}));
    g.outputs = {tensor_info("y", kFloat, {})};
    const ModelSpec m(g, 17);
    const Tensor x = random_tensor({1, 64, 56, 57}, rng);
    const Tensor want = run_spec(m, {{"x", x}}, GraphOptimization::kNone, true)[0].tensor();
    const Tensor got = run_spec(m, {{"x", x}}, GraphOptimization::kNone, false, 2)[0].tensor();
    EXPECT_EQ(0, std::memcmp(want.raw(), got.raw(), want.nbytes())) << dims_str(perm);
  }
}

}  // namespace
}  // namespace onyx::test
