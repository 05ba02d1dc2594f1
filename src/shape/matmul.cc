// Shape functions of the matmul family: MatMul, Gemm, MatMulInteger, QLinearMatMul,
// Einsum, Det.
#include <algorithm>
#include <map>

#include "shape/infer.h"

namespace onyx::shape {
namespace {

void check_same_dim(const InferContext& ctx, const ir::Dim& a, const ir::Dim& b, const char* what) {
  if (a.known() && b.known() && a.value != b.value)
    ctx.fail("{} do not match: {} vs {}", what, a.value, b.value);
}

/// numpy.matmul shapes: 1-D operands are promoted and their axis dropped again,
/// batch dims broadcast.
void matmul_shape_of(InferContext& ctx, size_t ia, size_t ib, DType out) {
  if (!ctx.has_shape(ia) || !ctx.has_shape(ib)) {
    ctx.set_output_unranked(0, out);
    return;
  }
  ir::Shape a = ctx.input_shape(ia), b = ctx.input_shape(ib);
  if (a.empty() || b.empty()) ctx.fail("operands must have rank >= 1, got scalars");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), ir::Dim(1));
  if (b_vec) b.push_back(ir::Dim(1));
  check_same_dim(ctx, a[a.size() - 1], b[b.size() - 2], "inner dimensions (K of A and K of B)");
  ir::Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  ir::Shape y = broadcast_shapes(ctx, {&ba, &bb});
  if (!a_vec) y.push_back(a[a.size() - 2]);
  if (!b_vec) y.push_back(b[b.size() - 1]);
  ctx.set_output(0, out, y);
}

void matmul_shape(InferContext& ctx) { matmul_shape_of(ctx, 0, 1, ctx.input_dtype(0)); }

void matmul_integer_shape(InferContext& ctx) { matmul_shape_of(ctx, 0, 1, DType::kInt32); }

void qlinear_matmul_shape(InferContext& ctx) {
  if (!ctx.has_input(7)) ctx.fail("y_zero_point (input 7) is required");
  matmul_shape_of(ctx, 0, 3, ctx.input_dtype(7));
}

void gemm_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0) || !ctx.has_shape(1)) {
    ctx.set_output(0, dt, {ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const ir::Shape& a = ctx.input_shape(0);
  const ir::Shape& b = ctx.input_shape(1);
  if (a.size() != 2 || b.size() != 2)
    ctx.fail("A and B must be 2-D, got ranks {} and {}", a.size(), b.size());
  const bool ta = ctx.attr_i("transA", 0) != 0, tb = ctx.attr_i("transB", 0) != 0;
  ir::Dim m = a[ta ? 1 : 0], ka = a[ta ? 0 : 1];
  ir::Dim kb = b[tb ? 1 : 0], n = b[tb ? 0 : 1];
  check_same_dim(ctx, ka, kb, "inner dimensions (K of op(A) and K of op(B))");
  if (ctx.has_shape(2)) {
    const ir::Shape& c = ctx.input_shape(2);
    if (c.size() > 2) ctx.fail("C must have rank <= 2, got {}", c.size());
    // C broadcasts one way to (M, N): each of its dims is 1 or equal.
    const ir::Dim* want[2] = {&m, &n};
    for (size_t k = 0; k < c.size(); ++k) {
      const ir::Dim& d = c[c.size() - 1 - k];
      const ir::Dim& w = *want[1 - k];
      if (d.known() && d.value != 1 && w.known() && d.value != w.value)
        ctx.fail("C of shape {} cannot broadcast to (M, N) = ({}, {})", ir::shape_str(c), m.str(), n.str());
    }
  } else if (ctx.opset() < 11) {
    ctx.fail("input C is required before opset 11");
  }
  ctx.set_output(0, dt, {m, n});
}

void det_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!ctx.has_shape(0)) {
    ctx.set_output_unranked(0, dt);
    return;
  }
  const ir::Shape& s = ctx.input_shape(0);
  if (s.size() < 2) ctx.fail("input must have rank >= 2 ([*, M, M]), got {}", s.size());
  check_same_dim(ctx, s[s.size() - 2], s[s.size() - 1], "the last two dimensions (a square matrix)");
  ctx.set_output(0, dt, ir::Shape(s.begin(), s.end() - 2));
}

// ---- Einsum ----

struct EinsumTerm {
  std::string labels;  ///< letters in order, without the ellipsis
  int ellipsis_at = -1;  ///< index in `labels` where "..." sits, or -1
};

struct EinsumEq {
  std::vector<EinsumTerm> inputs;
  EinsumTerm output;
  bool explicit_output = false;
};

