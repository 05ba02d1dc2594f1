// Values to and from files (format/value_io, format/npy): TensorProto, SequenceProto and
// OptionalProto written as the ONNX test data stores them (byte for byte where the data
// uses raw_data), every dtype and value kind read back, numpy unicode strings, the raw
// bits of the dtypes numpy lacks, and the file forms `onyx run` writes.
#include "format/value_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <protozero/pbf_reader.hpp>
#include <protozero/pbf_writer.hpp>
#include <sstream>

#include "format/loader.h"
#include "format/npy.h"
#include "model_builder.h"
#include "test_util.h"

namespace onyx::test {
namespace {

namespace fs = std::filesystem;
using format::read_npy;
using format::read_value_path;
using format::read_value_proto;
using format::ValueFormat;
using format::write_npy;
using format::write_tensor_proto;
using format::write_value_files;
using format::write_value_proto;

using Kind = ir::TypeInfo::Kind;

ir::TypeInfo tensor_type(DType dt) {
  return ir::TypeInfo::tensor_unranked(dt);
}
ir::TypeInfo seq_type(DType dt) {
  return ir::TypeInfo::sequence_of(tensor_type(dt));
}
ir::TypeInfo opt_type(ir::TypeInfo inner) {
  return ir::TypeInfo::optional_of(std::move(inner));
}

Tensor read_tensor_bytes(const std::string& b, DType dt) {
  return read_value_proto(b.data(), b.size(), tensor_type(dt)).tensor();
}

/// Elements of `dt` that are valid as onyx holds them: 4-/2-bit values in range and
/// sign-extended, bools 0/1, strings with multi-byte UTF-8, bytes that are not UTF-8, an
/// empty string and an embedded NUL; other types a byte pattern (any bits are valid).
Tensor sample(DType dt, Dims dims = {7}) {
  Tensor t(dt, dims);
  int64_t n = t.numel();
  if (dt == DType::kString) {
    const std::string kStrings[] = {"",
                                    "abc",
                                    "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80",
                                    "\xFF\xFE",
                                    std::string("a\0b", 3),
                                    "\xED\xA0\x80",
                                    "tail"};
    for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = kStrings[i % 7];
    return t;
  }
  int bits = dtype_bits(dt);
  auto* p = static_cast<uint8_t*>(t.raw());
  if (bits < 8) {
    bool sign = dt == DType::kInt4 || dt == DType::kInt2;
    for (int64_t i = 0; i < n; ++i) {
      int v = static_cast<int>((i * 5 + 3) % (1 << bits)) - (sign ? 1 << (bits - 1) : 0);
      p[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
    }
    return t;
  }
  for (size_t i = 0; i < t.nbytes(); ++i)
    p[i] =
        dt == DType::kBool ? static_cast<uint8_t>(i % 3 == 0) : static_cast<uint8_t>(i * 37 + 11);
  return t;
}

/// Equal dtype, dims and elements (bytes; strings by value).
::testing::AssertionResult same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(a.dtype()) << " vs " << dtype_name(b.dtype());
  if (a.dims() != b.dims())
    return ::testing::AssertionFailure() << dims_str(a.dims()) << " vs " << dims_str(b.dims());
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<std::string>()[i] != b.data<std::string>()[i])
        return ::testing::AssertionFailure() << "string " << i << " differs";
    return ::testing::AssertionSuccess();
  }
  if (a.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0)
    return ::testing::AssertionFailure() << "bytes differ";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_value(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return ::testing::AssertionFailure() << "kinds differ";
  if (a.is_tensor()) return same_tensor(a.tensor(), b.tensor());
  if (a.is_sequence()) {
    if (a.seq_dtype() != b.seq_dtype())
      return ::testing::AssertionFailure() << "sequence dtypes differ";
    if (a.seq().size() != b.seq().size())
      return ::testing::AssertionFailure() << "sequence lengths differ";
    for (size_t i = 0; i < a.seq().size(); ++i)
      if (auto r = same_tensor(a.seq()[i], b.seq()[i]); !r) return r << " (item " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

std::vector<DType> all_dtypes() {
  std::vector<DType> out;
  for (int32_t c = 1; c <= kMaxDTypeCode; ++c)
    if (dtype_valid(c)) out.push_back(static_cast<DType>(c));
  return out;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The raw_data field (9) of TensorProto bytes.
std::string raw_data_of(const std::string& tensor_proto) {
  protozero::pbf_reader r(tensor_proto);
  std::string raw;
  while (r.next())
    if (r.tag() == 9)
      raw = r.get_bytes();
    else
      r.skip();
  return raw;
}

// ---------------------------------------------------------------- TensorProto

TEST(ValueIo, TensorProtoRoundTripOfEveryDtype) {
  for (DType dt : all_dtypes()) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    for (Dims dims : {Dims{7}, Dims{2, 3}, Dims{}, Dims{0, 4}}) {
      Tensor t = sample(dt, dims);
      std::string b = write_tensor_proto(t, "x");
      EXPECT_TRUE(same_tensor(read_tensor_bytes(b, dt), t)) << dims_str(dims);
    }
  }
}

TEST(ValueIo, SubByteTypesArePackedLowBitsFirst) {
  // onnx.proto: 4-bit elements two to a byte, 2-bit four to a byte, the first element in
  // the lowest bits. Bytes worked out by hand from that rule.
  struct Case {
    DType dt;
    std::vector<int8_t> values;
    std::string packed;
  };
  const Case cases[] = {
      {DType::kInt4, {1, -2, 3}, "\xE1\x03"},  // 0x1 | 0xE << 4, 0x3
      {DType::kUint4, {15, 0, 7, 8}, std::string("\x0F\x87", 2)},
      {DType::kFloat4E2M1, {1, 15}, "\xF1"},
      {DType::kUint2, {0, 1, 2, 3, 1}, "\xE4\x01"},  // 0 | 1 << 2 | 2 << 4 | 3 << 6
      {DType::kInt2, {-2, 1, -1}, "\x36"},           // 0b10 | 0b01 << 2 | 0b11 << 4
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dt)));
    Tensor t = make_tensor<int8_t>(c.dt, {static_cast<int64_t>(c.values.size())}, c.values);
    std::string b = write_tensor_proto(t);
    EXPECT_EQ(raw_data_of(b), c.packed);
    EXPECT_TRUE(same_tensor(read_tensor_bytes(b, c.dt), t));
  }
}

