// Pass to_channels_last: runs the depthwise-separable parts of a CNN with the channels as
// the last axis ([N, H, W, C]), where the depthwise convolutions vectorize over channels
// with no transposes, the pointwise ones are one GEMM on W^T (rows = pixels), and 7x7 or
// 14x14 images no longer leave vectors half empty. It runs once, after the other passes
// have fused what they fuse (optimize.cc), at kAll with fused ops, and not for sessions on
// the reference kernels.
//
// A region is a connected set of nodes (linked by their 4-D float data) that it can run
// channels last, holding at least one depthwise Conv (one input and one output channel per
// group): Conv / FusedConv that are depthwise or pointwise (1x1, stride 1, no pads, one
// group) with constant 4-D W; GlobalAveragePool; the unary activations; Add, Sub, Mul and
// Div whose inputs are 4-D values or constants (broadcasting commutes with moving the
// channels of both operands). Convs become ai.onyx FusedConv with channels_last = 1, the
// pool ai.onyx GlobalAveragePool with channels_last = 1; elementwise nodes stay as they
// are, their constants moved to channels last. A Transpose [0, 2, 3, 1] brings each value
// that enters the region; a Transpose [0, 3, 1, 2] gives back, under its name, each value
// that is read outside or is a graph output. Without a depthwise layer (ResNets, VGG) the
// graph stays channels first: its 3x3 convolutions run as Winograd there.
#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "kernels/reference/fused.h"
#include "opt/pass.h"
#include "simd/gemm.h"

namespace onyx::opt {
namespace {

/// A Conv this pass takes is pointwise or depthwise (conv_takes).
enum class Kind { kNone, kPointwise, kDepthwise, kPool, kUnary, kBinary };

const std::vector<int64_t> kToLast = {0, 2, 3, 1};
const std::vector<int64_t> kToFirst = {0, 3, 1, 2};

/// Images of at most this many pixels run channels last. Measured per layer on
/// MobileNetV2 (one thread, AVX-512): channels last, depthwise layers take 0.6-0.75x the
/// time at every size, but at 56x56 and 112x112 the pointwise layers take 1.4-1.6x (their
/// few input channels, 16-24, or 24 output channels, fill the GEMM's tiles worse than
/// the pixels do channels first), which cancels it; from 28x28 down both win or tie.
constexpr int64_t kMaxPixels = 28 * 28;

/// A float 4-D value of a known image size within kMaxPixels.
bool float4d(const PassContext& ctx, const std::string& v) {
  if (v.empty() || ctx.rank(v) != 4 || ctx.dtype(v) != DType::kFloat) return false;
  const ir::Shape& s = *ctx.shape(v);
  // (Each dim bounded first: the product of two declared dims may overflow, fuzz finding 21.)
  return s[2].known() && s[3].known() && s[2].value >= 0 && s[3].value >= 0 &&
         s[2].value <= kMaxPixels && s[3].value <= kMaxPixels &&
         s[2].value * s[3].value <= kMaxPixels;
}

bool all_are(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

/// For a Conv / FusedConv this pass takes: true, with `depthwise` telling which kind.
bool conv_takes(const PassContext& ctx, const ir::Node& n, bool& depthwise) {
  const bool plain = is_op(n, "Conv");
  const bool fused = n.domain == kernels::kOnyxDomain && n.op_type == "FusedConv" &&
                     n.attr_i("channels_last", 0) == 0;
  if (!plain && !fused) return false;
  if (n.inputs.size() < 2 || given_outputs(n) != 1 || !float4d(ctx, n.inputs[0]) ||
      !float4d(ctx, n.outputs[0]))
    return false;
  const Tensor* w = ctx.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::kFloat || w->rank() != 4) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !ctx.constant(n.inputs[2])) return false;
  if (fused && n.inputs.size() > 3 && !n.inputs[3].empty() && !float4d(ctx, n.inputs[3]))
    return false;
  const int64_t group = n.attr_i("group", 1), maps = w->dim(0), cg = w->dim(1);
  const ir::Shape* xs = ctx.shape(n.inputs[0]);
  const std::string auto_pad = n.attr_s("auto_pad", "NOTSET");
  if (cg == 1 && group == maps && maps > 1) {
    if (!xs || !(*xs)[1].known() || (*xs)[1].value != maps) return false;
    depthwise = true;
    return true;
  }
  depthwise = false;
  return group == 1 && w->dim(2) == 1 && w->dim(3) == 1 && all_are(n.attr_ints("strides"), 1) &&
         all_are(n.attr_ints("dilations"), 1) && all_are(n.attr_ints("pads"), 0) &&
         (auto_pad == "NOTSET" || auto_pad == "VALID");
}

/// Whether a pointwise layer this pass takes runs channels last at least as well as
/// channels first (depthwise layers always do): when its output channels, the columns of
/// its GEMM, fill the panels of nr columns to 85% and more. Measured on MobileNetV3 and
/// EfficientNet (AVX-512, 32-column panels): 24 (75%) and 40 (62%) output channels made
/// their layers 1.3-1.6x slower than channels first, and the regions holding them slower
/// overall. 1x1 images (squeeze-excite layers) run the channels-first kernels either way.
bool panels_filled(const PassContext& ctx, const ir::Node& n, int64_t nr) {
  const ir::Shape& ys = *ctx.shape(n.outputs[0]);
  if (ys[2].value == 1 && ys[3].value == 1)
    return true;  // (squeeze-excite: the same bytes either way)
  const int64_t maps = ctx.constant(n.inputs[1])->dim(0);
  const int64_t padded = (maps + nr - 1) / nr * nr;
  return maps * 100 >= padded * 85;
}

/// A Conv whose window covers more than one pixel.
bool spatial(const PassContext& ctx, const ir::Node& n) {
  const Tensor* w = ctx.constant(n.inputs[1]);
  return w && w->rank() == 4 && w->dim(2) * w->dim(3) > 1;
}

bool unary_op(const ir::Node& n) {
  static const char* const kOps[] = {"Relu",      "Sigmoid", "Tanh",    "HardSigmoid", "HardSwish",
                                     "LeakyRelu", "Clip",    "Elu",     "Neg",         "Abs",
                                     "Softplus",  "Erf",     "Identity"};
  if (!n.domain.empty()) return false;
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return n.op_type == op; });
}

