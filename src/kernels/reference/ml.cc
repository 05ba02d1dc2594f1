// Reference kernels of the ai.onnx.ml family: LabelEncoder, TreeEnsemble, Binarizer,
// ArrayFeatureExtractor.
#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "base/checked.h"
#include "kernels/reference/dispatch.h"
#include "kernels/registry.h"

namespace onyx::kernels {

namespace {

constexpr const char* kMl = "ai.onnx.ml";

// ---- LabelEncoder ----

/// A keys_* / values_* attribute as a 1-D tensor (nullopt-like undefined tensor when
/// none of the family is set).
Tensor encoder_attr(const KernelContext& ctx, const std::string& prefix) {
  const ir::Node& n = ctx.node();
  if (const Tensor* t = n.attr_t(prefix + "_tensor")) return t->reshaped({t->numel()});
  if (n.has_attr(prefix + "_strings")) {
    std::vector<std::string> v = n.attr_strings(prefix + "_strings");
    Tensor t(DType::kString, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<std::string>());
    return t;
  }
  if (n.has_attr(prefix + "_int64s")) {
    std::vector<int64_t> v = n.attr_ints(prefix + "_int64s");
    Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  }
  if (n.has_attr(prefix + "_floats")) {
    std::vector<float> v = n.attr_floats(prefix + "_floats");
    Tensor t(DType::kFloat, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  }
  return Tensor();
}

/// The default output value as a one-element tensor of type `vt`.
Tensor encoder_default(const KernelContext& ctx, DType vt) {
  if (const Tensor* t = ctx.node().attr_t("default_tensor")) {
    if (t->dtype() != vt || t->numel() != 1)
      ctx.fail("'default_tensor' must hold one {} value, got {} {}", dtype_name(vt),
               dtype_name(t->dtype()), dims_str(t->dims()));
    return *t;
  }
  Tensor d(vt, {1});
  switch (vt) {
    case DType::kString: *d.data<std::string>() = ctx.attr_s("default_string", "_Unused"); break;
    case DType::kInt64: *d.data<int64_t>() = ctx.attr_i("default_int64", -1); break;
    case DType::kInt32: *d.data<int32_t>() = -1; break;
    case DType::kInt16: *d.data<int16_t>() = -1; break;
    case DType::kFloat: *d.data<float>() = ctx.attr_f("default_float", -0.0f); break;
    case DType::kDouble: *d.data<double>() = -0.0; break;
    default: ctx.fail("unsupported value type {}", dtype_name(vt));
  }
  return d;
}

/// Keys compare with NaN equal to NaN (whatever its bits) so NaN keys can match.
template <typename K>
struct KeyLess {
  bool operator()(const K& a, const K& b) const {
    if constexpr (std::is_floating_point_v<K>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  }
};

void label_encode(KernelContext& ctx, const Tensor& keys, const Tensor& values, const Tensor& def) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (keys.numel() != values.numel())
    ctx.fail("keys ({}) and values ({}) must have the same length", keys.numel(), values.numel());
  if (x.dtype() != keys.dtype())
    ctx.fail("input type {} differs from the keys type {}", dtype_name(x.dtype()),
             dtype_name(keys.dtype()));
  if (y.dtype() != values.dtype())
    ctx.fail("output type {} differs from the values type {}", dtype_name(y.dtype()),
             dtype_name(values.dtype()));
  dispatch_all(x.dtype(), [&](auto ktag) {
    using K = typename decltype(ktag)::type;
    if constexpr (std::is_same_v<K, bool> || std::is_same_v<K, Float16> ||
                  std::is_same_v<K, BFloat16>) {
      ctx.fail("unsupported key type {}", dtype_name(x.dtype()));
    } else {
      std::map<K, int64_t, KeyLess<K>> index;
      for (int64_t i = 0; i < keys.numel(); ++i)
        index[keys.data<K>()[i]] = i;  // a repeated key: the last one wins
      dispatch_all(y.dtype(), [&](auto vtag) {
        using V = typename decltype(vtag)::type;
        const V* vals = values.data<V>();
        const V& dv = *def.data<V>();
        V* out = y.data<V>();
        const K* in = x.data<K>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          auto it = index.find(in[i]);
          out[i] = it == index.end() ? dv : vals[it->second];
        }
      }, "LabelEncoder values");
    }
  }, "LabelEncoder keys");
}

void label_encoder(KernelContext& ctx) {
  if (ctx.opset() < 2) {
    // ai.onnx.ml-1: string -> index in classes_strings, int64 -> classes_strings[i]
    std::vector<std::string> classes = ctx.node().attr_strings("classes_strings");
    Tensor names(DType::kString, {static_cast<int64_t>(classes.size())});
    Tensor ids(DType::kInt64, {static_cast<int64_t>(classes.size())});
    for (size_t i = 0; i < classes.size(); ++i) {
      names.data<std::string>()[i] = classes[i];
      ids.data<int64_t>()[i] = static_cast<int64_t>(i);
    }
    if (ctx.input(0).dtype() == DType::kString)
      label_encode(ctx, names, ids, Tensor::scalar<int64_t>(DType::kInt64, ctx.attr_i("default_int64", -1)));
    else
      label_encode(ctx, ids, names,
                   Tensor::scalar<std::string>(DType::kString, ctx.attr_s("default_string", "_Unused")));
    return;
  }
  Tensor keys = encoder_attr(ctx, "keys"), values = encoder_attr(ctx, "values");
  if (!keys.defined() || !values.defined())
    ctx.fail("one 'keys_*' and one 'values_*' attribute must be set");
  label_encode(ctx, keys, values, encoder_default(ctx, values.dtype()));
}

// ---- TreeEnsemble ----

enum class Branch : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };

/// Reads a float/double/float16 tensor attribute as doubles.
std::vector<double> attr_values(const KernelContext& ctx, const char* name, bool required) {
  const Tensor* t = ctx.node().attr_t(name);
  if (!t) {
    if (required) ctx.fail("attribute '{}' is required", name);
    return {};
  }
  std::vector<double> v(static_cast<size_t>(t->numel()));
  dispatch_numeric(t->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<acc_t<T>>(t->data<T>()[i]));
  }, name);
  return v;
}