/// Every tensor in a value file stores its data in raw_data or string_data (so protobuf's
/// serializer and write_value_proto give the same bytes); false when one uses a typed
/// field (int32_data for float8/4-bit, float_data ...) or omits the data of an empty tensor.
bool raw_or_strings(const std::string& bytes, Kind kind) {
  protozero::pbf_reader r(bytes);
  bool raw = false, data = false;
  while (r.next()) {
    uint32_t tag = r.tag();
    if (kind == Kind::kTensor) {
      if (tag == 9)
        raw = true, r.skip();
      else if (tag == 6)
        data = true, r.skip();
      else if (tag == 4 || tag == 5 || tag == 7 || tag == 10 || tag == 11)
        return false;
      else
        r.skip();
    } else if (tag == 3) {
      if (!raw_or_strings(r.get_bytes(), Kind::kTensor)) return false;
    } else if (tag == 5) {
      if (!raw_or_strings(r.get_bytes(), Kind::kSequence)) return false;
    } else {
      r.skip();
    }
  }
  return kind != Kind::kTensor || raw || data;
}

/// Checks every input_K.pb / output_K.pb of a suite folder: read, written again under the
/// graph value's name, the same bytes as the file where its tensors use raw_data (what
/// onnx.numpy_helper writes), and the same value when read back in every case.
void check_suite_files(const fs::path& suite, int& identical, int& files) {
  for (const auto& c : fs::directory_iterator(suite)) {
    std::shared_ptr<ir::Model> m;
    try {
      m = format::load_model((c.path() / "model.onnx").string());
    } catch (const Error&) {
      continue;  // a model onyx refuses; its data files are not what this checks
    }
    const ir::Graph& g = *m->graph;
    std::set<std::string> inits;
    for (const auto& [n, t] : g.initializers) inits.insert(n);
    std::vector<const ir::ValueInfo*> ins;
    for (const auto& v : g.inputs)
      if (!inits.count(v.name)) ins.push_back(&v);
    for (const auto& set : fs::directory_iterator(c.path())) {
      if (!set.is_directory()) continue;
      for (int out = 0; out < 2; ++out) {
        size_t n = out ? g.outputs.size() : ins.size();
        for (size_t i = 0; i < n; ++i) {
          const ir::ValueInfo& vi = out ? g.outputs[i] : *ins[i];
          fs::path p = set.path() / ((out ? "output_" : "input_") + std::to_string(i) + ".pb");
          if (!fs::exists(p)) continue;
          SCOPED_TRACE(p.string());
          std::string bytes = file_bytes(p);
          Value v = read_value_proto(bytes.data(), bytes.size(), vi.type);
          std::string again = write_value_proto(v, vi.type, vi.name);
          ++files;
          Kind k = vi.type.kind == Kind::kSequence || vi.type.kind == Kind::kOptional
                       ? vi.type.kind
                       : Kind::kTensor;
          if (raw_or_strings(bytes, k)) {
            EXPECT_EQ(again, bytes);
            identical += again == bytes;
          }
          EXPECT_TRUE(same_value(read_value_proto(again.data(), again.size(), vi.type), v));
        }
      }
    }
  }
}

