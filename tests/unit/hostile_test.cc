// Hostile models and files (issue 9): integer attributes and dims that overflow, 1-D
// shape inputs whose declared length would become an output rank of 2^32, tensors of
// 2^40 strings, empty tensors with huge extents, and FIFOs named as models, external
// data or inputs. Each must end in an onyx::Error naming the node and the fault in
// check::check_model, Session::create and Session::run, or, where the model is valid,
// run to the result the definition of the op gives.
//
// Every case runs in a forked child under a 1.5 GiB address-space limit, so a case that
// regresses to a huge allocation fails (instead of swapping the machine) and one that
// dies by a signal (SIGFPE, SIGSEGV) fails the test instead of the test binary. A
// watchdog alarm ends a child that hangs (a regressed FIFO open blocks for ever).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "base/mmap_file.h"
#include "check/validate.h"
#include "format/loader.h"
#include "format/npy.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2p32 = int64_t{1} << 32, k2p40 = int64_t{1} << 40, k2p62 = int64_t{1} << 62;

/// What a forked child reported: how it ended and the text it wrote.
struct Child {
  bool exited = false;  ///< false: ended by a signal
  int code = 0;         ///< exit status, or the signal number
  std::string text;
};

/// Runs `body` in a forked child with at most 1.5 GiB of address space and a 60 s
/// watchdog; the child writes body's result to a pipe and exits 0.
Child in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return {false, -1, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    rlimit as{size_t{3} << 29, size_t{3} << 29};
    ::setrlimit(RLIMIT_AS, &as);
#endif
    ::alarm(60);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("uncaught exception: ") + e.what();
    }
    size_t done = 0;
    while (done < out.size()) {
      ssize_t w = ::write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  Child c;
  char buf[4096];
  ssize_t r;
  while ((r = ::read(fds[0], buf, sizeof buf)) > 0) c.text.append(buf, static_cast<size_t>(r));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  c.exited = WIFEXITED(status);
  c.code = c.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return c;
}

::testing::AssertionResult ended_normally(const Child& c) {
  if (c.exited && c.code == 0) return ::testing::AssertionSuccess();
  if (!c.exited)
    return ::testing::AssertionFailure() << "the child died by signal " << c.code << " ("
                                         << strsignal(c.code) << "); it wrote: " << c.text;
  return ::testing::AssertionFailure() << "the child exited " << c.code << ": " << c.text;
}

std::string what_of(const std::function<void()>& f) {
  Caught c = catch_error(f);
  if (c.kind == Caught::Kind::kNothing) return "(nothing thrown)";
  if (c.kind == Caught::Kind::kOther) return "(not an onyx::Error) " + c.message;
  return c.message;
}

SessionOptions one_thread() {
  SessionOptions o;
  o.threads = 1;
  return o;
}

using Feeds = std::vector<std::pair<std::string, Value>>;

/// In the child: the error check::check_model reports for `node` (or why none), then
/// what Session::create or Session::run throws; separated by a unit separator.
std::string refusals(const std::string& bytes, const std::string& node, const Feeds& feeds) {
  std::shared_ptr<ir::Model> model;
  std::string loaded =
      what_of([&] { model = format::load_model_from_bytes(bytes.data(), bytes.size()); });
  if (!model) return "load: " + loaded + "\x1f" + "load: " + loaded;
  std::string checked = "(check reported no error for the node)";
  check::Report r = check::check_model(*model);
  for (const check::Problem& p : r.problems)
    if (p.severity == check::Problem::Severity::kError && p.node == node) checked = p.message;
  std::string ran = what_of([&] {
    auto s = session_from_model(model, one_thread());
    s->run(feeds);
  });
  return checked + "\x1f" + ran;
}

