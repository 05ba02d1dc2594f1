// The float Conv and ConvTranspose kernels of src/kernels/cpu/ (im2col + blocked GEMM,
// depthwise, Winograd) against their direct-loop references: random shapes, groups,
// strides, dilations and pads, run through a session on the optimized kernels and one on
// the reference kernels (SessionOptions::reference_kernels), W as an initializer (packed
// at planning).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "onyx/tensor.h"

namespace onyx {
namespace {

using test::AttrSpec;
using test::DimSpec;

/// Runs op (Conv or ConvTranspose) on random data both ways and returns the largest error
/// relative to 1 + |ref|.
double compare(const char* op, const Dims& xd, const Dims& wd, const Dims& yd,
               const std::vector<int64_t>& st, const std::vector<int64_t>& dl,
               const std::vector<int64_t>& pads, const std::vector<int64_t>& out_pad, int64_t group,
               int64_t maps, bool bias, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(dims_numel(xd))), w(static_cast<size_t>(dims_numel(wd)));
  std::vector<float> b(static_cast<size_t>(maps));
  for (float& v : x) v = nd(rng);
  for (float& v : w) v = nd(rng);
  for (float& v : b) v = nd(rng);
  test::GraphSpec g;
  g.inputs = {test::tensor_info("x", test::kFloat, std::vector<DimSpec>(xd.begin(), xd.end()))};
  g.initializers.push_back(test::TensorSpec::floats("w", wd, w));
  std::vector<std::string> ins{"x", "w"};
  if (bias) {
    g.initializers.push_back(test::TensorSpec::floats("b", {maps}, b));
    ins.push_back("b");
  }
  std::vector<AttrSpec> attrs{AttrSpec::Int("group", group), AttrSpec::Ints("strides", st),
                              AttrSpec::Ints("dilations", dl)};
  // Negative ConvTranspose pads stand for an output_shape larger than the natural extent.
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
    attrs.push_back(AttrSpec::Ints("output_shape", Dims(yd.begin() + 2, yd.end())));
  else
    attrs.push_back(AttrSpec::Ints("pads", pads));
  if (std::string(op) == "ConvTranspose")
    attrs.push_back(AttrSpec::Ints("output_padding", out_pad));
  g.nodes = {test::NodeSpec(op, ins, {"y"}, attrs)};
  g.outputs = {test::tensor_info("y", test::kFloat, std::vector<DimSpec>(yd.begin(), yd.end()))};
  const std::string bytes = test::ModelSpec(g, 17).serialize();
  Tensor xt(DType::kFloat, xd);
  std::copy(x.begin(), x.end(), xt.data<float>());
  std::vector<Tensor> outs;
  for (bool reference : {true, false}) {
    SessionOptions opts;
    opts.reference_kernels = reference;
    auto s = session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), opts);
    outs.push_back(s->run({{"x", Value(xt)}})[0].tensor());
  }
  if (outs[0].dims() != yd || outs[1].dims() != yd) return 1e9;
  double err = 0;
  for (int64_t i = 0; i < outs[0].numel(); ++i) {
    const double r = outs[0].data<float>()[i], f = outs[1].data<float>()[i];
    err = std::max(err, std::fabs(r - f) / (1.0 + std::fabs(r)));
  }
  return err;
}

TEST(ConvGemm, MatchesDirectReference) {
  std::mt19937 rng(1234);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 400; ++it) {
    int nsp = ri(1, 3);
    int64_t group = ri(1, 3), cg = ri(1, it % 10 == 0 ? 70 : 5), mg = ri(1, 9), batch = ri(1, 2);
    if (it % 4 == 1) {  // depthwise 2-D
      nsp = 2;
      cg = mg = 1;
      group = ri(1, 6);
    }
    Dims xd{batch, cg * group}, wd{mg * group, cg}, yd{batch, mg * group};
    std::vector<int64_t> st, dl, pb, pe;
    bool ok = true;
    for (int d = 0; d < nsp; ++d) {
      int64_t in = ri(1, nsp == 3 ? 7 : 20), k = ri(1, 4), s = ri(1, 3), dil = ri(1, 2),
              p0 = ri(0, 2), p1 = ri(0, 2);
      if (it % 7 == 0) k = s = 1, p0 = p1 = 0;  // pointwise
      const int64_t ek = (k - 1) * dil + 1;
      if (in + p0 + p1 < ek) ok = false;
      xd.push_back(in);
      wd.push_back(k);
      yd.push_back((in + p0 + p1 - ek) / s + 1);
      st.push_back(s);
      dl.push_back(dil);
      pb.push_back(p0);
      pe.push_back(p1);
    }
    if (!ok) continue;
    ++runs;
    pb.insert(pb.end(), pe.begin(), pe.end());
    double err = compare("Conv", xd, wd, yd, st, dl, pb, {}, group, mg * group, it % 2, rng);
    ASSERT_LT(err, 1e-4) << "x " << dims_str(xd) << " w " << dims_str(wd) << " group " << group;
  }
  EXPECT_GT(runs, 300);
}

TEST(ConvTransposeGemm, MatchesScatterReference) {
  std::mt19937 rng(99);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int runs = 0;
  for (int it = 0; it < 300; ++it) {
    int nsp = ri(1, 3);
    int64_t group = ri(1, 3), cg = ri(1, it % 10 == 0 ? 300 : 5), mg = ri(1, 6), batch = ri(1, 2);
    Dims xd{batch, cg * group}, wd{cg * group, mg}, yd{batch, mg * group};
    std::vector<int64_t> st, dl, pb, pe, ops;
    bool ok = true;
    for (int d = 0; d < nsp; ++d) {
      // Negative pads stand for an output_shape larger than the natural extent.
      int64_t in = ri(1, nsp == 3 ? 5 : 12), k = ri(1, 4), s = ri(1, 3), dil = ri(1, 2);
      int64_t p0 = ri(-1, 2), p1 = ri(-1, 2), op = ri(0, static_cast<int>(s) - 1);
      const int64_t out = s * (in - 1) + op + (k - 1) * dil + 1 - p0 - p1;
      if (out < 1) ok = false;
      xd.push_back(in);
      wd.push_back(k);
      yd.push_back(out);
      st.push_back(s);
      dl.push_back(dil);
      pb.push_back(p0);
      pe.push_back(p1);
      ops.push_back(op);
    }
    if (!ok) continue;
    ++runs;
    pb.insert(pb.end(), pe.begin(), pe.end());
    double err =
        compare("ConvTranspose", xd, wd, yd, st, dl, pb, ops, group, mg * group, it % 2, rng);
    ASSERT_LT(err, 1e-4) << "x " << dims_str(xd) << " w " << dims_str(wd) << " group " << group;
  }
  EXPECT_GT(runs, 200);
}

}  // namespace
}  // namespace onyx