TEST(ValueIo, SameBytesAsTheOnnxTestData) {
  int identical = 0, files = 0;
  const fs::path suites[] = {
      "/usr/share/libonnx-testdata/data/node",
      fs::path(ONYX_SOURCE_DIR) / ".." / "shared" / "conformance" / "onnx-node"};
  int found = 0;
  for (const auto& s : suites)
    if (fs::is_directory(s)) ++found, check_suite_files(s, identical, files);
  if (!found)
    GTEST_SKIP()
        << "neither ONNX node suite is here (libonnx-testdata, ../shared/conformance/onnx-node)";
  // Thousands of files, nearly all in raw_data: a writer that wrote none alike would fail.
  EXPECT_GT(identical, files * 9 / 10) << identical << " of " << files;
}

// ---------------------------------------------------------------- Sequence, Optional

TEST(ValueIo, SequenceAndOptionalProtoRoundTrips) {
  Value seq =
      Value::sequence(DType::kInt64, {make_tensor<int64_t>(DType::kInt64, {2}, {1, 2}),
                                      make_tensor<int64_t>(DType::kInt64, {0}, {}),
                                      make_tensor<int64_t>(DType::kInt64, {1, 3}, {4, 5, 6})});
  Value empty_seq = Value::sequence(DType::kFloat, {});
  Value str_seq =
      Value::sequence(DType::kString, {sample(DType::kString), sample(DType::kString, {2, 2})});
  Tensor f = make_float({2}, {1.5f, -2});
  struct Case {
    const char* what;
    Value v;
    ir::TypeInfo type;
  } cases[] = {
      {"sequence", seq, seq_type(DType::kInt64)},
      {"empty sequence", empty_seq, seq_type(DType::kFloat)},
      {"string sequence", str_seq, seq_type(DType::kString)},
      {"optional tensor", Value(f), opt_type(tensor_type(DType::kFloat))},
      {"empty optional tensor", Value::none(), opt_type(tensor_type(DType::kFloat))},
      {"optional sequence", seq, opt_type(seq_type(DType::kInt64))},
      {"empty optional sequence", Value::none(), opt_type(seq_type(DType::kInt64))},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    std::string b = write_value_proto(c.v, c.type, "v");
    EXPECT_TRUE(same_value(read_value_proto(b.data(), b.size(), c.type), c.v));
  }
}

TEST(ValueIo, OptionalProtoFieldsAsOnnxDataHas) {
  // OptionalProto: name 1, elem_type 2 (TENSOR 1, SEQUENCE 3, UNDEFINED 0 when empty),
  // tensor_value 3, sequence_value 5.
  auto fields = [](const std::string& b) {
    std::vector<std::pair<uint32_t, std::string>> out;
    protozero::pbf_reader r(b);
    while (r.next()) {
      if (r.tag() == 2)
        out.emplace_back(2, std::to_string(r.get_int32()));
      else
        out.emplace_back(r.tag(), r.get_view().to_string());
    }
    return out;
  };
  auto a = fields(write_value_proto(Value::none(), opt_type(tensor_type(DType::kFloat)), "o"));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], std::make_pair(1u, std::string("o")));
  EXPECT_EQ(a[1], std::make_pair(2u, std::string("0")));
  auto b = fields(
      write_value_proto(Value(make_float({1}, {3})), opt_type(tensor_type(DType::kFloat)), "o"));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].second, "1");
  EXPECT_EQ(b[2].first, 3u);
  auto c = fields(write_value_proto(Value::sequence(DType::kFloat, {}),
                                    opt_type(seq_type(DType::kFloat)), "o"));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[1].second, "3");
  EXPECT_EQ(c[2].first, 5u);
}