/// Asserts the model is refused with an onyx::Error naming `node` and every fragment,
/// by check (unless `check_sees_it` is false: a fault only the run meets) and by
/// Session::create or Session::run.
void expect_refused(const ModelSpec& m, const std::string& node,
                    const std::vector<std::string>& fragments, const Feeds& feeds = {},
                    bool check_sees_it = true) {
  const std::string bytes = m.serialize();
  Child c = in_child([&] { return refusals(bytes, node, feeds); });
  ASSERT_TRUE(ended_normally(c));
  const size_t sep = c.text.find('\x1f');
  ASSERT_NE(sep, std::string::npos) << c.text;
  const std::string checked = c.text.substr(0, sep), ran = c.text.substr(sep + 1);
  std::vector<std::pair<const char*, std::string>> stages = {{"Session::create/run", ran}};
  if (check_sees_it) stages.push_back({"check_model", checked});
  for (const auto& [stage, msg] : stages) {
    EXPECT_TRUE(contains(msg, "'" + node + "'"))
        << stage << " does not name node '" << node << "': " << msg;
    for (const std::string& f : fragments)
      EXPECT_TRUE(contains(msg, f)) << stage << " lacks \"" << f << "\": " << msg;
  }
}

/// Asserts that `body` (run in the child) returns "" (success) without dying.
void expect_in_child(const std::function<std::string()>& body) {
  Child c = in_child(body);
  ASSERT_TRUE(ended_normally(c));
  EXPECT_EQ(c.text, "");
}

/// Runs `m` on `feeds` in the child and hands the outputs to `judge` ("" = as expected).
void expect_runs(const ModelSpec& m, const Feeds& feeds,
                 const std::function<std::string(const std::vector<Value>&)>& judge) {
  const std::string bytes = m.serialize();
  expect_in_child([&] {
    std::vector<Value> out;
    std::string err = what_of([&] {
      auto s =
          session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), one_thread());
      out = s->run(feeds);
    });
    if (err != "(nothing thrown)") return "the run failed: " + err;
    return judge(out);
  });
}

ValueInfoSpec unranked(std::string name, int32_t elem = kFloat) {
  return ValueInfoSpec(std::move(name), TypeSpec::unranked(elem));
}

/// One node `op` named `name` from the given inputs to output "y".
ModelSpec one_node(const std::string& op, const std::string& name,
                   std::vector<ValueInfoSpec> inputs, std::vector<std::string> node_inputs,
                   std::vector<AttrSpec> attrs, int64_t opset = 17,
                   std::vector<TensorSpec> inits = {}, int32_t out_elem = kFloat) {
  GraphSpec g;
  g.inputs = std::move(inputs);
  g.outputs = {unranked("y", out_elem)};
  g.initializers = std::move(inits);
  g.nodes = {NodeSpec(op, std::move(node_inputs), {"y"}, std::move(attrs), name)};
  return ModelSpec(g, opset);
}

TensorSpec floats_of(std::string name, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return TensorSpec::floats(std::move(name), std::move(dims),
                            std::vector<float>(static_cast<size_t>(n), 1.0f));
}

// ---- integer attributes and dims that overflow ----

TEST(Hostile, DepthToSpaceBlocksizeSquaredOverflows) {
  // 2^32 squared wraps to 0 (then a division by zero: SIGFPE); 3037000500 squared to a
  // negative "blocksize^2".
  for (int64_t b : {k2p32, int64_t{3037000500}}) {
    SCOPED_TRACE(b);
    expect_refused(one_node("DepthToSpace", "d2s", {tensor_info("x", kFloat, {1, 4, 2, 2})}, {"x"},
                            {AttrSpec::Int("blocksize", b)}),
                   "d2s", {"blocksize", "overflows"}, {{"x", Tensor(DType::kFloat, {1, 4, 2, 2})}});
  }
  expect_refused(one_node("SpaceToDepth", "s2d", {tensor_info("x", kFloat, {1, 4, 2, 2})}, {"x"},
                          {AttrSpec::Int("blocksize", k2p32)}),
                 "s2d", {"blocksize", "overflows"}, {{"x", Tensor(DType::kFloat, {1, 4, 2, 2})}});
}