struct Forest {
  std::vector<int64_t> feature, true_id, false_id, true_leaf, false_leaf, missing_true;
  std::vector<Branch> mode;
  std::vector<double> split;
  std::vector<std::vector<double>> members;  // per node (BRANCH_MEMBER only)
  std::vector<int64_t> roots, leaf_target;
  std::vector<double> leaf_weight;
};

Forest load_forest(const KernelContext& ctx, int64_t n_features, int64_t n_targets) {
  Forest f;
  f.feature = ctx.attr_ints("nodes_featureids");
  f.true_id = ctx.attr_ints("nodes_truenodeids");
  f.false_id = ctx.attr_ints("nodes_falsenodeids");
  f.true_leaf = ctx.attr_ints("nodes_trueleafs");
  f.false_leaf = ctx.attr_ints("nodes_falseleafs");
  f.missing_true = ctx.attr_ints("nodes_missing_value_tracks_true");
  f.split = attr_values(ctx, "nodes_splits", true);
  f.roots = ctx.attr_ints("tree_roots");
  f.leaf_target = ctx.attr_ints("leaf_targetids");
  f.leaf_weight = attr_values(ctx, "leaf_weights", true);
  const size_t n = f.feature.size();
  const Tensor* modes = ctx.node().attr_t("nodes_modes");
  if (!modes || modes->dtype() != DType::kUint8)
    ctx.fail("attribute 'nodes_modes' must be a uint8 tensor");
  for (const auto* v : {&f.true_id, &f.false_id, &f.true_leaf, &f.false_leaf})
    if (v->size() != n) ctx.fail("the nodes_* attributes must all have {} entries", n);
  if (f.split.size() != n || static_cast<size_t>(modes->numel()) != n)
    ctx.fail("nodes_splits and nodes_modes must have {} entries", n);
  if (f.missing_true.empty()) f.missing_true.assign(n, 0);
  if (f.missing_true.size() != n)
    ctx.fail("nodes_missing_value_tracks_true must have {} entries", n);
  if (f.leaf_target.size() != f.leaf_weight.size())
    ctx.fail("leaf_targetids ({}) and leaf_weights ({}) differ in length", f.leaf_target.size(),
             f.leaf_weight.size());
  const auto nl = static_cast<int64_t>(f.leaf_weight.size());
  for (int64_t t : f.leaf_target)
    if (t < 0 || t >= n_targets) ctx.fail("leaf target id {} is outside [0, {})", t, n_targets);
  const std::vector<double> mv = attr_values(ctx, "membership_values", false);
  size_t mpos = 0;
  f.members.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t m = modes->data<uint8_t>()[i];
    if (m > 6) ctx.fail("nodes_modes[{}] = {} is not a valid branch mode", i, m);
    f.mode.push_back(static_cast<Branch>(m));
    if (f.feature[i] < 0 || f.feature[i] >= n_features)
      ctx.fail("node {} reads feature {}, but X has {}", i, f.feature[i], n_features);
    const auto nn = static_cast<int64_t>(n);
    if ((f.true_leaf[i] ? f.true_id[i] >= nl : f.true_id[i] >= nn) || f.true_id[i] < 0 ||
        (f.false_leaf[i] ? f.false_id[i] >= nl : f.false_id[i] >= nn) || f.false_id[i] < 0)
      ctx.fail("node {} has a child out of range", i);
    if (f.mode[i] == Branch::kMember) {
      // the sets are listed in node order, each terminated by NaN
      if (mv.empty()) ctx.fail("node {} is BRANCH_MEMBER but 'membership_values' is missing", i);
      while (mpos < mv.size() && !std::isnan(mv[mpos])) f.members[i].push_back(mv[mpos++]);
      ++mpos;
    }
  }
  for (int64_t r : f.roots)
    if (r < 0 || r >= static_cast<int64_t>(n)) ctx.fail("tree root {} is out of range", r);
  return f;
}