TEST(ValueIo, KindsThatDoNotFitTheTypeAreRefused) {
  Tensor f = make_float({1}, {1});
  EXPECT_ONYX_ERROR(write_value_proto(Value(f), seq_type(DType::kFloat), "s"),
                    ErrorCode::kInvalidArgument, "'s'", "a tensor", "seq(");
  EXPECT_ONYX_ERROR(write_value_proto(Value::none(), tensor_type(DType::kFloat), "t"),
                    ErrorCode::kInvalidArgument, "'t' is empty", "not optional");
  EXPECT_ONYX_ERROR(
      write_value_proto(Value::sequence(DType::kFloat, {f}), tensor_type(DType::kFloat), "t"),
      ErrorCode::kInvalidArgument, "a sequence");
  EXPECT_ONYX_ERROR(write_value_proto(Value(f), opt_type(seq_type(DType::kFloat)), "o"),
                    ErrorCode::kInvalidArgument, "a tensor");
}

TEST(ValueIo, MapsAndNestedKindsAreRefusedClearly) {
  ir::TypeInfo map;
  map.kind = Kind::kMap;
  map.key = DType::kInt64;
  map.inner = std::make_shared<ir::TypeInfo>(tensor_type(DType::kFloat));
  EXPECT_ONYX_ERROR(write_value_proto(Value(make_float({1}, {1})), map, "m"),
                    ErrorCode::kUnsupported, "no map");
  EXPECT_ONYX_ERROR(read_value_proto("", 0, map), ErrorCode::kUnsupported, "no map values");
  // A SequenceProto of maps (ZipMap's output in ai.onnx.ml), and of sequences.
  for (uint32_t field : {6u, 5u}) {
    std::string b;
    {
      protozero::pbf_writer w(b);
      w.add_int32(2, field == 6 ? 4 : 3);
      w.add_message(field, std::string("\x10\x07", 2));
    }
    EXPECT_ONYX_ERROR(read_value_proto(b.data(), b.size(), seq_type(DType::kFloat)),
                      ErrorCode::kUnsupported, field == 6 ? "map_values" : "sequence_values",
                      "sequences of tensors only");
  }
  std::string b;
  {
    protozero::pbf_writer w(b);
    w.add_int32(2, 4);
    w.add_message(6, std::string("\x10\x07", 2));
  }
  EXPECT_ONYX_ERROR(read_value_proto(b.data(), b.size(), opt_type(tensor_type(DType::kFloat))),
                    ErrorCode::kUnsupported, "map_value");
}

// ---------------------------------------------------------------- npy strings

Tensor read(const std::string& b) {
  return read_npy(b.data(), b.size(), "test.npy");
}

/// A .npy as numpy writes it (version 1.0, header padded to 64 bytes).
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

/// UTF-32LE bytes of code points.
std::string utf32(std::initializer_list<uint32_t> cps) {
  std::string s;
  for (uint32_t c : cps)
    for (int k = 0; k < 4; ++k) s += static_cast<char>((c >> (8 * k)) & 0xff);
  return s;
}

TEST(NpyStrings, WrittenAsNumpyUnicode) {
  // "é€😀" and "a": width 3, UTF-32LE, NUL-padded; the code points worked out by hand.
  Tensor t =
      make_tensor<std::string>(DType::kString, {2}, {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "a"});
  std::string b = write_npy(t);
  EXPECT_NE(b.find("'descr': '<U3'"), std::string::npos);
  EXPECT_NE(b.find("'shape': (2,)"), std::string::npos);
  EXPECT_EQ(b.substr(b.size() - 24), utf32({0xE9, 0x20AC, 0x1F600, 'a', 0, 0}));
  EXPECT_TRUE(same_tensor(read(b), t));
}

TEST(NpyStrings, ReadAsNumpyWritesThem) {
  // np.array([["ab", ""], ["ü", "xyz"]]) is '<U3'; np.array([b"hi", b"\xff"]) is '|S2'.
  Tensor u =
      read(npy_file("<U3", "(2, 2)", utf32({'a', 'b', 0, 0, 0, 0, 0xFC, 0, 0, 'x', 'y', 'z'})));
  ASSERT_EQ(u.dtype(), DType::kString);
  EXPECT_EQ(u.dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<std::string>(u), (std::vector<std::string>{"ab", "", "\xC3\xBC", "xyz"}));
  Tensor s = read(npy_file("|S2", "(2,)", std::string("hi\xFF\0", 4)));
  EXPECT_EQ(values_of<std::string>(s), (std::vector<std::string>{"hi", "\xFF"}));
  // A NUL inside a string stays; numpy strips only trailing ones.
  Tensor z = read(npy_file("<U3", "()", utf32({'a', 0, 'b'})));
  EXPECT_EQ(z.data<std::string>()[0], std::string("a\0b", 3));
  Tensor e = read(npy_file("<U1", "(0,)", ""));
  EXPECT_EQ(e.dims(), Dims{0});
}