TEST(Hostile, ConvDilationTimesKernelOverflows) {
  expect_refused(
      one_node("Conv", "conv", {tensor_info("x", kFloat, {1, 1, 5, 5})}, {"x", "w"},
               {AttrSpec::Ints("dilations", {k2p62, 1})}, 17, {floats_of("w", {1, 1, 3, 3})}),
      "conv", {"dilations", "overflows"}, {{"x", Tensor(DType::kFloat, {1, 1, 5, 5})}});
}

TEST(Hostile, ConvTransposeStridesOverflowTheOutputExtent) {
  expect_refused(
      one_node("ConvTranspose", "deconv", {tensor_info("x", kFloat, {1, 1, 4, 4})}, {"x", "w"},
               {AttrSpec::Ints("strides", {k2p62, 1})}, 17, {floats_of("w", {1, 1, 3, 3})}),
      "deconv", {"output extent", "overflows"}, {{"x", Tensor(DType::kFloat, {1, 1, 4, 4})}});
}

TEST(Hostile, PadsOverflowThePaddedAxis) {
  expect_refused(one_node("Pad", "pad", {tensor_info("x", kFloat, {1, 1, 4})}, {"x", "pads"}, {},
                          17, {TensorSpec::int64s("pads", {6}, {0, 0, k2p62, 0, 0, k2p62})}),
                 "pad", {"padded axis", "overflows"}, {{"x", Tensor(DType::kFloat, {1, 1, 4})}});
}

TEST(Hostile, PadsNearInt64LimitsAreRefusedByTheKernel) {
  // 4 + INT64_MIN + INT64_MAX = 3 fits, but the kernel's output-to-input offset would not.
  expect_refused(one_node("Pad", "pad", {tensor_info("x", kFloat, {4})}, {"x", "pads"}, {}, 17,
                          {TensorSpec::int64s("pads", {2}, {kMin, kMax})}),
                 "pad", {"out of range"}, {{"x", Tensor(DType::kFloat, {4})}}, false);
}

TEST(Hostile, TileRepeatsOverflow) {
  expect_refused(one_node("Tile", "tile", {tensor_info("x", kFloat, {4})}, {"x", "reps"}, {}, 17,
                          {TensorSpec::int64s("reps", {1}, {k2p62})}),
                 "tile", {"repeats", "overflows"}, {{"x", Tensor(DType::kFloat, {4})}});
}

TEST(Hostile, ConcatOfHugeDeclaredAxesOverflows) {
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {k2p62}), tensor_info("b", kFloat, {k2p62})};
  g.outputs = {unranked("y")};
  g.nodes = {NodeSpec("Concat", {"a", "b"}, {"y"}, {AttrSpec::Int("axis", 0)}, "cat")};
  expect_refused(ModelSpec(g), "cat", {"concatenated axis", "overflows"});
}

TEST(Hostile, RangeLongerThanInt64IsRefused) {
  expect_refused(one_node("Range", "range", {}, {"s", "l", "d"}, {}, 17,
                          {TensorSpec::int64s("s", {}, {kMin}), TensorSpec::int64s("l", {}, {kMax}),
                           TensorSpec::int64s("d", {}, {1})},
                          kInt64),
                 "range", {"more elements than fit in 64 bits"});
}

TEST(Hostile, ConvWithoutInputChannelsIsAnErrorNotSigfpe) {
  // C = 0 gave the im2col tile size a division by zero.
  TensorSpec w = TensorSpec::raw_of("w", kFloat, {1, 0, 3, 3}, "");
  expect_refused(
      one_node("Conv", "conv", {tensor_info("x", kFloat, {1, 0, 5, 5})}, {"x", "w"}, {}, 17, {w}),
      "conv", {"no input channels"}, {{"x", Tensor(DType::kFloat, {1, 0, 5, 5})}}, false);
}

// ---- output ranks taken from a declared length or a value ----

