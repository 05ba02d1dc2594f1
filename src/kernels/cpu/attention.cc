// Fused float attention: ai.onyx Attention (softmax(Q K^T * scale + mask) V over
// broadcast leading axes) and ONNX Attention-23/24 (heads split from 3-D inputs, grouped
// K/V heads, causal, softcap, padded masks, past key/value, nonpad_kv_seqlen), twins of
// the reference kernels (src/kernels/reference/fused.cc and attention.cc).
//
// One task is one (batch * head, block of query rows). It walks the keys in blocks: the
// block's K rows are packed into GEMM panels, the scores of the query block against them
// computed (one GEMM), scaled, capped and biased with the row maxima found in the same
// pass, exponentiated against the running maxima (an online softmax: earlier blocks'
// partial sums and outputs are rescaled when a maximum grows) and multiplied by the
// block's V rows (a second GEMM, accumulated). So no more than one block of scores
// (query rows x up to 512 keys) exists at a time. Keys that a causal mask or
// nonpad_kv_seqlen hides from the whole query block are never visited. A row whose keys
// are all masked gives NaN, as the reference's softmax of -inf does; no keys at all (S = 0)
// give zeros, the reference's product with an empty V.
#include "simd/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"
#include "simd/gemm.h"
#include "simd/small_gemm.h"

namespace onyx::kernels::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// The bias added to a score: an optional mask (float, added; or bool, false = -inf)
/// read through strides, -inf past `len` columns, a causal limit.
struct MaskSpec {
  const float* f = nullptr;    ///< additive float mask, or null
  const uint8_t* b = nullptr;  ///< bool mask, or null
  int64_t row = 0, col = 0;    ///< strides of a query row and a key column (0: broadcast)
  int64_t len = 0;             ///< columns >= len are -inf (the mask's padding)
};

/// One attention problem: `count` instances (batch x head) of Q [T x D] K [S x D] V [S x Dv]
/// -> Y [T x Dv], each located by offsets and row strides into the flat arrays.
struct Problem {
  int64_t count = 0, T = 0, S = 0, D = 0, Dv = 0;
  float scale = 1, softcap = 0;
  const float* Q = nullptr;
  const float* K = nullptr;
  const float* V = nullptr;
  float* Y = nullptr;
  int64_t q_ld = 0, k_ld = 0, v_ld = 0, y_ld = 0;
  std::vector<int64_t> q_off, k_off, v_off, y_off, m_off;  ///< per instance
  bool masked = false;
  MaskSpec mask;
  bool causal = false;
  int64_t past = 0;             ///< causal: query row i sees keys j <= i + past
  std::vector<int64_t> kv_len;  ///< per instance: keys >= kv_len are masked (or empty)
};

/// C = A * panels (or C += with accumulate); the few-row kernel for small blocks.
void product(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* panels,
             float* C, int64_t ldc, bool accumulate) {
  if (M <= 4)
    simd::small_gemm(M, N, K, A, lda, panels, C, ldc, accumulate);
  else
    simd::sgemm_panels(false, M, N, K, 1.0f, A, lda, panels, accumulate ? 1.0f : 0.0f, C, ldc,
                       nullptr);
}

struct Scratch {
  std::vector<float> kp, vp, s, o, mx, l, bias;
};

/// The bias row of query row i over keys [k0, k0 + n) of instance `inst`: null when there
/// is none, a pointer into the mask when it can be read in place, else built in buf.
const float* bias_row(const Problem& p, int64_t inst, int64_t i, int64_t k0, int64_t n,
                      float* buf) {
  const bool causal_hits = p.causal && k0 + n - 1 > i + p.past;
  if (!p.masked && !causal_hits) return nullptr;
  const MaskSpec& m = p.mask;
  const int64_t base = p.masked ? p.m_off[static_cast<size_t>(inst)] + i * m.row : 0;
  if (p.masked && m.f && m.col == 1 && !causal_hits && k0 + n <= m.len) return m.f + base + k0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t c = k0 + j;
    float v = 0;
    if (p.masked) {
      if (c >= m.len)
        v = kNegInf;
      else if (m.f)
        v = m.f[base + c * m.col];
      else
        v = m.b[base + c * m.col] ? 0.0f : kNegInf;
    }
    if (p.causal && c > i + p.past) v = kNegInf;
    buf[j] = v;
  }
  return buf;
}