TEST(NpyStrings, BytesThatAreNotUtf8SurviveAsSurrogateEscapes) {
  // Python: b.decode("utf-8", "surrogateescape") maps each such byte B to U+DC00 + B.
  struct Case {
    std::string bytes;
    std::vector<uint32_t> cps;
  } cases[] = {
      {"\xFF", {0xDCFF}},
      {"a\x80z", {'a', 0xDC80, 'z'}},                          // a lone continuation byte
      {"\xC0\xAF", {0xDCC0, 0xDCAF}},                          // an overlong '/'
      {"\xED\xA0\x80", {0xDCED, 0xDCA0, 0xDC80}},              // an encoded surrogate
      {"\xE2\x82", {0xDCE2, 0xDC82}},                          // a truncated sequence
      {"\xF4\x90\x80\x80", {0xDCF4, 0xDC90, 0xDC80, 0xDC80}},  // past U+10FFFF
      {"\xC3\xA9\xFF", {0xE9, 0xDCFF}},
  };
  for (const auto& c : cases) {
    Tensor t = make_tensor<std::string>(DType::kString, {}, {c.bytes});
    std::string b = write_npy(t);
    std::string want;
    for (uint32_t cp : c.cps) want += utf32({cp});
    EXPECT_EQ(b.substr(b.size() - want.size()), want);
    EXPECT_TRUE(same_tensor(read(b), t));
  }
}

TEST(NpyStrings, RoundTripOfAwkwardStrings) {
  Tensor t = sample(DType::kString, {3, 7});
  EXPECT_TRUE(same_tensor(read(write_npy(t)), t));
  Tensor empty = make_tensor<std::string>(DType::kString, {2}, {"", ""});
  std::string b = write_npy(empty);
  EXPECT_NE(b.find("'<U1'"), std::string::npos);  // numpy's narrowest unicode dtype
  EXPECT_TRUE(same_tensor(read(b), empty));
  EXPECT_TRUE(
      same_tensor(read(write_npy(Tensor(DType::kString, {0, 3}))), Tensor(DType::kString, {0, 3})));
}

TEST(NpyStrings, WhatCannotBeHeldIsRefused) {
  EXPECT_ONYX_ERROR(
      write_npy(make_tensor<std::string>(DType::kString, {2}, {"ok", std::string("x\0", 2)})),
      ErrorCode::kInvalidArgument, "string element 1", "NUL", ".pb");
  EXPECT_ONYX_ERROR(read(npy_file("<U1", "(1,)", utf32({0x110000}))), ErrorCode::kInvalidArgument,
                    "U+110000", "not a Unicode character");
  EXPECT_ONYX_ERROR(read(npy_file("<U1", "(1,)", utf32({0xD800}))), ErrorCode::kInvalidArgument,
                    "U+D800");
  EXPECT_ONYX_ERROR(read(npy_file(">U1", "(1,)", utf32({'a'}))), ErrorCode::kInvalidArgument,
                    "big-endian");
  EXPECT_ONYX_ERROR(read(npy_file("|O", "(1,)", "xxxxxxxx")), ErrorCode::kInvalidArgument, "'O'",
                    "astype(str)");
  EXPECT_ONYX_ERROR(read(npy_file("<U2", "(3,)", utf32({'a', 'b'}))), ErrorCode::kInvalidArgument,
                    "truncated");
  EXPECT_ONYX_ERROR(read(npy_file("<Ux", "(1,)", "")), ErrorCode::kInvalidArgument,
                    "malformed string dtype");
  // A huge width or count is refused before anything is allocated.
  EXPECT_ONYX_ERROR(read(npy_file("<U999999999999", "(1000000000,)", "")),
                    ErrorCode::kInvalidArgument);
  EXPECT_ONYX_ERROR(read(npy_file("<U0", "(1000000000000,)", "")), ErrorCode::kInvalidArgument,
                    "too large");
}

// ---------------------------------------------------------------- npy raw bits