bool branch_true(const Forest& f, size_t i, double x) {
  if (std::isnan(x) && f.missing_true[i]) return true;
  switch (f.mode[i]) {
    case Branch::kLeq: return x <= f.split[i];
    case Branch::kLt: return x < f.split[i];
    case Branch::kGte: return x >= f.split[i];
    case Branch::kGt: return x > f.split[i];
    case Branch::kEq: return x == f.split[i];
    case Branch::kNeq: return x != f.split[i];
    default: return std::find(f.members[i].begin(), f.members[i].end(), x) != f.members[i].end();
  }
}

/// The leaf a tree ends in for one row. Fails on a cycle (a path longer than the node count).
int64_t find_leaf(const KernelContext& ctx, const Forest& f, int64_t root, const double* row) {
  auto i = static_cast<size_t>(root);
  for (size_t steps = 0; steps <= f.feature.size(); ++steps) {
    const bool t = branch_true(f, i, row[f.feature[i]]);
    const int64_t next = t ? f.true_id[i] : f.false_id[i];
    if (t ? f.true_leaf[i] : f.false_leaf[i]) return next;
    i = static_cast<size_t>(next);
  }
  ctx.fail("the tree at root {} has a cycle", root);
}

double probit(double p) {
  // inverse of the standard normal CDF: sqrt(2) * erfinv(2p - 1), by Newton on erf
  const double y = 2 * p - 1;
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  double w = -std::log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int k = 0; k < 2; ++k)  // polish with Newton steps on erf(x) = y
    x -= (std::erf(x) - y) / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  return std::sqrt(2.0) * x;
}

void post_transform(std::vector<double>& v, int64_t mode) {
  switch (mode) {
    case 1:    // SOFTMAX
    case 3: {  // SOFTMAX_ZERO: zeros stay zero
      double mx = -INFINITY;
      for (double a : v)
        if (mode == 1 || a != 0) mx = std::max(mx, a);
      double sum = 0;
      for (double& a : v) {
        a = (mode == 3 && a == 0) ? 0 : std::exp(a - mx);
        sum += a;
      }
      if (sum > 0)
        for (double& a : v) a /= sum;
      break;
    }
    case 2:  // LOGISTIC
      for (double& a : v) a = 1 / (1 + std::exp(-a));
      break;
    case 4:  // PROBIT
      for (double& a : v) a = probit(a);
      break;
    default: break;
  }
}