EinsumTerm parse_term(const InferContext& ctx, const std::string& s) {
  EinsumTerm t;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0)
        ctx.fail("malformed ellipsis in equation term '{}'", s);
      t.ellipsis_at = static_cast<int>(t.labels.size());
      i += 3;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.labels.push_back(c);
      ++i;
    } else {
      ctx.fail("invalid character '{}' in equation term '{}'", c, s);
    }
  }
  return t;
}

EinsumEq parse_equation(const InferContext& ctx) {
  std::string eq;
  for (char c : ctx.attr_s("equation", "")) if (c != ' ') eq.push_back(c);
  EinsumEq e;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(ctx, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != ctx.num_inputs())
    ctx.fail("equation '{}' has {} operand terms but the node has {} inputs", eq, e.inputs.size(), ctx.num_inputs());
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = parse_term(ctx, eq.substr(arrow + 2));
    for (size_t i = 0; i < e.output.labels.size(); ++i) {
      char c = e.output.labels[i];
      if (e.output.labels.find(c, i + 1) != std::string::npos)
        ctx.fail("output label '{}' appears twice", c);
      bool found = false;
      for (const EinsumTerm& t : e.inputs) found = found || t.labels.find(c) != std::string::npos;
      if (!found) ctx.fail("output label '{}' does not appear in any input", c);
    }
  } else {
    std::map<char, int> count;
    bool any_ellipsis = false;
    for (const EinsumTerm& t : e.inputs) {
      for (char c : t.labels) ++count[c];
      any_ellipsis = any_ellipsis || t.ellipsis_at >= 0;
    }
    if (any_ellipsis) e.output.ellipsis_at = 0;
    for (auto [c, n] : count)  // std::map: ASCII order
      if (n == 1) e.output.labels.push_back(c);
  }
  return e;
}

void einsum_shape(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  EinsumEq e = parse_equation(ctx);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_shape(i)) {
      ctx.set_output_unranked(0, dt);
      return;
    }
  std::map<char, ir::Dim> dims;
  ir::Shape ell;  // broadcast of every operand's ellipsis dims
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const EinsumTerm& t = e.inputs[i];
    const ir::Shape& s = ctx.input_shape(i);
    const size_t nl = t.labels.size();
    if (t.ellipsis_at < 0 ? s.size() != nl : s.size() < nl)
      ctx.fail("input {} has rank {} but its term has {} labels{}", i, s.size(), nl,
               t.ellipsis_at < 0 ? "" : " plus an ellipsis");
    const size_t ne = s.size() - nl;
    size_t axis = 0;
    ir::Shape mine;
    for (size_t k = 0; k <= nl; ++k) {
      if (static_cast<int>(k) == t.ellipsis_at)
        for (size_t j = 0; j < ne; ++j) mine.push_back(s[axis++]);
      if (k == nl) break;
      const ir::Dim& d = s[axis++];
      auto it = dims.find(t.labels[k]);
      if (it == dims.end()) {
        dims[t.labels[k]] = d;
      } else if (d.known() && it->second.known()) {
        // Like numpy, a label of size 1 broadcasts against the others.
        if (it->second.value == 1) it->second = d;
        else if (d.value != 1 && d.value != it->second.value)
          ctx.fail("label '{}' has size {} in input {} but {} elsewhere", t.labels[k], d.value, i,
                   it->second.value);
      } else if (!it->second.known() && d.known() && d.value != 1) {
        it->second = d;
      }
    }
    ir::Shape prev = ell;
    ell = broadcast_shapes(ctx, {&prev, &mine});
  }
  ir::Shape out;
  const EinsumTerm& o = e.output;
  for (size_t k = 0; k <= o.labels.size(); ++k) {
    if (static_cast<int>(k) == o.ellipsis_at) out.insert(out.end(), ell.begin(), ell.end());
    if (k < o.labels.size()) out.push_back(dims[o.labels[k]]);
  }
  if (o.ellipsis_at < 0 && !ell.empty())
    ctx.fail("the inputs have ellipsis dimensions but the output term has no '...'");
  ctx.set_output(0, dt, out);
}

}  // namespace

void register_matmul_shapes(ShapeRegistry& r) {
  r.add("", "MatMul", matmul_shape);
  r.add("", "MatMulInteger", matmul_integer_shape);
  r.add("", "QLinearMatMul", qlinear_matmul_shape);
  r.add("", "Gemm", gemm_shape);
  r.add("", "Det", det_shape);
  r.add("", "Einsum", einsum_shape);
}

}  // namespace onyx::shape