TEST(NpyRawBits, EveryDtypeNumpyLacksIsWrittenAsItsBitsAndReadBack) {
  for (DType dt : all_dtypes()) {
    DType bits = format::npy_bits_dtype(dt);
    if (bits == DType::kUndefined) continue;
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor t = sample(dt, {2, 5});
    Tensor back = read(write_npy(t));
    EXPECT_EQ(back.dtype(), bits);
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0);
    EXPECT_TRUE(same_tensor(format::npy_as_declared(back, dt, "x"), t));
    EXPECT_NE(format::npy_bits_note(dt).find(std::string(dtype_name(bits))), std::string::npos);
  }
  EXPECT_EQ(format::npy_bits_dtype(DType::kBFloat16), DType::kUint16);
  EXPECT_EQ(format::npy_bits_dtype(DType::kInt4), DType::kInt8);
  EXPECT_EQ(format::npy_bits_dtype(DType::kFloat8E5M2), DType::kUint8);
  EXPECT_EQ(format::npy_bits_dtype(DType::kFloat), DType::kUndefined);
  EXPECT_EQ(format::npy_bits_note(DType::kString), "");
}

TEST(NpyRawBits, ValuesMustFitTheDeclaredType) {
  using format::npy_as_declared;
  // Any integer array whose values fit, for the 4-bit and 2-bit integer types.
  Tensor i64 = make_tensor<int64_t>(DType::kInt64, {3}, {-8, 0, 7});
  Tensor as4 = npy_as_declared(i64, DType::kInt4, "input 'q'");
  EXPECT_EQ(as4.dtype(), DType::kInt4);
  EXPECT_EQ(values_of<int8_t>(as4), (std::vector<int8_t>{-8, 0, 7}));
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<int64_t>(DType::kInt64, {2}, {0, 8}), DType::kInt4, "input 'q'"),
      ErrorCode::kInvalidArgument, "input 'q'", "element 1 is 8", "int4 [-8, 7]");
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<int8_t>(DType::kInt8, {1}, {-1}), DType::kUint2, "u"),
      ErrorCode::kInvalidArgument, "element 0 is -1", "uint2 [0, 3]");
  EXPECT_ONYX_ERROR(npy_as_declared(make_tensor<int8_t>(DType::kInt8, {1}, {2}), DType::kInt2, "i"),
                    ErrorCode::kInvalidArgument, "int2 [-2, 1]");
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<uint64_t>(DType::kUint64, {1}, {UINT64_MAX}), DType::kUint4, "u"),
      ErrorCode::kInvalidArgument, "18446744073709551615");
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<uint8_t>(DType::kUint8, {1}, {16}), DType::kFloat4E2M1, "f"),
      ErrorCode::kInvalidArgument, "float4e2m1 [0, 15]");
  // Bits of the wrong width, or floats where bits are wanted.
  EXPECT_ONYX_ERROR(npy_as_declared(make_float({1}, {1}), DType::kFloat8E4M3FN, "input 'x'"),
                    ErrorCode::kInvalidArgument, "input 'x' is float", "float8e4m3fn",
                    "raw bits as uint8");
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<uint8_t>(DType::kUint8, {1}, {1}), DType::kBFloat16, "b"),
      ErrorCode::kInvalidArgument, "uint16");
  EXPECT_ONYX_ERROR(
      npy_as_declared(make_tensor<int8_t>(DType::kInt8, {1}, {1}), DType::kFloat4E2M1, "f"),
      ErrorCode::kInvalidArgument, "raw bits as uint8");
  // Dtypes numpy has pass unchanged, whatever was declared: the session checks them.
  Tensor f = make_float({1}, {2});
  EXPECT_TRUE(npy_as_declared(f, DType::kFloat, "x").shares_buffer_with(f));
  EXPECT_TRUE(npy_as_declared(f, DType::kInt64, "x").shares_buffer_with(f));
}

// ---------------------------------------------------------------- file forms