/// The kind of node `i` for this pass, and its data inputs (the 4-D values it reads).
Kind classify(const PassContext& ctx, size_t i, std::vector<size_t>& data) {
  const ir::Node& n = ctx.node(i);
  data.clear();
  if (has_subgraph(n)) return Kind::kNone;
  bool dw = false;
  if (conv_takes(ctx, n, dw)) {
    data.push_back(0);
    if (n.domain == kernels::kOnyxDomain && n.inputs.size() > 3 && !n.inputs[3].empty())
      data.push_back(3);
    return dw ? Kind::kDepthwise : Kind::kPointwise;
  }
  if (given_outputs(n) != 1 || !float4d(ctx, n.outputs[0])) return Kind::kNone;
  if (is_op(n, "GlobalAveragePool")) {
    if (!float4d(ctx, n.inputs[0])) return Kind::kNone;
    data.push_back(0);
    return Kind::kPool;
  }
  if (unary_op(n)) {
    if (n.inputs.empty() || !float4d(ctx, n.inputs[0])) return Kind::kNone;
    for (size_t s = 1; s < n.inputs.size(); ++s)  // Clip's bounds: scalars
      if (!n.inputs[s].empty() && ctx.rank(n.inputs[s]) != 0) return Kind::kNone;
    data.push_back(0);
    return Kind::kUnary;
  }
  if ((is_op(n, "Add") || is_op(n, "Sub") || is_op(n, "Mul") || is_op(n, "Div")) && n.opset >= 7 &&
      n.inputs.size() == 2) {
    for (size_t s = 0; s < 2; ++s) {
      const std::string& v = n.inputs[s];
      if (const Tensor* c = ctx.constant(v)) {
        if (c->rank() > 4 || c->dtype() != DType::kFloat) return Kind::kNone;
      } else if (float4d(ctx, v)) {
        data.push_back(s);
      } else if (ctx.rank(v) != 0) {
        return Kind::kNone;
      }
    }
    return data.empty() ? Kind::kNone : Kind::kBinary;
  }
  return Kind::kNone;
}