TEST(Hostile, DeclaredShapeLengthsDoNotBecomeOutputRanks) {
  // Each took minutes and gigabytes, building 2^32 (or 2^62) symbolic dims one by one.
  for (int64_t n : {k2p32, k2p62}) {
    SCOPED_TRACE(n);
    expect_refused(one_node("ConstantOfShape", "cos", {tensor_info("s", kInt64, {n})}, {"s"}, {}),
                   "cos", {"rank " + std::to_string(n), "at most 64 axes"});
    expect_refused(
        one_node("Reshape", "rs", {tensor_info("x", kFloat, {1}), tensor_info("s", kInt64, {n})},
                 {"x", "s"}, {}),
        "rs", {"at most 64 axes"});
    expect_refused(
        one_node("Expand", "ex", {tensor_info("x", kFloat, {1}), tensor_info("s", kInt64, {n})},
                 {"x", "s"}, {}),
        "ex", {"at most 64 axes"});
    expect_refused(one_node("Unsqueeze", "unsq",
                            {tensor_info("x", kFloat, {2}), tensor_info("a", kInt64, {n})},
                            {"x", "a"}, {}, 13),
                   "unsq", {"at most 64 axes"});
  }
  expect_refused(one_node("Col2Im", "c2i",
                          {tensor_info("x", kFloat, {1, 4, 4}), tensor_info("i", kInt64, {k2p32}),
                           tensor_info("b", kInt64, {k2p32})},
                          {"x", "i", "b"}, {}, 18),
                 "c2i", {"image_shape", "at most 64 axes"});
  expect_refused(
      one_node("MaxUnpool", "unpool",
               {tensor_info("x", kFloat, {1, 1, 2, 2}), tensor_info("i", kInt64, {1, 1, 2, 2}),
                tensor_info("s", kInt64, {k2p32})},
               {"x", "i", "s"}, {AttrSpec::Ints("kernel_shape", {2, 2})}, 11),
      "unpool", {"output_shape", "at most 64 axes"});
}

TEST(Hostile, ShapeValuesLongerThanTheRankLimitAreRefused) {
  const std::vector<int64_t> ones(65, 1);
  expect_refused(one_node("Reshape", "rs", {tensor_info("x", kFloat, {1})}, {"x", "s"}, {}, 17,
                          {TensorSpec::int64s("s", {65}, ones)}),
                 "rs", {"rank 65", "at most 64 axes"}, {{"x", Tensor(DType::kFloat, {1})}});
  // 64 axes are allowed: the limit is not off by one.
  expect_runs(
      one_node("ConstantOfShape", "cos", {}, {"s"}, {}, 17,
               {TensorSpec::int64s("s", {64}, std::vector<int64_t>(64, 1))}),
      {}, [](const std::vector<Value>& out) {
        const Tensor& y = out.at(0).tensor();
        return y.rank() == 64 && y.numel() == 1 && y.data<float>()[0] == 0.0f ? "" : "wrong output";
      });
}

TEST(Hostile, LoaderRefusesMoreThan64Axes) {
  std::vector<DimSpec> dims(65, DimSpec(1));
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, dims)};
  g.outputs = {unranked("y")};
  g.nodes = {NodeSpec("Relu", {"x"}, {"y"}, {}, "relu")};
  std::string bytes = ModelSpec(g).serialize();
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(bytes.data(), bytes.size()),
                    ErrorCode::kInvalidModel, "value 'x'", "more than 64 dims");
  GraphSpec h = g;
  h.inputs = {tensor_info("x", kFloat, {1})};
  h.initializers = {TensorSpec::floats("w", std::vector<int64_t>(65, 1), {1.0f})};
  bytes = ModelSpec(h).serialize();
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(bytes.data(), bytes.size()),
                    ErrorCode::kInvalidModel, "tensor 'w'", "65 dims", "at most 64 axes");
}

// ---- huge string tensors ----

