// The CLI's values (tools/onyx/util.cc): strict numbers for --dim and every numeric flag,
// and the feeds `onyx run` builds from --input files of every form, --dim and
// --random-inputs, with clear errors naming the flag, the text and what the model has.
#include <gtest/gtest.h>

#include <cfloat>
#include <filesystem>

#include "format/loader.h"
#include "format/npy.h"
#include "format/npz.h"
#include "format/value_io.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"
#include "test_util.h"
#include "tools/onyx/util.h"

namespace onyx::test {
namespace {

namespace fs = std::filesystem;
using cli::FeedSpec;
using cli::make_feeds;
using cli::parse_int;

TEST(CliNumbers, ParseIntTakesPlainDecimalsOnly) {
  EXPECT_EQ(parse_int("64", "--dim W", 0, 100), 64);
  EXPECT_EQ(parse_int("0", "--dim W", 0, 100), 0);
  EXPECT_EQ(parse_int("007", "--dim W", 0, 100), 7);  // decimal, not octal
  EXPECT_EQ(parse_int("-5", "x", -10, 10), -5);
  EXPECT_EQ(parse_int("-9223372036854775808", "x", INT64_MIN, INT64_MAX), INT64_MIN);
  EXPECT_EQ(parse_int("9223372036854775807", "x", INT64_MIN, INT64_MAX), INT64_MAX);
  for (const char* bad :
       {"1e3", "64abc", "", " 64", "64 ", "+64", "0x40", "6.4", "-", "--1", "1_000"})
    EXPECT_ONYX_ERROR(parse_int(bad, "--dim W", 0, 1000), ErrorCode::kInvalidArgument, "--dim W",
                      std::string("'") + bad + "'", "not an integer");
  for (const char* out : {"-1", "1001", "99999999999999999999", "-99999999999999999999"})
    EXPECT_ONYX_ERROR(parse_int(out, "--dim W", 0, 1000), ErrorCode::kInvalidArgument, "--dim W",
                      std::string("'") + out + "'", "in [0, 1000]");
  EXPECT_ONYX_ERROR(parse_int("9223372036854775808", "x", INT64_MIN, INT64_MAX),
                    ErrorCode::kInvalidArgument);
}

/// Parses `args` ("--n 5") for one option checked by `v`; the value, or the error text.
template <typename T>
std::string parse_with(CLI::Validator v, const std::string& args, T& value) {
  CLI::App app;
  app.add_option("--n", value)->transform(v);
  try {
    app.parse(args, false);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(CliNumbers, ValidatorsReplaceCli11sLooseConversions) {
  int n = 0;
  EXPECT_EQ(parse_with(cli::integer_in(1, 256), "--n 010", n), "");
  EXPECT_EQ(n, 10);  // CLI11 alone reads "010" as octal 8
  for (const char* bad : {"0x3", "3.0", "1e2", "3abc", "-0x1"})
    EXPECT_TRUE(contains(parse_with(cli::integer_in(1, 256), std::string("--n ") + bad, n),
                         "not an integer"))
        << bad;
  EXPECT_TRUE(contains(parse_with(cli::integer_in(1, 256), "--n 0", n), "must be in [1, 256]"));
  EXPECT_TRUE(contains(parse_with(cli::integer_in(1, 256), "--n 257", n), "must be in [1, 256]"));
  uint64_t seed = 0;
  EXPECT_EQ(parse_with(cli::unsigned_in(0, UINT64_MAX), "--n 18446744073709551615", seed), "");
  EXPECT_EQ(seed, UINT64_MAX);
  // CLI11 alone turns "-1" into 2^64-1 and a number past 2^64 into 2^64-1.
  EXPECT_TRUE(
      contains(parse_with(cli::unsigned_in(0, UINT64_MAX), "--n -1", seed), "out of range"));
  EXPECT_TRUE(
      contains(parse_with(cli::unsigned_in(0, UINT64_MAX), "--n 18446744073709551616", seed),
               "out of range"));
  double x = 0;
  EXPECT_EQ(parse_with(cli::number_in(0, DBL_MAX), "--n 1e-3", x), "");
  EXPECT_DOUBLE_EQ(x, 1e-3);
  EXPECT_EQ(parse_with(cli::number_in(0, DBL_MAX), "--n .5", x), "");
  EXPECT_DOUBLE_EQ(x, 0.5);
  for (const char* bad : {"nan", "inf", "0x1p3", "1e", "1,5", "1.5x", "--1"})
    EXPECT_TRUE(contains(parse_with(cli::number_in(0, DBL_MAX), std::string("--n=") + bad, x),
                         "not a number"))
        << bad;
  EXPECT_TRUE(contains(parse_with(cli::number_in(0, DBL_MAX), "--n=-0.5", x), "must be >= 0"));
  EXPECT_TRUE(contains(parse_with(cli::number_in(0, DBL_MAX), "--n 1e999", x), "too large"));
}

/// x: float[N, 3] -> y (Identity); o: optional(float[3]) -> has (OptionalHasElement);
/// s: seq(int64) -> len (SequenceLength); q: int4[2] -> qf (Cast to float).
std::unique_ptr<Session> feed_model() {
  GraphSpec g;
  g.inputs = {
      tensor_info("x", kFloat, {"N", 3}),
      ValueInfoSpec("o", TypeSpec::optional(TypeSpec::tensor(kFloat, {3}))),
      ValueInfoSpec("s", TypeSpec::sequence(TypeSpec::tensor(kInt64, {DimSpec::unknown()}))),
      tensor_info("q", kInt4, {2})};
  g.outputs = {tensor_info("y", kFloat, {"N", 3}), tensor_info("has", kBool, {}),
               tensor_info("len", kInt64, {}), tensor_info("qf", kFloat, {2})};
  g.nodes = {NodeSpec("Identity", {"x"}, {"y"}), NodeSpec("OptionalHasElement", {"o"}, {"has"}),
             NodeSpec("SequenceLength", {"s"}, {"len"}),
             NodeSpec("Cast", {"q"}, {"qf"}, {AttrSpec::Int("to", kFloat)})};
  std::string bytes = ModelSpec(g, 21).serialize();
  return session_from_model(format::load_model_from_bytes(bytes.data(), bytes.size()));
}

const Value& feed(const cli::Feeds& f, const std::string& name) {
  for (const auto& [n, v] : f.values)
    if (n == name) return v;
  throw std::runtime_error("no feed " + name);
}

/// A sequence folder for input 's' (--random-inputs makes tensors only).
std::string seq_folder(const TempDir& dir) {
  auto s = feed_model();
  format::write_value_files(
      dir.path().string(), "s",
      Value::sequence(DType::kInt64, {make_tensor<int64_t>(DType::kInt64, {1}, {1})}),
      session_model(*s).graph->inputs[2].type, "s", format::ValueFormat::kNpy);
  return "s=" + dir.file("s");
}

TEST(CliFeeds, DimsMustBeIntegersForSymbolsTheModelHas) {
  TempDir dir;
  auto s = feed_model();
  FeedSpec spec;
  spec.random = true;
  spec.inputs = {seq_folder(dir)};
  spec.dims = {"N=4"};
  cli::Feeds f = make_feeds(*s, spec);
  EXPECT_EQ(feed(f, "x").tensor().dims(), (Dims{4, 3}));
  for (const char* bad : {"N=1e3", "N=64abc", "N=-1", "N=", "N=2147483648"}) {
    spec.dims = {bad};
    EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "--dim N",
                      std::string("'") + (bad + 2) + "'");
  }
  spec.dims = {"W=8"};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "--dim W", "no input",
                    "its symbolic dims: N");
  spec.dims = {"N=2", "N=3"};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "--dim N is given twice");
  spec.dims = {"=3"};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "SYMBOL=VALUE");
}