/// Query rows [i0, i1) of instance `inst`.
void attend(const Problem& p, int64_t inst, int64_t i0, int64_t i1, Scratch& sc) {
  const size_t u = static_cast<size_t>(inst);
  const int64_t m = i1 - i0, D = p.D, Dv = p.Dv;
  int64_t keys = p.S;
  if (p.causal) keys = std::min(keys, i1 + p.past);
  if (!p.kv_len.empty()) keys = std::min(keys, p.kv_len[u]);
  keys = std::max<int64_t>(keys, 0);
  const int64_t kb = keys <= 512 ? keys : 256;
  const float* q = p.Q + p.q_off[u] + i0 * p.q_ld;
  const float* kbase = p.K + p.k_off[u];
  const float* vbase = p.V + p.v_off[u];
  sc.o.assign(static_cast<size_t>(m * Dv), 0.0f);
  sc.mx.assign(static_cast<size_t>(m), kNegInf);
  sc.l.assign(static_cast<size_t>(m), 0.0f);
  if (kb > 0) {
    sc.kp.resize(simd::panels_size(D, kb));
    sc.vp.resize(simd::panels_size(kb, Dv));
    sc.s.resize(static_cast<size_t>(m * kb));
    sc.bias.resize(static_cast<size_t>(kb));
  }
  for (int64_t k0 = 0; k0 < keys; k0 += kb) {
    const int64_t n = std::min(kb, keys - k0);
    simd::pack_panels(true, D, n, kbase + k0 * p.k_ld, p.k_ld, sc.kp.data());
    product(m, n, D, q, p.q_ld, sc.kp.data(), sc.s.data(), n, false);
    for (int64_t r = 0; r < m; ++r) {
      float* row = sc.s.data() + r * n;
      const float* bias = bias_row(p, inst, i0 + r, k0, n, sc.bias.data());
      const float bm = simd::attention_scores(row, n, p.scale, p.softcap, bias);
      const float old = sc.mx[static_cast<size_t>(r)];
      const float mnew = std::max(old, bm);
      if (mnew == kNegInf) {  // every key so far is masked
        std::fill(row, row + n, 0.0f);
        continue;
      }
      const float alpha = old == kNegInf ? 0.0f : std::exp(old - mnew);
      const float sum = simd::attention_exp_sum(row, n, mnew);
      sc.l[static_cast<size_t>(r)] = sc.l[static_cast<size_t>(r)] * alpha + sum;
      sc.mx[static_cast<size_t>(r)] = mnew;
      if (k0 > 0 && alpha != 1.0f) {
        float* o = sc.o.data() + r * Dv;
        for (int64_t e = 0; e < Dv; ++e) o[e] *= alpha;
      }
    }
    simd::pack_panels(false, n, Dv, vbase + k0 * p.v_ld, p.v_ld, sc.vp.data());
    product(m, Dv, n, sc.s.data(), n, sc.vp.data(), sc.o.data(), Dv, true);
  }
  for (int64_t r = 0; r < m; ++r) {
    float* y = p.Y + p.y_off[u] + (i0 + r) * p.y_ld;
    const float* o = sc.o.data() + r * Dv;
    if (sc.mx[static_cast<size_t>(r)] == kNegInf) {  // no keys: a sum of nothing
      std::fill(y, y + Dv, p.S == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const float inv = 1.0f / sc.l[static_cast<size_t>(r)];
    for (int64_t e = 0; e < Dv; ++e) y[e] = o[e] * inv;
  }
}

/// Runs every (instance, query block) task, on the pool when the work is worth it.
void solve(const Problem& p, ThreadPool* pool) {
  if (p.count == 0 || p.T == 0 || p.Dv == 0) return;
  const int64_t threads = pool ? pool->size() : 1;
  int64_t qb = std::min<int64_t>(p.T, 64);
  // Smaller query blocks when there are few instances, so every thread gets work.
  while (threads > 1 && qb > 16 && p.count * ((p.T + qb - 1) / qb) < 2 * threads) qb /= 2;
  const int64_t blocks = (p.T + qb - 1) / qb, tasks = p.count * blocks;
  auto run = [&](int64_t t0, int64_t t1) {
    Scratch sc;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t inst = t / blocks, i0 = (t % blocks) * qb;
      attend(p, inst, i0, std::min(p.T, i0 + qb), sc);
    }
  };
  const double work = static_cast<double>(p.count) * p.T * p.S * (p.D + p.Dv);
  if (threads > 1 && tasks > 1 && work >= (1 << 16))
    pool->parallel_for(tasks, run);
  else
    run(0, tasks);
}

/// Right-aligned broadcast of leading dims; false when they do not broadcast.
bool broadcast_lead(const std::vector<Dims>& ins, Dims& out) {
  size_t rank = 0;
  for (const Dims& d : ins) rank = std::max(rank, d.size());
  out.assign(rank, 1);
  for (const Dims& d : ins)
    for (size_t k = 0; k < d.size(); ++k) {
      int64_t& o = out[rank - d.size() + k];
      if (d[k] == o || d[k] == 1) continue;
      if (o != 1) return false;
      o = d[k];
    }
  return true;
}

/// Offsets (in elements, `inner` per index of the leading dims `lead`) of every index
/// of the broadcast leading dims `out` into a tensor with leading dims `lead`.
std::vector<int64_t> lead_offsets(const Dims& out, const Dims& lead, int64_t inner) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  std::vector<int64_t> offs(static_cast<size_t>(count));
  const size_t shift = out.size() - lead.size();
  std::vector<int64_t> stride(out.size(), 0);
  int64_t s = inner;
  for (size_t k = lead.size(); k-- > 0;) {
    stride[shift + k] = lead[k] == 1 ? 0 : s;
    s *= lead[k];
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, off = 0;
    for (size_t k = out.size(); k-- > 0;) {
      off += (rem % out[k]) * stride[k];
      rem /= out[k];
    }
    offs[static_cast<size_t>(i)] = off;
  }
  return offs;
}