/// `t` (rank <= 4, broadcast against a 4-D NCHW value) as the operand of the same value
/// channels last: left-padded with 1s to rank 4, then axes [0, 2, 3, 1].
Tensor constant_to_last(const Tensor& t) {
  Dims d = t.dims();
  while (d.size() < 4) d.insert(d.begin(), 1);
  const Dims out{d[0], d[2], d[3], d[1]};
  Tensor r(t.dtype(), out);
  const float* src = t.data<float>();
  float* dst = r.data<float>();
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t h = 0; h < d[2]; ++h)
      for (int64_t w = 0; w < d[3]; ++w)
        for (int64_t c = 0; c < d[1]; ++c)
          dst[((a * d[2] + h) * d[3] + w) * d[1] + c] = src[((a * d[1] + c) * d[2] + h) * d[3] + w];
  return r;
}

ir::TypeInfo moved(const ir::TypeInfo& t, const std::vector<int64_t>& perm) {
  ir::TypeInfo r = t;
  if (t.is_tensor() && t.has_shape && t.shape.size() == 4)
    for (size_t k = 0; k < 4; ++k) r.shape[k] = t.shape[static_cast<size_t>(perm[k])];
  return r;
}

}  // namespace

int64_t to_channels_last(PassContext& ctx) {
  const size_t count = ctx.size();
  std::vector<Kind> kind(count, Kind::kNone);
  std::vector<std::vector<size_t>> data(count);
  std::deque<size_t> todo;
  std::vector<bool> in_region(count, false);
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.alive(i)) continue;
    kind[i] = classify(ctx, i, data[i]);
    if (kind[i] == Kind::kDepthwise && spatial(ctx, ctx.node(i))) {
      in_region[i] = true;
      todo.push_back(i);
    }
  }
  if (todo.empty()) return 0;
  // Grow each region from its first depthwise layer along 4-D data edges in both
  // directions; keep it only when every pointwise layer in it fills the GEMM's panels
  // and its Transposes are few.
  const int64_t nr = simd::gemm_panel_width();
  std::vector<size_t> seeds(todo.begin(), todo.end());
  todo.clear();
  std::fill(in_region.begin(), in_region.end(), false);
  std::vector<size_t> region;
  for (size_t seed : seeds) {
    if (in_region[seed]) continue;
    region.assign(1, seed);
    in_region[seed] = true;
    todo.push_back(seed);
    while (!todo.empty()) {
      const size_t i = todo.front();
      todo.pop_front();
      auto join = [&](size_t j) {
        if (!in_region[j] && kind[j] != Kind::kNone) {
          in_region[j] = true;
          region.push_back(j);
          todo.push_back(j);
        }
      };
      for (size_t s : data[i]) {
        const int p = ctx.producer(ctx.node(i).inputs[s]);
        if (p >= 0 && ctx.alive(static_cast<size_t>(p))) join(static_cast<size_t>(p));
      }
      const std::string& y = ctx.node(i).outputs[0];
      for (const Use& u : ctx.uses(y))
        if (std::find(data[u.node].begin(), data[u.node].end(), u.slot) != data[u.node].end())
          join(u.node);
    }
    bool fills = true;
    int64_t windows = 0;  // depthwise layers with a spatial window
    for (size_t i : region) {
      if (kind[i] == Kind::kPointwise) fills = fills && panels_filled(ctx, ctx.node(i), nr);
      if (kind[i] == Kind::kDepthwise) windows += spatial(ctx, ctx.node(i));
    }
    // The Transposes it needs: values entering it, values leaving it.
    std::unordered_set<std::string> entering;
    int64_t leaving = 0;
    for (size_t i : region) {
      for (size_t s : data[i]) {
        const int p = ctx.producer(ctx.node(i).inputs[s]);
        if (p < 0 || !in_region[static_cast<size_t>(p)]) entering.insert(ctx.node(i).inputs[s]);
      }
      const std::string& y = ctx.node(i).outputs[0];
      bool leaves = ctx.pinned(y);
      for (const Use& u : ctx.uses(y)) leaves = leaves || !in_region[u.node];
      leaving += leaves;
    }
    // DenseNet's Concat -> BatchNormalization -> Relu (a 1x1 depthwise Conv) between 3x3
    // layers made regions of a few nodes with a Transpose at every edge: 110 of them, 1.41x
    // the time. A region pays when its depthwise windows outnumber its edges.
    if (!fills || static_cast<int64_t>(entering.size()) + leaving > 2 * windows)
      for (size_t i : region)
        kind[i] = Kind::kNone;  // stays channels first (in_region marks it seen)
  }
  for (size_t i = 0; i < count; ++i) in_region[i] = in_region[i] && kind[i] != Kind::kNone;
  // Rewrite in topological order: each value of the region exists channels last under a
  // new name; values entering it are transposed once, values leaving it given back.
  const int64_t opset = std::max<int64_t>(1, ctx.options().default_opset);
  std::unordered_map<std::string, std::string> last;  // NCHW name -> channels-last name
  auto to_last = [&](const std::string& v) {
    auto it = last.find(v);
    if (it != last.end()) return it->second;
    const std::string t = ctx.fresh_name(v + "_nhwc");
    ir::Node tr = make_node("Transpose", {v}, {t}, t, opset);
    tr.attrs.push_back(make_attr_ints("perm", kToLast));
    ctx.count_created(tr);
    ctx.add(std::move(tr));
    if (const ir::TypeInfo* ty = ctx.type(v)) ctx.set_type(t, moved(*ty, kToLast));
    last[v] = t;
    return t;
  };
  int64_t rewrites = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!in_region[i]) continue;
    for (size_t s : data[i]) ctx.set_input(i, s, to_last(ctx.node(i).inputs[s]));
    if (kind[i] == Kind::kBinary) {
      for (size_t s = 0; s < 2; ++s) {
        const Tensor* c = ctx.constant(ctx.node(i).inputs[s]);
        if (c && c->numel() > 1)
          ctx.set_input(i, s,
                        ctx.add_constant(ctx.node(i).inputs[s] + "_nhwc", constant_to_last(*c)));
      }
    }
    ir::Node& n = ctx.node(i);
    const bool conv = kind[i] == Kind::kPointwise || kind[i] == Kind::kDepthwise;
    if (conv || kind[i] == Kind::kPool) {
      if (conv) n.op_type = "FusedConv";
      n.domain = std::string(kernels::kOnyxDomain);
      n.opset = 1;
      set_attr(n, make_attr_i("channels_last", 1));
      ctx.count_created(n);
    }
    const std::string y = n.outputs[0];
    const std::string y_last = ctx.fresh_name(y + "_nhwc");
    bool leaves = ctx.pinned(y);
    for (const Use& u : ctx.uses(y)) leaves = leaves || !in_region[u.node];
    ctx.set_output(i, 0, y_last);
    if (const ir::TypeInfo* ty = ctx.type(y)) ctx.set_type(y_last, moved(*ty, kToLast));
    last[y] = y_last;
    if (leaves) {
      ir::Node back = make_node("Transpose", {y_last}, {y}, y, opset);
      back.attrs.push_back(make_attr_ints("perm", kToFirst));
      ctx.count_created(back);
      ctx.add(std::move(back));
    }
    ++rewrites;
  }
  return rewrites;
}

}  // namespace onyx::opt