TEST(ValueFiles, EveryKindInBothFormatsReadsBack) {
  TempDir dir;
  Value seq = Value::sequence(DType::kFloat8E4M3FN, {sample(DType::kFloat8E4M3FN, {2}),
                                                     sample(DType::kFloat8E4M3FN, {3, 1})});
  struct Case {
    const char* name;
    Value v;
    ir::TypeInfo type;
    const char* npy_path;  // what the numpy form writes, relative to the folder
  } cases[] = {
      {"t", Value(sample(DType::kFloat, {2, 2})), tensor_type(DType::kFloat), "t.npy"},
      {"s", Value(sample(DType::kString, {7})), tensor_type(DType::kString), "s.npy"},
      {"bf", Value(sample(DType::kBFloat16, {3})), tensor_type(DType::kBFloat16), "bf.npy"},
      {"i4", Value(sample(DType::kInt4, {5})), tensor_type(DType::kInt4), "i4.npy"},
      {"seq", seq, seq_type(DType::kFloat8E4M3FN), "seq"},
      {"eseq", Value::sequence(DType::kInt32, {}), seq_type(DType::kInt32), "eseq"},
      {"opt", Value(sample(DType::kUint2, {4})), opt_type(tensor_type(DType::kUint2)), "opt.npy"},
      {"none", Value::none(), opt_type(tensor_type(DType::kFloat)), "none.none"},
      {"optseq", seq, opt_type(seq_type(DType::kFloat8E4M3FN)), "optseq"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto w = write_value_files(dir.path().string(), c.name, c.v, c.type, c.name, ValueFormat::kNpy);
    EXPECT_EQ(w.path, dir.file(c.npy_path));
    EXPECT_TRUE(same_value(read_value_path(w.path, c.type, c.name), c.v));
    auto p = write_value_files(dir.path().string(), c.name, c.v, c.type, c.name, ValueFormat::kPb);
    EXPECT_EQ(p.path, dir.file(std::string(c.name) + ".pb"));
    EXPECT_FALSE(fs::exists(w.path)) << "the numpy form is removed when the pb form is written";
    EXPECT_TRUE(same_value(read_value_path(p.path, c.type, c.name), c.v));
  }
  // A sequence folder holds 0.npy, 1.npy ... and the .npy files are plain numpy arrays.
  auto w = write_value_files(dir.path().string(), "seq", seq, seq_type(DType::kFloat8E4M3FN), "seq",
                             ValueFormat::kNpy);
  ASSERT_EQ(w.items.size(), 2u);
  EXPECT_EQ(w.items[1], dir.file("seq/1.npy"));
  EXPECT_EQ(format::read_npy_file(w.items[1]).dtype(), DType::kUint8);
}

TEST(ValueFiles, AnEarlierFormOfTheSameValueIsReplaced) {
  TempDir dir;
  std::string d = dir.path().string();
  auto type = opt_type(seq_type(DType::kFloat));
  Value seq = Value::sequence(DType::kFloat,
                              {make_float({1}, {1}), make_float({1}, {2}), make_float({1}, {3})});
  write_value_files(d, "y", seq, type, "y", ValueFormat::kNpy);
  write_file(dir.file("y/notes.txt"), "mine");
  write_value_files(d, "y", Value::sequence(DType::kFloat, {make_float({1}, {9})}), type, "y",
                    ValueFormat::kNpy);
  EXPECT_FALSE(fs::exists(dir.file("y/1.npy")));  // no stale item 1 and 2 from the longer sequence
  EXPECT_FALSE(fs::exists(dir.file("y/2.npy")));
  write_value_files(d, "y", Value::none(), type, "y", ValueFormat::kNpy);
  EXPECT_TRUE(fs::exists(dir.file("y.none")));
  EXPECT_FALSE(fs::exists(dir.file("y/0.npy")));
  EXPECT_TRUE(fs::exists(dir.file("y/notes.txt"))) << "files onyx did not write stay";
  write_value_files(d, "z", Value::none(), opt_type(tensor_type(DType::kFloat)), "z",
                    ValueFormat::kNpy);
  write_value_files(d, "z", Value(make_float({1}, {1})), opt_type(tensor_type(DType::kFloat)), "z",
                    ValueFormat::kNpy);
  EXPECT_FALSE(fs::exists(dir.file("z.none")));
  EXPECT_TRUE(fs::exists(dir.file("z.npy")));
}

TEST(ValueFiles, FormsThatDoNotFitTheTypeAreRefused) {
  TempDir dir;
  std::string d = dir.path().string();
  write_value_files(d, "t", Value(make_float({1}, {1})), tensor_type(DType::kFloat), "t",
                    ValueFormat::kNpy);
  write_value_files(d, "s", Value::sequence(DType::kFloat, {make_float({1}, {1})}),
                    seq_type(DType::kFloat), "s", ValueFormat::kNpy);
  write_value_files(d, "n", Value::none(), opt_type(tensor_type(DType::kFloat)), "n",
                    ValueFormat::kNpy);
  EXPECT_ONYX_ERROR(read_value_path(dir.file("s"), tensor_type(DType::kFloat), "input 'x'"),
                    ErrorCode::kInvalidArgument, "input 'x'", "is a folder", "float");
  EXPECT_ONYX_ERROR(read_value_path(dir.file("t.npy"), seq_type(DType::kFloat), "input 'x'"),
                    ErrorCode::kInvalidArgument, "give a folder of 0.npy");
  EXPECT_ONYX_ERROR(read_value_path(dir.file("n.none"), tensor_type(DType::kFloat), "input 'x'"),
                    ErrorCode::kInvalidArgument, "empty optional", "not optional");
  EXPECT_ONYX_ERROR(
      read_value_path(dir.file("missing.none"), opt_type(tensor_type(DType::kFloat)), "input 'x'"),
      ErrorCode::kIo, "missing.none");
  write_file(dir.file("t.txt"), "1");
  EXPECT_ONYX_ERROR(read_value_path(dir.file("t.txt"), tensor_type(DType::kFloat), "input 'x'"),
                    ErrorCode::kInvalidArgument, ".npy or .pb", ".none");
  EXPECT_ONYX_ERROR(
      write_value_files(d, "q", Value::none(), tensor_type(DType::kFloat), "q", ValueFormat::kNpy),
      ErrorCode::kInvalidArgument, "not optional");
  // A string numpy cannot hold: nothing of an earlier form is removed either.
  Tensor nul = make_tensor<std::string>(DType::kString, {1}, {std::string("a\0", 2)});
  EXPECT_ONYX_ERROR(
      write_value_files(d, "t", Value(nul), tensor_type(DType::kString), "t", ValueFormat::kNpy),
      ErrorCode::kInvalidArgument, "NUL");
  EXPECT_TRUE(fs::exists(dir.file("t.npy")));
  EXPECT_NO_THROW(
      write_value_files(d, "t", Value(nul), tensor_type(DType::kString), "t", ValueFormat::kPb));
}

TEST(ValueFiles, SequenceFoldersAreCheckedStrictly) {
  TempDir dir;
  auto type = seq_type(DType::kFloat);
  auto folder = [&](const std::string& name, std::vector<std::string> files) {
    fs::create_directories(dir.path() / name);
    for (const auto& f : files) {
      Tensor t = make_float({1}, {static_cast<float>(f.size())});
      write_file((dir.path() / name / f).string(),
                 fs::path(f).extension() == ".pb" ? write_tensor_proto(t) : write_npy(t));
    }
    return (dir.path() / name).string();
  };
  Value ok = read_value_path(folder("ok", {"0.npy", "1.pb", "2.npy", ".hidden"}), type, "s");
  ASSERT_EQ(ok.seq().size(), 3u);  // a .pb item is a TensorProto; hidden files are ignored
  EXPECT_EQ(values_of<float>(ok.seq()[1]), std::vector<float>{4});
  EXPECT_ONYX_ERROR(read_value_path(folder("gap", {"0.npy", "2.npy"}), type, "input 's'"),
                    ErrorCode::kInvalidArgument, "no item 1", "0 to 1");
  EXPECT_ONYX_ERROR(read_value_path(folder("stray", {"0.npy", "readme.txt"}), type, "input 's'"),
                    ErrorCode::kInvalidArgument, "readme.txt", "0.npy, 1.npy");
  EXPECT_ONYX_ERROR(read_value_path(folder("lead", {"0.npy", "01.npy"}), type, "input 's'"),
                    ErrorCode::kInvalidArgument, "01.npy");
  EXPECT_ONYX_ERROR(read_value_path(folder("twice", {"0.npy", "0.pb"}), type, "input 's'"),
                    ErrorCode::kInvalidArgument, "item 0 twice");
  EXPECT_EQ(read_value_path(folder("empty", {}), type, "s").seq().size(), 0u);
  EXPECT_EQ(read_value_path(folder("empty", {}), type, "s").seq_dtype(), DType::kFloat);
}

TEST(ValueFiles, RefusesToWriteIntoAFifo) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("t.npy").c_str(), 0600), 0);
  EXPECT_ONYX_ERROR(write_value_files(dir.path().string(), "t", Value(make_float({1}, {1})),
                                      tensor_type(DType::kFloat), "t", ValueFormat::kNpy),
                    ErrorCode::kIo, "t.npy", "not a regular file");
}

}  // namespace
}  // namespace onyx::test