// ---- ai.onyx Attention(Q, K, V, mask?) ----

class FusedAttentionKernel final : public Kernel {
 public:
  explicit FusedAttentionKernel(const KernelInit& init) : reference_(init.reference) {
    has_scale_ = init.node.has_attr("scale");
    scale_ = init.node.attr_f("scale", 1.0f);
  }
  std::string_view name() const override { return "cpu.attention"; }
  bool overwrites_outputs() const override { return true; }

  void run(KernelContext& ctx) const override {
    const Tensor& Q = ctx.input(0);
    const Tensor& K = ctx.input(1);
    const Tensor& V = ctx.input(2);
    const bool masked = ctx.has_input(3);
    if (Q.dtype() != DType::kFloat || K.dtype() != DType::kFloat || V.dtype() != DType::kFloat ||
        Q.rank() < 2 || K.rank() < 2 || V.rank() < 2 ||
        (masked && ctx.input(3).dtype() != DType::kFloat && ctx.input(3).dtype() != DType::kBool)) {
      reference_(ctx);
      return;
    }
    const int64_t T = Q.dim(Q.rank() - 2), D = Q.dim(Q.rank() - 1);
    const int64_t S = K.dim(K.rank() - 2), Dv = V.dim(V.rank() - 1);
    if (K.dim(K.rank() - 1) != D || V.dim(V.rank() - 2) != S) {
      reference_(ctx);
      return;
    }
    auto lead = [](const Tensor& t, size_t keep) {
      const size_t r = t.rank() >= keep ? t.rank() - keep : 0;
      return Dims(t.dims().begin(), t.dims().begin() + static_cast<std::ptrdiff_t>(r));
    };
    std::vector<Dims> leads = {lead(Q, 2), lead(K, 2), lead(V, 2)};
    Dims mt, ms;  // the mask's last two axes (padded to 2 with 1s) and its leading dims
    if (masked) {
      const Tensor& M = ctx.input(3);
      mt = Dims(2, 1);
      for (size_t k = 0; k < std::min<size_t>(2, M.rank()); ++k)
        mt[1 - k] = M.dim(M.rank() - 1 - k);
      if ((mt[0] != 1 && mt[0] != T) || (mt[1] != 1 && mt[1] != S)) {
        reference_(ctx);
        return;
      }
      ms = lead(M, 2);
      leads.push_back(ms);
    }
    Dims out;
    if (!broadcast_lead(leads, out)) {
      reference_(ctx);
      return;
    }
    Problem p;
    p.count = 1;
    for (int64_t d : out) p.count *= d;
    p.T = T;
    p.S = S;
    p.D = D;
    p.Dv = Dv;
    p.scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(D));
    p.Q = Q.data<float>();
    p.K = K.data<float>();
    p.V = V.data<float>();
    p.Y = ctx.output(0).data<float>();
    p.q_ld = D;
    p.k_ld = D;
    p.v_ld = Dv;
    p.y_ld = Dv;
    p.q_off = lead_offsets(out, leads[0], T * D);
    p.k_off = lead_offsets(out, leads[1], S * D);
    p.v_off = lead_offsets(out, leads[2], S * Dv);
    p.y_off = lead_offsets(out, out, T * Dv);
    if (masked) {
      const Tensor& M = ctx.input(3);
      p.masked = true;
      if (M.dtype() == DType::kFloat)
        p.mask.f = M.data<float>();
      else
        p.mask.b = M.data<uint8_t>();
      p.mask.col = mt[1] == 1 ? 0 : 1;
      p.mask.row = mt[0] == 1 ? 0 : mt[1];
      p.mask.len = S;
      p.m_off = lead_offsets(out, ms, mt[0] * mt[1]);
    }
    solve(p, ctx.pool());
  }

 private:
  KernelFn reference_;
  bool has_scale_ = false;
  float scale_ = 1;
};