TEST(Hostile, StringTensorsOf2p40ElementsAreErrorsNotBadAlloc) {
  // Declared by an initializer without the strings: refused before allocating.
  TensorSpec s;
  s.name = "s";
  s.data_type = kString;
  s.dims = {k2p40};
  GraphSpec g;
  g.outputs = {unranked("y", kString)};
  g.initializers = {s};
  g.nodes = {NodeSpec("Identity", {"s"}, {"y"}, {}, "id")};
  const std::string bytes = ModelSpec(g).serialize();
  expect_in_child([&] {
    std::string msg = what_of([&] { format::load_model_from_bytes(bytes.data(), bytes.size()); });
    return contains(msg, "tensor 's'") && contains(msg, "has 0 strings") ? "" : msg;
  });
  // Allocated as such (what `onyx run --random-inputs` does for a string input): an
  // onyx::Error saying what could not be allocated, not a bare std::bad_alloc.
  expect_in_child([] {
    Caught c = catch_error([] { Tensor t(DType::kString, {k2p40}); });
    return c.is_error() && contains(c.message, "string tensor") &&
                   contains(c.message, "1099511627776")
               ? ""
               : "got: " + c.message;
  });
}

// ---- valid models that hung or allocated terabytes ----

TEST(Hostile, PoolingWindowsMostlyInThePaddingReadOnlyTheInput) {
  // A 2^40-tap window over a 1-pixel image padded by 2^40 - 1 on each side: one output,
  // whose window holds the single input value. The reference built a table of 2^40 taps.
  const int64_t k = k2p40, p = k2p40 - 1;
  auto pool = [&](const std::string& op, std::vector<AttrSpec> extra) {
    std::vector<AttrSpec> attrs = {AttrSpec::Ints("kernel_shape", {k, 1}),
                                   AttrSpec::Ints("pads", {p, 0, p, 0}),
                                   AttrSpec::Ints("strides", {k, 1})};
    for (auto& a : extra) attrs.push_back(a);
    return one_node(op, "pool", {tensor_info("x", kFloat, {1, 1, 1, 1})}, {"x"}, attrs);
  };
  const Feeds x = {{"x", make_float({1, 1, 1, 1}, {7.0f})}};
  auto single = [](float want) {
    return [want](const std::vector<Value>& out) -> std::string {
      const Tensor& y = out.at(0).tensor();
      if (y.dims() != Dims{1, 1, 1, 1}) return "shape " + dims_str(y.dims());
      return y.data<float>()[0] == want ? "" : "value " + std::to_string(y.data<float>()[0]);
    };
  };
  expect_runs(pool("MaxPool", {}), x, single(7.0f));
  expect_runs(pool("AveragePool", {}), x, single(7.0f));
  // Counting the pads, the window holds 2^40 positions: 7 / 2^40, exact in float.
  expect_runs(pool("AveragePool", {AttrSpec::Int("count_include_pad", 1)}), x,
              single(std::ldexp(7.0f, -40)));
}

TEST(Hostile, RangeWhoseStepsPassInt64Midway) {
  // INT64_MIN + k * 2^62 for k < 4: k * 2^62 alone overflows at k = 2 and 3.
  expect_runs(one_node("Range", "range", {}, {"s", "l", "d"}, {}, 17,
                       {TensorSpec::int64s("s", {}, {kMin}), TensorSpec::int64s("l", {}, {kMax}),
                        TensorSpec::int64s("d", {}, {k2p62})},
                       kInt64),
              {}, [](const std::vector<Value>& out) {
                return values_of<int64_t>(out.at(0).tensor()) ==
                               std::vector<int64_t>{kMin, -k2p62, 0, k2p62}
                           ? ""
                           : "wrong values";
              });
}

