// Concat as memcpy pieces spread over the pool's threads, writing every output byte (the
// executor then skips zero-filling the output: a DenseNet concatenates ~40 MB per run,
// and the fill doubled what it wrote). An input its producer wrote into its slice of Y
// already (the executor's concat in place) is not copied. Inputs that do not fit the
// output go to the reference kernel, which reports them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/register.h"
#include "runtime/thread_pool.h"

namespace onyx::kernels::cpu {
namespace {

/// rows copies of `bytes` bytes, src rows contiguous, dst rows dst_stride apart.
struct Piece {
  const char* src;
  char* dst;
  size_t bytes;
  int64_t rows;
  size_t dst_stride;
};

/// A piece's rows, N bytes each (0: pc.bytes). Copies of a constant size are a load and a
/// store, where a memcpy call per row of 8 bytes cost ten times the copy (yolo's Concat of
/// [.., 2] + [.., 2] + [.., 81] boxes: 14,400 calls).
template <size_t N = 0>
void copy_rows(const Piece& pc) {
  const size_t n = N ? N : pc.bytes;
  for (int64_t r = 0; r < pc.rows; ++r)
    std::memcpy(pc.dst + static_cast<size_t>(r) * pc.dst_stride, pc.src + static_cast<size_t>(r) * n, n);
}

class ConcatKernel final : public Kernel {
 public:
  explicit ConcatKernel(KernelFn reference, int64_t axis) : reference_(reference), axis_(axis) {}

  void run(KernelContext& ctx) const override {
    if (!ctx.has_output(0) || ctx.num_inputs() == 0) return reference_(ctx);
    Tensor& y = ctx.output(0);
    const auto rank = static_cast<int64_t>(y.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank == 0 || axis < 0 || axis >= rank || y.dtype() == DType::kString) return reference_(ctx);
    const auto a = static_cast<size_t>(axis);
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < a; ++k) outer *= y.dim(k);
    for (size_t k = a + 1; k < y.rank(); ++k) inner *= y.dim(k);
    const size_t es = dtype_size(y.dtype());
    const int64_t out_row = y.dim(a) * inner;
    // Pieces of about 256 KiB, so a few large inputs still spread over the threads.
    constexpr size_t kPiece = size_t(256) << 10;
    std::vector<Piece> pieces;
    size_t total = 0;
    int64_t at = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return reference_(ctx);
      const Tensor& x = ctx.input(i);
      if (x.rank() != y.rank() || x.dtype() != y.dtype()) return reference_(ctx);
      const int64_t row = x.dim(a) * inner;
      if (at + row > out_row || x.numel() != outer * row) return reference_(ctx);
      const size_t row_bytes = static_cast<size_t>(row) * es;
      const size_t dst_stride = static_cast<size_t>(out_row) * es;
      const char* xs = static_cast<const char*>(x.raw());
      char* yd = static_cast<char*>(y.raw()) + static_cast<size_t>(at) * es;
      if (xs == yd && outer == 1) {
        // Already in place: its producer wrote it into this slice of Y (the executor's
        // concat in place, src/runtime/plan.h).
        at += row;
        continue;
      }
      if (row_bytes > 0 && row_bytes < kPiece) {
        // Short rows (an innermost axis, say): runs of about kPiece bytes of rows.
        const auto per = static_cast<int64_t>(kPiece / row_bytes);
        for (int64_t o = 0; o < outer; o += per)
          pieces.push_back({xs + static_cast<size_t>(o) * row_bytes,
                            yd + static_cast<size_t>(o) * dst_stride, row_bytes,
                            std::min(per, outer - o), dst_stride});
      } else {
        for (int64_t o = 0; o < outer && row_bytes > 0; ++o)
          for (size_t b = 0; b < row_bytes; b += kPiece)
            pieces.push_back({xs + static_cast<size_t>(o) * row_bytes + b,
                              yd + static_cast<size_t>(o) * dst_stride + b,
                              std::min(kPiece, row_bytes - b), 1, 0});
      }
      total += row_bytes * static_cast<size_t>(outer);
      at += row;
    }
    if (at != out_row) return reference_(ctx);
    auto copy = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const Piece& pc = pieces[static_cast<size_t>(p)];
        switch (pc.bytes) {  // rows of a few elements (a detector's boxes: 2 + 2 + classes)
          case 4: copy_rows<4>(pc); break;
          case 8: copy_rows<8>(pc); break;
          case 12: copy_rows<12>(pc); break;
          case 16: copy_rows<16>(pc); break;
          case 32: copy_rows<32>(pc); break;
          default: copy_rows(pc);
        }
      }
    };
    const auto n = static_cast<int64_t>(pieces.size());
    ThreadPool* pool = ctx.pool();
    // Worth the threads from about a MiB.
    const int64_t chunks = pool ? pool->chunks_for(n, static_cast<double>(total), double(1 << 19)) : 1;
    if (chunks > 1)
      pool->parallel_for(n, copy);
    else
      copy(0, n);
  }
  std::string_view name() const override { return "cpu.concat"; }
  bool overwrites_outputs() const override { return true; }

 private:
  KernelFn reference_;
  int64_t axis_;
};

std::unique_ptr<Kernel> make_concat(const KernelInit& init) {
  if (!init.node.has_attr("axis")) return nullptr;  // required: the reference reports it
  return std::make_unique<ConcatKernel>(init.reference, init.node.attr_i("axis", 0));
}

}  // namespace

void register_concat(Registry& r) {
  r.add_optimized("", "Concat", 1, 1000, {}, make_concat);
}

}  // namespace onyx::kernels::cpu