std::unique_ptr<Kernel> make_fused_attention(const KernelInit& init) {
  const ir::TypeInfo* qt = init.input_type(0);
  if (qt && qt->elem != DType::kUndefined && qt->elem != DType::kFloat) return nullptr;
  return std::make_unique<FusedAttentionKernel>(init);
}

// ---- ONNX Attention-23/24 ----

class OnnxAttentionKernel final : public Kernel {
 public:
  explicit OnnxAttentionKernel(const KernelInit& init) : reference_(init.reference) {
    const ir::Node& n = init.node;
    has_scale_ = n.has_attr("scale");
    scale_ = n.attr_f("scale", 1.0f);
    softcap_ = std::fabs(n.attr_f("softcap", 0.0f));  // c tanh(x / c) is even in c
    causal_ = n.attr_i("is_causal", 0) != 0;
    q_heads_ = n.attr_i("q_num_heads", 0);
    kv_heads_ = n.attr_i("kv_num_heads", 0);
  }
  std::string_view name() const override { return "cpu.attention"; }
  bool overwrites_outputs() const override { return true; }

  void run(KernelContext& ctx) const override {
    if (!try_run(ctx)) reference_(ctx);
  }

 private:
  /// False (nothing written) for a case the reference must take or report.
  bool try_run(KernelContext& ctx) const {
    const Tensor& Qt = ctx.input(0);
    const Tensor& Kt = ctx.input(1);
    const Tensor& Vt = ctx.input(2);
    if (Qt.dtype() != DType::kFloat || Kt.dtype() != DType::kFloat || Vt.dtype() != DType::kFloat)
      return false;
    const size_t rank = Qt.rank();
    if ((rank != 3 && rank != 4) || Kt.rank() != rank || Vt.rank() != rank) return false;
    int64_t b, qh, sq, hd, kvh, skv, vd;
    if (rank == 3) {
      qh = q_heads_;
      kvh = kv_heads_;
      if (qh <= 0 || kvh <= 0) return false;
      b = Qt.dim(0);
      sq = Qt.dim(1);
      skv = Kt.dim(1);
      if (Qt.dim(2) % qh != 0 || Kt.dim(2) % kvh != 0 || Vt.dim(2) % kvh != 0) return false;
      hd = Qt.dim(2) / qh;
      vd = Vt.dim(2) / kvh;
      if (Kt.dims() != Dims{b, skv, kvh * hd} || Vt.dims() != Dims{b, skv, kvh * vd}) return false;
    } else {
      b = Qt.dim(0);
      qh = Qt.dim(1);
      sq = Qt.dim(2);
      hd = Qt.dim(3);
      kvh = Kt.dim(1);
      skv = Kt.dim(2);
      vd = Vt.dim(3);
      if (Kt.dims() != Dims{b, kvh, skv, hd} || Vt.dims() != Dims{b, kvh, skv, vd}) return false;
    }
    if (kvh <= 0 || qh % kvh != 0) return false;
    const int64_t group = qh / kvh;
    if (ctx.has_input(4) != ctx.has_input(5)) return false;
    int64_t past = 0;
    if (ctx.has_input(4)) {
      const Tensor& pk = ctx.input(4);
      const Tensor& pv = ctx.input(5);
      if (pk.dtype() != DType::kFloat || pv.dtype() != DType::kFloat || pk.rank() != 4)
        return false;
      past = pk.dim(2);
      if (pk.dims() != Dims{b, kvh, past, hd} || pv.dims() != Dims{b, kvh, past, vd}) return false;
    }
    const int64_t total = past + skv;

    Problem p;
    std::vector<int64_t> nonpad;
    if (ctx.has_input(6)) {
      if (ctx.has_input(4) || ctx.input(6).dims() != Dims{b}) return false;
      nonpad = ctx.input_ints(6);
    }
    // The mask, broadcast to (B, Hq, Sq, total) as the reference does.
    int64_t ms[4] = {0, 0, 0, 0};
    if (ctx.has_input(3)) {
      const Tensor& mt = ctx.input(3);
      if ((mt.dtype() != DType::kFloat && mt.dtype() != DType::kBool) || mt.rank() > 4)
        return false;
      Dims md(4 - mt.rank(), 1);
      md.insert(md.end(), mt.dims().begin(), mt.dims().end());
      const int64_t want[4] = {b, qh, sq, total};
      for (int a = 0; a < 3; ++a)
        if (md[a] != 1 && md[a] != want[a]) return false;
      const bool pads = ctx.opset() >= 24 && mt.rank() > 0;
      if (md[3] > total || (!pads && md[3] != 1 && md[3] != total)) return false;
      const bool bcast_last = md[3] == 1 && !pads;
      p.masked = true;
      p.mask.len = bcast_last ? total : md[3];
      p.mask.col = bcast_last ? 0 : 1;
      p.mask.row = md[2] == 1 ? 0 : md[3];
      ms[1] = md[1] == 1 ? 0 : md[2] * md[3];
      ms[0] = md[0] == 1 ? 0 : md[1] * md[2] * md[3];
      if (mt.dtype() == DType::kFloat)
        p.mask.f = mt.data<float>();
      else
        p.mask.b = mt.data<uint8_t>();
    }

    // K and V as (B, Hkv, total, D): the inputs themselves, or past ++ current (written
    // into present_key / present_value when they are wanted).
    const bool want_pk = ctx.has_output(1), want_pv = ctx.has_output(2);
    std::vector<float> kbuf, vbuf;
    const float* K = Kt.data<float>();
    const float* V = Vt.data<float>();
    int64_t k_ld = rank == 3 ? kvh * hd : hd, v_ld = rank == 3 ? kvh * vd : vd;
    auto k_head = [&](int64_t bi, int64_t h) {
      return rank == 3 ? (bi * skv * kvh + h) * hd : (bi * kvh + h) * skv * hd;
    };
    auto v_head = [&](int64_t bi, int64_t h) {
      return rank == 3 ? (bi * skv * kvh + h) * vd : (bi * kvh + h) * skv * vd;
    };
    const bool concat = past > 0 || want_pk || want_pv;
    if (concat) {
      auto join = [&](const float* pastp, const float* cur, int64_t ld, int64_t w, auto head_off,
                      float* dst) {
        for (int64_t bi = 0; bi < b; ++bi)
          for (int64_t h = 0; h < kvh; ++h) {
            float* o = dst + (bi * kvh + h) * total * w;
            if (past > 0)
              std::memcpy(o, pastp + (bi * kvh + h) * past * w,
                          static_cast<size_t>(past * w) * sizeof(float));
            const float* c = cur + head_off(bi, h);
            for (int64_t s = 0; s < skv; ++s)
              std::memcpy(o + (past + s) * w, c + s * ld, static_cast<size_t>(w) * sizeof(float));
          }
      };
      const float* pk = past > 0 ? ctx.input(4).data<float>() : nullptr;
      const float* pv = past > 0 ? ctx.input(5).data<float>() : nullptr;
      float* kd = want_pk ? ctx.output(1).data<float>() : nullptr;
      float* vd_ = want_pv ? ctx.output(2).data<float>() : nullptr;
      if (!kd) {
        kbuf.resize(static_cast<size_t>(b * kvh * total * hd));
        kd = kbuf.data();
      }
      if (!vd_) {
        vbuf.resize(static_cast<size_t>(b * kvh * total * vd));
        vd_ = vbuf.data();
      }
      join(pk, K, k_ld, hd, k_head, kd);
      join(pv, V, v_ld, vd, v_head, vd_);
      K = kd;
      V = vd_;
      k_ld = hd;
      v_ld = vd;
    }

    p.count = b * qh;
    p.T = sq;
    p.S = total;
    p.D = hd;
    p.Dv = vd;
    p.scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(hd));
    p.softcap = softcap_;
    p.causal = causal_;
    p.past = past;
    p.Q = Qt.data<float>();
    p.K = K;
    p.V = V;
    p.Y = ctx.output(0).data<float>();
    p.q_ld = rank == 3 ? qh * hd : hd;
    p.k_ld = k_ld;
    p.v_ld = v_ld;
    p.y_ld = rank == 3 ? qh * vd : vd;
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < qh; ++h) {
        const int64_t kh = h / group;
        p.q_off.push_back(rank == 3 ? bi * sq * qh * hd + h * hd : (bi * qh + h) * sq * hd);
        p.y_off.push_back(rank == 3 ? bi * sq * qh * vd + h * vd : (bi * qh + h) * sq * vd);
        p.k_off.push_back(concat ? (bi * kvh + kh) * total * hd : k_head(bi, kh));
        p.v_off.push_back(concat ? (bi * kvh + kh) * total * vd : v_head(bi, kh));
        if (p.masked) p.m_off.push_back(bi * ms[0] + h * ms[1]);
        if (!nonpad.empty()) p.kv_len.push_back(nonpad[static_cast<size_t>(bi)]);
      }
    solve(p, ctx.pool());
    return true;
  }

  KernelFn reference_;
  bool has_scale_ = false, causal_ = false;
  float scale_ = 1, softcap_ = 0;
  int64_t q_heads_ = 0, kv_heads_ = 0;
};

std::unique_ptr<Kernel> make_onnx_attention(const KernelInit& init) {
  const ir::Node& n = init.node;
  const ir::TypeInfo* qt = init.input_type(0);
  if (qt && qt->elem != DType::kUndefined && qt->elem != DType::kFloat) return nullptr;
  // The raw scores output needs the whole score matrix: the reference keeps it.
  if (n.outputs.size() > 3 && !n.outputs[3].empty()) return nullptr;
  if (n.has_attr("softmax_precision") &&
      n.attr_i("softmax_precision", 1) != static_cast<int64_t>(DType::kFloat))
    return nullptr;
  const int64_t mode = n.attr_i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return nullptr;
  return std::make_unique<OnnxAttentionKernel>(init);
}

}  // namespace

void register_attention(Registry& r) {
  r.add_optimized("ai.onyx", "Attention", 1, 1, {DType::kFloat}, make_fused_attention);
  r.add_optimized("", "Attention", 23, 1000, {DType::kFloat}, make_onnx_attention);
}

}  // namespace onyx::kernels::cpu