TEST(Hostile, ScatterReductionsOnIntegersWrap) {
  // Finding 15: reduction='add' / 'mul' computed int64 sums and products that overflow
  // (UBSan); they wrap (two's complement) as Add and Mul do.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"add", {kMin, kMin + 2}},    // kMax + 1, 3 + kMax
      {"mul", {0, kMax - 2}}};      // 2^62 * 4 = 2^64, 3 * kMax = 3 * 2^63 - 3
  for (const auto& [reduction, want] : cases) {
    const std::vector<int64_t> data = reduction == "add" ? std::vector<int64_t>{kMax, 3}
                                                         : std::vector<int64_t>{k2p62, 3};
    const std::vector<int64_t> updates = reduction == "add" ? std::vector<int64_t>{1, kMax}
                                                            : std::vector<int64_t>{4, kMax};
    expect_runs(one_node("ScatterND", "scatter", {}, {"data", "indices", "updates"},
                         {AttrSpec::String("reduction", reduction)}, 16,
                         {TensorSpec::int64s("data", {2}, data),
                          TensorSpec::int64s("indices", {2, 1}, {0, 1}),
                          TensorSpec::int64s("updates", {2}, updates)},
                         kInt64),
                {}, [want = want](const std::vector<Value>& out) {
                  return values_of<int64_t>(out.at(0).tensor()) == want ? "" : "wrong values";
                });
  }
}

TEST(Hostile, IntegerResultsOutOfRangeWrapOrSaturate) {
  // Finding 16: ReduceL1 took |INT64_MIN| as a signed negation (UBSan); it wraps to
  // itself, as numpy's abs and onyx's Abs do, so the sum with 1 is INT64_MIN + 1.
  expect_runs(one_node("ReduceL1", "l1", {}, {"x"}, {AttrSpec::Int("keepdims", 0)}, 18,
                       {TensorSpec::int64s("x", {2}, {kMin, 1})}, kInt64),
              {}, [](const std::vector<Value>& out) {
                return values_of<int64_t>(out.at(0).tensor()) == std::vector<int64_t>{kMin + 1}
                           ? ""
                           : "wrong values";
              });
  // Finding 17: Shrink computes x -+ bias in double; on an integer type the result can
  // leave the type's range (uint64 max is 2^64 as a double; here a bias of 1e30), where
  // the cast back was undefined. It saturates.
  expect_runs(one_node("Shrink", "shrink", {}, {"x"}, {AttrSpec::Float("bias", 1e30f)}, 18,
                       {TensorSpec::int64s("x", {3}, {5, -5, 0})}, kInt64),
              {}, [](const std::vector<Value>& out) {
                return values_of<int64_t>(out.at(0).tensor()) == std::vector<int64_t>{kMin, kMax, 0}
                           ? ""
                           : "wrong values";
              });
}

TEST(Hostile, ConvWithHugeStridesOrDilationsOnATinyImage) {
  // Finding 19: a depthwise Conv (one input channel) of a 5 x 5 image with strides
  // {10^9, 2} asked the depthwise kernel for 32 GB of phase planes (its scratch grows
  // with the strides, not the tensors); a dilation of 10^9 over a padding of 10^9 does the
  // same to its plane rows. x[r][c] = 5r + c, W all ones; expected sums by hand.
  const int64_t g = 1000000000;
  std::vector<float> xs(25);
  for (int i = 0; i < 25; ++i) xs[static_cast<size_t>(i)] = float(i);
  const Feeds x = {{"x", make_float({1, 1, 5, 5}, xs)}};
  auto conv = [&](std::vector<AttrSpec> attrs) {
    return one_node("Conv", "conv", {tensor_info("x", kFloat, {1, 1, 5, 5})}, {"x", "w"},
                    std::move(attrs), 17, {floats_of("w", {1, 1, 3, 3})});
  };
  auto want = [](Dims dims, std::vector<float> v) {
    return [dims, v](const std::vector<Value>& out) -> std::string {
      const Tensor& y = out.at(0).tensor();
      if (y.dims() != dims) return "shape " + dims_str(y.dims());
      return values_of<float>(y) == v ? "" : "wrong values";
    };
  };
  // One output row (rows 0-2), columns 2j - 1 .. 2j + 1 (pad 1 on each side): 15 + 3c
  // summed over the columns inside.
  expect_runs(conv({AttrSpec::String("auto_pad", "SAME_LOWER"), AttrSpec::Ints("kernel_shape", {3, 3}),
                    AttrSpec::Ints("strides", {g, 2})}),
              x, want({1, 1, 1, 3}, {33, 63, 51}));
  // Only the middle tap of each row lands in the image: y[i][j] = sum_r x[i + r][j].
  std::vector<float> dil;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) dil.push_back(float(15 * i + 15 + 3 * j));
  expect_runs(conv({AttrSpec::Ints("kernel_shape", {3, 3}), AttrSpec::Ints("dilations", {1, g}),
                    AttrSpec::Ints("pads", {0, g, 0, g})}),
              x, want({1, 1, 3, 5}, dil));
}