TEST(CliFeeds, RandomInputsStayInsideSubByteRanges) {
  TempDir dir;
  auto s = feed_model();
  FeedSpec spec;
  spec.random = true;
  spec.inputs = {seq_folder(dir)};
  cli::Feeds f = make_feeds(*s, spec);
  for (int8_t v : values_of<int8_t>(feed(f, "q").tensor())) {
    EXPECT_GE(v, -8);
    EXPECT_LE(v, 7);
  }
  // The optional input is left empty, with a note; the sequence cannot be made at random.
  EXPECT_TRUE(contains(f.notes.back(), "optional input 'o'") ||
              contains(f.notes.front(), "optional input 'o'"));
}

TEST(CliFeeds, InputsFromEveryFormTheCliWrites) {
  TempDir dir;
  auto s = feed_model();
  const ir::Graph& g = *session_model(*s).graph;
  std::string d = dir.path().string();
  using format::ValueFormat;
  // What `onyx run` would write for values of these types, fed back.
  format::write_value_files(d, "x", Value(make_float({2, 3}, {1, 2, 3, 4, 5, 6})), g.inputs[0].type,
                            "x", ValueFormat::kNpy);
  format::write_value_files(d, "o", Value::none(), g.inputs[1].type, "o", ValueFormat::kNpy);
  Value seq = Value::sequence(DType::kInt64, {make_tensor<int64_t>(DType::kInt64, {2}, {1, 2}),
                                              make_tensor<int64_t>(DType::kInt64, {1}, {3})});
  format::write_value_files(d, "s", seq, g.inputs[2].type, "s", ValueFormat::kNpy);
  format::write_value_files(d, "q", Value(make_tensor<int8_t>(DType::kInt4, {2}, {-8, 7})),
                            g.inputs[3].type, "q", ValueFormat::kNpy);
  FeedSpec spec;
  spec.inputs = {"x=" + dir.file("x.npy"), "o=" + dir.file("o.none"), "s=" + dir.file("s"),
                 "q=" + dir.file("q.npy")};
  cli::Feeds f = make_feeds(*s, spec);
  auto out = s->run(f.values);
  EXPECT_EQ(values_of<float>(out[0].tensor()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out[1].tensor().data<uint8_t>()[0], 0);  // empty
  EXPECT_EQ(out[2].tensor().data<int64_t>()[0], 2);
  EXPECT_EQ(values_of<float>(out[3].tensor()), (std::vector<float>{-8, 7}));
  bool noted = false;
  for (const auto& n : f.notes) noted |= contains(n, "read as int4");
  EXPECT_TRUE(noted);

  // The same values as .pb files, and from one .npz (the sequence as s/0, s/1).
  for (size_t i = 0; i < 4; ++i) {
    Value v = feed(f, g.inputs[i].name);
    format::write_value_files(d, g.inputs[i].name, v, g.inputs[i].type, g.inputs[i].name,
                              ValueFormat::kPb);
  }
  spec.inputs = {"x=" + dir.file("x.pb"), "o=" + dir.file("o.pb"), "s=" + dir.file("s.pb"),
                 "q=" + dir.file("q.pb")};
  auto out2 = s->run(make_feeds(*s, spec).values);
  EXPECT_EQ(out2[2].tensor().data<int64_t>()[0], 2);
  EXPECT_EQ(values_of<float>(out2[3].tensor()), (std::vector<float>{-8, 7}));
  format::write_npz_file(dir.file("all.npz"),
                         {{"x", make_float({1, 3}, {7, 8, 9})},
                          {"s/0", make_tensor<int64_t>(DType::kInt64, {1}, {5})},
                          {"s/1", make_tensor<int64_t>(DType::kInt64, {0}, {})},
                          {"s/2", make_tensor<int64_t>(DType::kInt64, {1}, {6})},
                          {"q", make_tensor<int64_t>(DType::kInt64, {2}, {1, -1})}});
  spec.inputs = {"x=" + dir.file("all.npz"), "s=" + dir.file("all.npz"),
                 "q=" + dir.file("all.npz")};
  auto out3 = s->run(make_feeds(*s, spec).values);
  EXPECT_EQ(values_of<float>(out3[0].tensor()), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(out3[2].tensor().data<int64_t>()[0], 3);
  EXPECT_EQ(values_of<float>(out3[3].tensor()), (std::vector<float>{1, -1}));
  spec.inputs = {"o=" + dir.file("all.npz")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "input 'o'",
                    "no array named 'o'", "x, q, s");
}

TEST(CliFeeds, InputNamesAreChecked) {
  TempDir dir;
  auto s = feed_model();
  format::write_npy_file(dir.file("x.npy"), make_float({1, 3}, {1, 2, 3}));
  FeedSpec spec;
  spec.random = true;
  spec.inputs = {"x=" + dir.file("x.npy"), "x=" + dir.file("x.npy")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "--input x is given twice");
  spec.inputs = {"image=" + dir.file("x.npy")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "--input image",
                    "no input of that name", "its inputs: x, o, s, q");
  for (const char* bad : {"x", "=a.npy", "x="}) {
    spec.inputs = {bad};
    EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "NAME=PATH", bad);
  }
  spec.inputs = {"q=" + dir.file("x.npy")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "input 'q' is float",
                    "int4");
  spec.inputs = {"s=" + dir.file("x.npy")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kInvalidArgument, "input 's'",
                    "folder of 0.npy");
  spec.inputs = {"x=" + dir.file("missing.npy")};
  EXPECT_ONYX_ERROR(make_feeds(*s, spec), ErrorCode::kIo, "missing.npy");
}

}  // namespace
}  // namespace onyx::test
