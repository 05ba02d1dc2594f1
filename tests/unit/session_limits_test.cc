// Session::run's promises beyond the input contract: outputs that belong to the caller,
// resource limits that stop hostile models before they allocate, and RunOptions::terminate.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "format/loader.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

std::unique_ptr<Session> session_of(const ModelSpec& m, const SessionOptions& so = {}) {
  std::string bytes = m.serialize();
  return session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()), so);
}

/// Fills every tensor of every output with a pattern (strings: "scribbled").
void scribble(std::vector<Value>& outs) {
  auto fill = [](Tensor& t) {
    if (t.dtype() == DType::kString) {
      for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = "scribbled";
    } else if (t.nbytes()) {
      std::memset(t.raw(), 0x5a, t.nbytes());
    }
  };
  for (Value& v : outs) {
    if (v.is_tensor()) fill(v.tensor());
    if (v.is_sequence())
      for (const Tensor& t : v.seq()) fill(const_cast<Tensor&>(t));
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// ---- outputs are the caller's ----

TEST(SessionOutputs, WritingIntoOutputsChangesNothingLater) {
  // Outputs: an initializer, a folded constant, a graph input passed through, the same
  // computed value twice, an Identity of an input, a computed value, a sequence of an
  // initializer and an input, and a string constant.
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {3})};
  g.initializers = {TensorSpec::floats("w", {3}, {1, 2, 3}), TensorSpec::floats("two", {}, {2})};
  TensorSpec label;
  label.name = "label";
  label.data_type = kString;
  label.dims = {2};
  label.string_data = {"cat", "dog"};
  g.initializers.push_back(label);
  g.outputs = {tensor_info("w", kFloat, {3}),       tensor_info("folded", kFloat, {3}),
               tensor_info("x", kFloat, {3}),       tensor_info("sum", kFloat, {3}),
               tensor_info("sum_again", kFloat, {3}), tensor_info("x_id", kFloat, {3}),
               ValueInfoSpec("seq", TypeSpec::sequence(TypeSpec::tensor(kFloat, {3}))),
               tensor_info("label", kString, {2})};
  g.nodes = {NodeSpec("Mul", {"w", "two"}, {"folded"}), NodeSpec("Add", {"x", "w"}, {"sum"}),
             NodeSpec("Identity", {"sum"}, {"sum_again"}), NodeSpec("Identity", {"x"}, {"x_id"}),
             NodeSpec("SequenceConstruct", {"w", "x"}, {"seq"})};
  auto s = session_of(ModelSpec(g));
  Tensor x = make_float({3}, {10, 20, 30});
  auto first = s->run({{"x", x}});
  ASSERT_EQ(first.size(), 8u);
  // No two outputs share a buffer, and none shares the feed's.
  std::vector<const void*> bufs;
  for (const Value& v : first) {
    if (v.is_tensor()) bufs.push_back(v.tensor().storage());
    if (v.is_sequence())
      for (const Tensor& t : v.seq()) bufs.push_back(t.storage());
  }
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_NE(bufs[i], x.storage()) << "output buffer " << i << " is the feed's";
    for (size_t j = i + 1; j < bufs.size(); ++j) EXPECT_NE(bufs[i], bufs[j]) << i << " and " << j;
  }
  scribble(first);
  EXPECT_EQ(values_of<float>(x), (std::vector<float>{10, 20, 30}));
  auto again = s->run({{"x", x}});
  EXPECT_EQ(values_of<float>(again[0].tensor()), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values_of<float>(again[1].tensor()), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(values_of<float>(again[2].tensor()), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(values_of<float>(again[3].tensor()), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(values_of<float>(again[4].tensor()), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(values_of<float>(again[5].tensor()), (std::vector<float>{10, 20, 30}));
  ASSERT_TRUE(again[6].is_sequence());
  ASSERT_EQ(again[6].seq().size(), 2u);
  EXPECT_EQ(values_of<float>(again[6].seq()[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values_of<float>(again[6].seq()[1]), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(again[7].tensor().data<std::string>()[0], "cat");
  EXPECT_EQ(again[7].tensor().data<std::string>()[1], "dog");
}

TEST(SessionOutputs, InitializerOutputOfAMappedFileIsWritable) {
  // Initializers of a model file view the read-only mapping; an output that is one must
  // be a copy (writing into the mapping would fault).
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {4})};
  std::vector<float> w(1024, 0.5f);
  g.initializers = {TensorSpec::raw_of("w", kFloat, {1024}, raw_bytes(w))};
  g.outputs = {tensor_info("w", kFloat, {1024}), tensor_info("y", kFloat, {4})};
  g.nodes = {NodeSpec("Relu", {"x"}, {"y"})};
  TempDir dir;
  std::string path = dir.file("m.onnx");
  write_file(path, ModelSpec(g).serialize());
  auto s = Session::open(path);
  auto out = s->run({{"x", make_float({4}, {1, -1, 2, -2})}});
  scribble(out);
  auto again = s->run({{"x", make_float({4}, {1, -1, 2, -2})}});
  for (float v : values_of<float>(again[0].tensor())) ASSERT_EQ(v, 0.5f);
}

// ---- resource limits ----

/// One node `op` on a constant int64 input `shape` (its values), output float or int64.
ModelSpec one_node(const std::string& op, std::vector<int64_t> shape_values, std::vector<std::string> extra_inputs,
                   std::vector<TensorSpec> extra_inits, int32_t out_elem, std::vector<AttrSpec> attrs = {}) {
  GraphSpec g;
  g.initializers = {TensorSpec::int64s("shape", {static_cast<int64_t>(shape_values.size())}, shape_values)};
  for (auto& t : extra_inits) g.initializers.push_back(t);
  std::vector<std::string> ins = extra_inputs;
  g.outputs = {ValueInfoSpec("y", TypeSpec::unranked(out_elem))};
  g.nodes = {NodeSpec(op, ins, {"y"}, attrs)};
  g.nodes[0].name = "hostile";
  return ModelSpec(g);
}

void expect_limit(const std::function<void()>& f, const char* what) {
  auto t0 = std::chrono::steady_clock::now();
  Caught c = catch_error(f);
  double s = seconds_since(t0);
  SCOPED_TRACE(what);
  ASSERT_TRUE(c.is_error()) << c.message;
  EXPECT_EQ(code_name(c.code), std::string("kLimit")) << c.message;
  EXPECT_NE(c.message.find("'hostile'"), std::string::npos) << c.message;
  EXPECT_LT(s, 1.0) << c.message;
}

TEST(SessionLimits, HugeOutputsFailBeforeAllocating) {
  const int64_t tera = 1000000000000;  // 10^12 elements
  std::vector<std::pair<const char*, ModelSpec>> cases;
  cases.emplace_back("ConstantOfShape", one_node("ConstantOfShape", {tera}, {"shape"}, {}, kFloat));
  cases.emplace_back("Expand", one_node("Expand", {1000000, 1000000}, {"one", "shape"},
                                        {TensorSpec::floats("one", {1}, {1})}, kFloat));
  cases.emplace_back("Tile", one_node("Tile", {1000000, 1000000}, {"v", "shape"},
                                      {TensorSpec::floats("v", {1, 1}, {1})}, kFloat));
  {
    GraphSpec g;
    g.initializers = {TensorSpec::floats("start", {}, {0}), TensorSpec::floats("limit", {}, {1e12f}),
                      TensorSpec::floats("delta", {}, {1})};
    g.outputs = {ValueInfoSpec("y", TypeSpec::unranked(kFloat))};
    g.nodes = {NodeSpec("Range", {"start", "limit", "delta"}, {"y"})};
    g.nodes[0].name = "hostile";
    cases.emplace_back("Range", ModelSpec(g));
  }
  {
    GraphSpec g;
    g.inputs = {tensor_info("x", kFloat, {1, 1, 2, 2})};
    g.initializers = {TensorSpec::int64s("sizes", {4}, {1, 1, 1000000, 1000000})};
    g.outputs = {ValueInfoSpec("y", TypeSpec::unranked(kFloat))};
    g.nodes = {NodeSpec("Resize", {"x", "", "", "sizes"}, {"y"})};
    g.nodes[0].name = "hostile";
    cases.emplace_back("Resize", ModelSpec(g));
  }
  long rss0 = peak_rss_mib();
  for (auto& [op, m] : cases) {
    std::unique_ptr<Session> s;
    // Planning must not fold these (they exceed the folding limit); the run refuses them.
    ASSERT_FALSE(catch_error([&] { s = session_of(m); }).is_error()) << op;
    std::vector<std::pair<std::string, Value>> feeds;
    if (std::string(op) == "Resize") feeds.emplace_back("x", Value(Tensor(DType::kFloat, {1, 1, 2, 2})));
    expect_limit([&] { s->run(feeds); }, op);
  }
  EXPECT_LT(peak_rss_mib() - rss0, 200);
}

TEST(SessionLimits, TensorAndRunBytesAreConfigurable) {
  // y = ConstantOfShape([1024, 1024]) (4 MiB), z = y + y (4 MiB more).
  GraphSpec g;
  g.inputs = {tensor_info("shape", kInt64, {2})};
  g.outputs = {tensor_info("z", kFloat, {1024, 1024})};
  g.nodes = {NodeSpec("ConstantOfShape", {"shape"}, {"y"}), NodeSpec("Add", {"y", "y"}, {"z"})};
  g.nodes[0].name = "make";
  g.nodes[1].name = "twice";
  auto feeds = std::vector<std::pair<std::string, Value>>{
      {"shape", make_tensor<int64_t>(DType::kInt64, {2}, {1024, 1024})}};
  SessionOptions small;
  small.max_tensor_bytes = 1 << 20;
  EXPECT_ONYX_ERROR(session_of(ModelSpec(g), small)->run(feeds), ErrorCode::kLimit, "'make'",
                    "float[1024, 1024] (4.0 MiB)", "max_tensor_bytes", "1.0 MiB");
  SessionOptions total;
  total.max_run_bytes = 6 << 20;  // one 4 MiB tensor fits, two do not
  EXPECT_ONYX_ERROR(session_of(ModelSpec(g), total)->run(feeds), ErrorCode::kLimit, "'twice'",
                    "max_run_bytes", "already holds 4.0 MiB");
  SessionOptions off;
  off.max_tensor_bytes = 0;
  off.max_run_bytes = 0;
  auto out = session_of(ModelSpec(g), off)->run(feeds);
  EXPECT_EQ(out[0].tensor().dims(), (Dims{1024, 1024}));
}

GraphSpec counting_body() {
  GraphSpec body;
  body.name = "body";
  body.inputs = {tensor_info("i", kInt64, {}), tensor_info("c", kBool, {}), tensor_info("acc_in", kFloat, {1})};
  body.outputs = {tensor_info("c_out", kBool, {}), tensor_info("acc_out", kFloat, {1})};
  body.initializers = {TensorSpec::floats("one", {1}, {1})};
  body.nodes = {NodeSpec("Identity", {"c"}, {"c_out"}), NodeSpec("Add", {"acc_in", "one"}, {"acc_out"})};
  return body;
}

TEST(SessionLimits, LoopIterationCap) {
  GraphSpec g;
  g.inputs = {tensor_info("M", kInt64, {})};
  g.initializers = {TensorSpec::floats("start", {1}, {0})};
  g.outputs = {tensor_info("acc", kFloat, {1})};
  g.nodes = {NodeSpec("Loop", {"M", "", "start"}, {"acc"}, {AttrSpec::Graph("body", counting_body())})};
  g.nodes[0].name = "hostile";
  auto s = session_of(ModelSpec(g));
  auto M = [](int64_t m) {
    return std::vector<std::pair<std::string, Value>>{{"M", make_tensor<int64_t>(DType::kInt64, {}, {m})}};
  };
  EXPECT_EQ(values_of<float>(s->run(M(1000))[0].tensor()), (std::vector<float>{1000}));
  expect_limit([&] { s->run(M(int64_t{1} << 62)); }, "Loop 2^62");
  SessionOptions few;
  few.max_loop_iterations = 10;
  auto s10 = session_of(ModelSpec(g), few);
  EXPECT_EQ(values_of<float>(s10->run(M(10))[0].tensor()), (std::vector<float>{10}));
  EXPECT_ONYX_ERROR(s10->run(M(11)), ErrorCode::kLimit, "more than 10 iterations", "max_loop_iterations");
}

// ---- RunOptions::terminate ----

TEST(SessionTerminate, AnotherThreadStopsALongRun) {
  GraphSpec g;
  g.inputs = {tensor_info("M", kInt64, {})};
  g.initializers = {TensorSpec::floats("start", {1}, {0})};
  g.outputs = {tensor_info("acc", kFloat, {1})};
  g.nodes = {NodeSpec("Loop", {"M", "", "start"}, {"acc"}, {AttrSpec::Graph("body", counting_body())})};
  SessionOptions so;
  so.max_loop_iterations = 0;  // no cap: only terminate can stop it
  auto s = session_of(ModelSpec(g), so);
  RunOptions ro;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ro.terminate = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  Caught c = catch_error([&] {
    s->run({{"M", make_tensor<int64_t>(DType::kInt64, {}, {int64_t{1} << 40})}}, ro);
  });
  stopper.join();
  ASSERT_TRUE(c.is_error()) << c.message;
  EXPECT_EQ(code_name(c.code), std::string("kCancelled")) << c.message;
  EXPECT_NE(c.message.find("RunOptions::terminate"), std::string::npos) << c.message;
  EXPECT_LT(seconds_since(t0), 2.0);
  // A set flag stops the next run at once; a fresh RunOptions runs normally.
  EXPECT_ONYX_ERROR(s->run({{"M", make_tensor<int64_t>(DType::kInt64, {}, {3})}}, ro), ErrorCode::kCancelled);
  EXPECT_EQ(values_of<float>(s->run({{"M", make_tensor<int64_t>(DType::kInt64, {}, {3})}})[0].tensor()),
            (std::vector<float>{3}));
}

// ---- terminate inside one node, and folding that cannot hang creation ----

/// Nodes making `name`, a tensor of `dims` filled with `value` (a one-element tensor).
std::vector<NodeSpec> filled(const std::string& name, const std::vector<int64_t>& dims, TensorSpec value) {
  value.name = name + "_value";
  return {NodeSpec("Constant", {}, {name + "_shape"},
                   {AttrSpec::Tensor("value", TensorSpec::int64s(name + "_dims", {static_cast<int64_t>(dims.size())}, dims))}),
          NodeSpec("ConstantOfShape", {name + "_shape"}, {name}, {AttrSpec::Tensor("value", value)})};
}

TensorSpec one_double(double v) {
  return TensorSpec::raw_of("v", kDouble, {1}, std::string(reinterpret_cast<const char*>(&v), sizeof v));
}

/// Runs `s` on `feeds` with RunOptions::terminate set after 100 ms from another thread;
/// returns the seconds the run took and what it threw.
std::pair<double, Caught> run_stopped(Session& s, const std::vector<std::pair<std::string, Value>>& feeds) {
  RunOptions ro;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ro.terminate = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  Caught c = catch_error([&] { s.run(feeds, ro); });
  const double took = seconds_since(t0);
  stopper.join();
  return {took, c};
}

// Each node below asks for 10^10 to 10^11 operations within the memory limits (minutes to
// hours on one thread); the kernels poll the terminate flag inside the node, so the run
// ends within a fraction of a second of the flag. Before, each ran to its end.
TEST(SessionTerminate, StopsInsideOneLongNode) {
  struct Case {
    const char* what;
    GraphSpec g;
    std::vector<std::pair<std::string, Value>> feeds;
    ValueInfoSpec out;
  };
  std::vector<Case> cases;
  auto zeros = [](DType dt, const Dims& d) { return Value(Tensor(dt, d)); };
  {  // one channel, a 512x512 kernel over 1024x1024: the depthwise kernel, 6.9e10 taps
    Case c{"float Conv, depthwise path", {}, {{"x", zeros(DType::kFloat, {1, 1, 1024, 1024})}}, tensor_info("y", kFloat, {1, 1, 513, 513})};
    c.g.inputs = {tensor_info("x", kFloat, {1, 1, 1024, 1024})};
    c.g.nodes = filled("w", {1, 1, 512, 512}, TensorSpec::floats("v", {1}, {0.5f}));
    c.g.nodes.push_back(NodeSpec("Conv", {"x", "w"}, {"y"}));
    cases.push_back(std::move(c));
  }
  {  // 64 -> 64 channels, 31x31 kernel at 256x256: im2col + GEMM, 2e11 multiply-adds
    Case c{"float Conv, GEMM path", {}, {{"x", zeros(DType::kFloat, {1, 64, 256, 256})}}, tensor_info("y", kFloat, {1, 64, 226, 226})};
    c.g.inputs = {tensor_info("x", kFloat, {1, 64, 256, 256})};
    c.g.nodes = filled("w", {64, 64, 31, 31}, TensorSpec::floats("v", {1}, {0.5f}));
    c.g.nodes.push_back(NodeSpec("Conv", {"x", "w"}, {"y"}));
    cases.push_back(std::move(c));
  }
  {  // the reference kernel (double): 4.3e9 taps
    Case c{"double Conv, reference kernel", {}, {{"x", zeros(DType::kDouble, {1, 1, 512, 512})}}, tensor_info("y", kDouble, {1, 1, 257, 257})};
    c.g.inputs = {tensor_info("x", kDouble, {1, 1, 512, 512})};
    c.g.nodes = filled("w", {1, 1, 256, 256}, one_double(0.5));
    c.g.nodes.push_back(NodeSpec("Conv", {"x", "w"}, {"y"}));
    cases.push_back(std::move(c));
  }
  {  // a naive DFT of 65536 points: 4.3e9 complex multiply-adds
    Case c{"DFT", {}, {{"x", zeros(DType::kFloat, {1, 65536, 1})}}, tensor_info("y", kFloat, {1, 65536, 2})};
    c.g.inputs = {tensor_info("x", kFloat, {1, 65536, 1})};
    c.g.nodes = {NodeSpec("DFT", {"x"}, {"y"})};
    cases.push_back(std::move(c));
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    c.g.outputs = {c.out};
    auto s = session_of(ModelSpec(c.g));
    auto [took, caught] = run_stopped(*s, c.feeds);
    ASSERT_TRUE(caught.is_error()) << c.what << " finished in " << took << " s";
    EXPECT_EQ(code_name(caught.code), std::string("kCancelled")) << caught.message;
    EXPECT_NE(caught.message.find("RunOptions::terminate"), std::string::npos) << caught.message;
    EXPECT_LT(took, 1.5) << caught.message;
  }
}

// The same depthwise Conv on constant operands: folding it at creation would take
// minutes. Folding stops at its time budget (2 s in the optimizer, 2 s in the planner)
// and leaves the node to the runs, where terminate ends it.
TEST(SessionTerminate, ConstantFoldingCannotHangCreation) {
  GraphSpec g;
  g.nodes = filled("x", {1, 1, 1024, 1024}, TensorSpec::floats("v", {1}, {1.0f}));
  for (auto& n : filled("w", {1, 1, 512, 512}, TensorSpec::floats("v", {1}, {0.5f}))) g.nodes.push_back(n);
  g.nodes.push_back(NodeSpec("Conv", {"x", "w"}, {"y"}));
  g.outputs = {tensor_info("y", kFloat, {1, 1, 513, 513})};
  auto t0 = std::chrono::steady_clock::now();
  auto s = session_of(ModelSpec(g));
  EXPECT_LT(seconds_since(t0), 8.0);
  auto [took, caught] = run_stopped(*s, {});
  ASSERT_TRUE(caught.is_error()) << "finished in " << took << " s";
  EXPECT_EQ(code_name(caught.code), std::string("kCancelled")) << caught.message;
  EXPECT_LT(took, 1.5) << caught.message;
}

}  // namespace
}  // namespace onyx::test