TEST(Hostile, EyeLikeWithAnOffsetNearInt64Limits) {
  for (int64_t k : {kMax, kMin}) {
    expect_runs(one_node("EyeLike", "eye", {tensor_info("x", kFloat, {2, 3})}, {"x"},
                         {AttrSpec::Int("k", k)}),
                {{"x", Tensor(DType::kFloat, {2, 3})}}, [](const std::vector<Value>& out) {
                  return values_of<float>(out.at(0).tensor()) == std::vector<float>(6, 0.0f)
                             ? ""
                             : "not zeros";
                });
  }
}

TEST(Hostile, EmptyOutputsWithHugeExtentsBuildNoTables) {
  // AffineGrid with N = 0 may name any H and W; the position tables were built first.
  expect_runs(
      one_node("AffineGrid", "grid", {tensor_info("theta", kFloat, {0, 2, 3})}, {"theta", "size"},
               {}, 20, {TensorSpec::int64s("size", {4}, {0, 1, k2p40, k2p40})}),
      {{"theta", Tensor(DType::kFloat, {0, 2, 3})}}, [](const std::vector<Value>& out) {
        return out.at(0).tensor().dims() == Dims{0, k2p40, k2p40, 2} ? "" : "wrong shape";
      });
  // MatMul of 2^40 empty batches built a batch table of 2^40 entries.
  GraphSpec g;
  g.inputs = {tensor_info("a", kFloat, {k2p40, 0, 3}), tensor_info("b", kFloat, {1, 3, 2})};
  g.outputs = {unranked("y")};
  g.nodes = {NodeSpec("MatMul", {"a", "b"}, {"y"}, {}, "mm")};
  expect_runs(
      ModelSpec(g),
      {{"a", Tensor(DType::kFloat, {k2p40, 0, 3})}, {"b", Tensor(DType::kFloat, {1, 3, 2})}},
      [](const std::vector<Value>& out) {
        return out.at(0).tensor().dims() == Dims{k2p40, 0, 2} ? "" : "wrong shape";
      });
}

TEST(Hostile, TfIdfWithUnboundedGramLengthAndSkips) {
  // Grams longer than the row match nothing, so max_gram_length = max_skip_count =
  // INT64_MAX count what 1 does here: unigrams 1 (twice) and 2 (once).
  std::vector<AttrSpec> attrs = {
      AttrSpec::Int("min_gram_length", 1),   AttrSpec::Int("max_gram_length", kMax),
      AttrSpec::Int("max_skip_count", kMax), AttrSpec::String("mode", "TF"),
      AttrSpec::Ints("ngram_counts", {0}),   AttrSpec::Ints("ngram_indexes", {0, 1}),
      AttrSpec::Ints("pool_int64s", {1, 2})};
  expect_runs(one_node("TfIdfVectorizer", "tfidf", {tensor_info("x", kInt64, {3})}, {"x"}, attrs),
              {{"x", make_tensor<int64_t>(DType::kInt64, {3}, {1, 2, 1})}},
              [](const std::vector<Value>& out) {
                return values_of<float>(out.at(0).tensor()) == std::vector<float>{2.0f, 1.0f}
                           ? ""
                           : "wrong counts";
              });
}

// ---- files that are not regular files ----

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    fifo_ = dir_.file("pipe");
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  TempDir dir_;
  std::string fifo_;
};