void tree_ensemble(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const int64_t rows = X.rank() == 2 ? X.dim(0) : 1;
  const int64_t feats = X.rank() == 2 ? X.dim(1) : X.numel();
  const int64_t targets = ctx.attr_i("n_targets", 0);
  int64_t want = -1;
  if (!mul_fits(rows, targets, want) || Y.numel() != want)
    ctx.fail("output {} does not fit [{}, {}]", dims_str(Y.dims()), rows, targets);
  if (Y.numel() == 0) return;  // n_targets (an attribute) sizes the per-row buffers below
  const Forest f = load_forest(ctx, feats, targets);
  const int64_t agg = ctx.attr_i("aggregate_function", 1);
  const int64_t post = ctx.attr_i("post_transform", 0);
  std::vector<double> xs(static_cast<size_t>(X.numel()));
  dispatch_float(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(static_cast<acc_t<T>>(X.data<T>()[i]));
  }, "TreeEnsemble input");
  // A target no leaf votes for stays 0, also under MIN and MAX (as onnxruntime; the
  // ONNX Python reference starts MIN / MAX from the type's extremes instead).
  std::vector<double> acc(static_cast<size_t>(targets));
  std::vector<int64_t> hits(static_cast<size_t>(targets));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(hits.begin(), hits.end(), 0);
    for (int64_t root : f.roots) {
      const int64_t leaf = find_leaf(ctx, f, root, xs.data() + r * feats);
      const auto t = static_cast<size_t>(f.leaf_target[static_cast<size_t>(leaf)]);
      const double w = f.leaf_weight[static_cast<size_t>(leaf)];
      if (agg == 2) acc[t] = hits[t] ? std::min(acc[t], w) : w;
      else if (agg == 3) acc[t] = hits[t] ? std::max(acc[t], w) : w;
      else acc[t] += w;
      ++hits[t];
    }
    if (agg == 0 && !f.roots.empty())
      for (double& a : acc) a /= static_cast<double>(f.roots.size());
    post_transform(acc, post);
    dispatch_float(Y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = Y.data<T>() + r * targets;
      for (int64_t t = 0; t < targets; ++t) {
        const double v = acc[static_cast<size_t>(t)];
        if constexpr (std::is_same_v<T, double>) out[t] = v;
        else out[t] = T(static_cast<float>(v));
      }
    }, "TreeEnsemble output");
  }
}

// ---- Binarizer, ArrayFeatureExtractor ----

void binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const double th = ctx.attr_f("threshold", 0);
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      out[i] = static_cast<double>(in[i]) > th ? T(1) : T(0);
  }, "Binarizer");
}

void array_feature_extractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (x.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t f = x.dims().back();
  const int64_t rows = f > 0 ? x.numel() / f : 0;
  const int64_t k = idx.numel();
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t j = 0; j < k; ++j)
    if (ip[j] < 0 || ip[j] >= f)
      ctx.fail("index {} is out of range for the last axis of X ({} elements)", ip[j], f);
  int64_t want = -1;
  if ((!mul_fits(rows, k, want) || y.numel() != want) && !(f == 0 && y.numel() == 0))
    ctx.fail("output {} does not fit {} rows of {} indices", dims_str(y.dims()), rows, k);
  dispatch_bytes(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x.raw());
    T* out = static_cast<T*>(y.raw());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) out[r * k + j] = in[r * f + ip[j]];
  });
}

}  // namespace

void register_ml(Registry& r) {
  r.add(kMl, "LabelEncoder", 1, 1000,
        {DType::kString, DType::kInt64, DType::kFloat, DType::kInt32, DType::kInt16, DType::kDouble},
        label_encoder);
  r.add(kMl, "TreeEnsemble", 5, 1000, {DType::kFloat, DType::kDouble, DType::kFloat16}, tree_ensemble);
  r.add(kMl, "Binarizer", 1, 1000, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32},
        binarizer);
  r.add(kMl, "ArrayFeatureExtractor", 1, 1000,
        {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32, DType::kString},
        array_feature_extractor);
}

}  // namespace onyx::kernels