TEST_F(HostileFiles, FifoAsModelExternalDataOrInputIsRefusedWithoutBlocking) {
  const std::string fifo = fifo_;
  TensorSpec w;
  w.name = "w";
  w.dims = {4};
  w.data_type = kFloat;
  w.data_location = 1;
  w.external_data = {{"location", "pipe"}, {"offset", "0"}, {"length", "16"}};
  GraphSpec g;
  g.outputs = {tensor_info("y", kFloat, {4})};
  g.initializers = {w};
  g.nodes = {NodeSpec("Identity", {"w"}, {"y"}, {}, "id")};
  write_file(dir_.file("m.onnx"), ModelSpec(g).serialize());
  const std::string model = dir_.file("m.onnx");
  expect_in_child([&] {
    std::string msg = what_of([&] { format::load_model(model); });
    return contains(msg, "tensor 'w'") && contains(msg, "is a FIFO") && contains(msg, "pipe") ? ""
                                                                                              : msg;
  });
  expect_in_child([&] {
    std::string msg = what_of([&] { Session::open(fifo, one_thread()); });
    return contains(msg, "model '" + fifo + "' is a FIFO") ? "" : msg;
  });
  expect_in_child([&] {
    std::string npy = what_of([&] { format::read_npy_file(fifo); });
    std::string pb = what_of(
        [&] { format::read_value_file(fifo, ir::TypeInfo::tensor_unranked(DType::kFloat)); });
    if (!contains(npy, "is a FIFO")) return "npy: " + npy;
    if (!contains(pb, "is a FIFO")) return "pb: " + pb;
    return std::string();
  });
}

TEST_F(HostileFiles, OtherNonRegularFilesAreNamedForWhatTheyAre) {
  const std::string dir = dir_.path().string();
  expect_in_child([&] {
    std::string d = what_of([&] { read_regular_file(dir, "alphabet file"); });
    std::string dev = what_of([&] { read_regular_file("/dev/null", "meta file"); });
    std::string missing = what_of([&] { read_regular_file(dir + "/nope", "card"); });
    if (!contains(d, "alphabet file '" + dir + "' is a directory")) return "dir: " + d;
    if (!contains(dev, "meta file '/dev/null' is a character device")) return "dev: " + dev;
    if (!contains(missing, "cannot open card")) return "missing: " + missing;
    return std::string();
  });
  write_file(dir_.file("a.txt"), "abc");
  EXPECT_EQ(read_regular_file(dir_.file("a.txt")), "abc");
  EXPECT_ONYX_ERROR(read_regular_file(dir_.file("a.txt"), "image", 2), ErrorCode::kInvalidArgument,
                    "3 bytes", "over 2 bytes");
}

// ---- a kernel reading a tensor as a wider type than it holds ----

TEST(Hostile, TensorReadAsWiderElementsIsAnError) {
  // The class behind fuzz finding 14 (CausalConvWithState read a float16 weight as double,
  // past the buffer's end): every typed access checks the element width.
  Tensor half(DType::kFloat16, {4, 1, 4});
  try {
    (void)half.data<double>();
    ADD_FAILURE() << "a float16 tensor was handed out as double";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_TRUE(contains(e.what(), "float16")) << e.what();
    EXPECT_TRUE(contains(e.what(), "8-byte")) << e.what();
  }
  const Tensor& chalf = half;
  EXPECT_THROW((void)chalf.data<float>(), Error);
  EXPECT_NO_THROW((void)half.data<uint16_t>());  // same width: the bits
  EXPECT_NO_THROW((void)half.data<uint8_t>());   // narrower: the bytes
  Tensor empty(DType::kFloat16, {0});
  EXPECT_NO_THROW((void)empty.data<double>());  // nothing to read
  int64_t storage[2] = {0, 0};
  Tensor v = Tensor::view(DType::kInt32, {2}, storage, std::shared_ptr<void>(storage, [](void*) {}));
  EXPECT_THROW((void)v.data<int64_t>(), Error);
}

}  // namespace
}  // namespace onyx::test
