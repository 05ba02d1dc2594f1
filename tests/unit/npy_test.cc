// format:: .npy reader and writer: round trips for every numpy dtype, headers as numpy
// writes them (versions 1.0, 2.0, 3.0), and clear errors for bad files.
#include <gtest/gtest.h>

#include <cstring>

#include "format/npy.h"
#include "model_builder.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using format::read_npy;
using format::write_npy;

Tensor read(const std::string& b) { return read_npy(b.data(), b.size(), "test.npy"); }

/// A header dict exactly as numpy formats it, padded so data starts at a multiple of 64.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  size_t total = prefix + h.size() + 1;
  h += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((h.size() >> 16) & 0xff);
    out += static_cast<char>((h.size() >> 24) & 0xff);
  }
  return out + h + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

struct DtypeCase {
  DType dtype;
  const char* descr;
};
const DtypeCase kNumpyDtypes[] = {
    {DType::kFloat, "<f4"},     {DType::kDouble, "<f8"},      {DType::kFloat16, "<f2"},
    {DType::kInt8, "|i1"},      {DType::kInt16, "<i2"},       {DType::kInt32, "<i4"},
    {DType::kInt64, "<i8"},     {DType::kUint8, "|u1"},       {DType::kUint16, "<u2"},
    {DType::kUint32, "<u4"},    {DType::kUint64, "<u8"},      {DType::kBool, "|b1"},
    {DType::kComplex64, "<c8"}, {DType::kComplex128, "<c16"},
};

/// A tensor of `dt` with a recognizable byte pattern (bools hold 0/1).
Tensor patterned(DType dt, Dims dims) {
  Tensor t(dt, std::move(dims));
  auto* p = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i)
    p[i] = dt == DType::kBool ? static_cast<unsigned char>(i % 3 == 0) : static_cast<unsigned char>(i * 31 + 7);
  return t;
}

TEST(Npy, RoundTripEveryNumpyDtype) {
  for (const DtypeCase& c : kNumpyDtypes) {
    for (const Dims& dims : {Dims{}, Dims{5}, Dims{2, 3}, Dims{0, 4}, Dims{2, 1, 3, 1}}) {
      SCOPED_TRACE(std::string(dtype_name(c.dtype)) + dims_str(dims));
      Tensor t = patterned(c.dtype, dims);
      std::string bytes = write_npy(t);
      // Header as numpy writes it: version 1.0, the dtype's descr, data 64-aligned.
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
      EXPECT_EQ((10 + hlen) % 64, 0u);
      std::string header = bytes.substr(10, hlen);
      EXPECT_TRUE(contains(header, std::string("'descr': '") + c.descr + "'")) << header;
      EXPECT_TRUE(contains(header, "'fortran_order': False")) << header;
      EXPECT_EQ(header.back(), '\n');
      EXPECT_EQ(bytes.size(), 10 + hlen + t.nbytes());

      Tensor back = read(bytes);
      EXPECT_EQ(back.dtype(), c.dtype);
      EXPECT_EQ(back.dims(), dims);
      ASSERT_EQ(back.nbytes(), t.nbytes());
      if (t.nbytes()) {
        EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0);
      }
    }
  }
}

TEST(Npy, ShapeSyntax) {
  std::string four(16, '\0');
  EXPECT_EQ(read(write_npy(Tensor(DType::kFloat, {}))).dims(), Dims{});
  EXPECT_EQ(read(npy_file(1, dict("<f4", "(4,)"), four)).dims(), Dims{4});
  EXPECT_EQ(read(npy_file(1, dict("<f4", "(2, 2)"), four)).dims(), (Dims{2, 2}));
  EXPECT_EQ(read(npy_file(1, dict("<f4", "(1,4)"), four)).dims(), (Dims{1, 4}));
  EXPECT_EQ(read(npy_file(1, dict("<f4", "()"), four.substr(0, 4))).dims(), Dims{});
  // Keys in another order (hand-written files).
  EXPECT_EQ(read(npy_file(1, "{'shape': (2, 2), 'fortran_order': False, 'descr': '<f4'}", four)).dims(),
            (Dims{2, 2}));
  // A 1-D write uses the "(n,)" tuple syntax.
  std::string one_d = write_npy(Tensor(DType::kInt8, {3}));
  EXPECT_TRUE(contains(one_d, "'shape': (3,)")) << one_d;
  std::string two_d = write_npy(Tensor(DType::kInt8, {3, 4}));
  EXPECT_TRUE(contains(two_d, "'shape': (3, 4)")) << two_d;
}

TEST(Npy, ReadsVersion1And2And3Headers) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  std::string data = raw_bytes(v);
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    Tensor t = read(npy_file(major, dict("<f4", "(2, 3)"), data));
    EXPECT_EQ(t.dtype(), DType::kFloat);
    EXPECT_EQ(t.dims(), (Dims{2, 3}));
    EXPECT_EQ(values_of<float>(t), v);
  }
  // A version 2.0 header longer than 65535 bytes (numpy uses 2.0 for those).
  std::string big = dict("<f4", "(2, 3)") + std::string(70000, ' ');
  Tensor t = read(npy_file(2, big, data));
  EXPECT_EQ(values_of<float>(t), v);
}

TEST(Npy, NumpyDescrSpellings) {
  std::string one(1, '\x01');
  EXPECT_EQ(read(npy_file(1, dict("|b1", "(1,)"), one)).dtype(), DType::kBool);
  EXPECT_EQ(read(npy_file(1, dict("?", "(1,)"), one)).dtype(), DType::kBool);
  EXPECT_EQ(read(npy_file(1, dict("u1", "(1,)"), one)).dtype(), DType::kUint8);
  EXPECT_EQ(read(npy_file(1, dict("=i1", "(1,)"), one)).dtype(), DType::kInt8);
  // Single-byte types have no byte order, so '>' is harmless for them.
  EXPECT_EQ(read(npy_file(1, dict(">u1", "(1,)"), one)).dtype(), DType::kUint8);
  // Bools are normalized to 0/1.
  EXPECT_EQ(read(npy_file(1, dict("|b1", "(3,)"), std::string("\x00\x02\x01", 3))).data<uint8_t>()[1], 1);
}

TEST(Npy, FileRoundTrip) {
  TempDir dir;
  Tensor t = make_float({2, 2}, {1.5f, -2, 0, 4});
  format::write_npy_file(dir.file("t.npy"), t);
  Tensor back = format::read_npy_file(dir.file("t.npy"));
  EXPECT_EQ(values_of<float>(back), values_of<float>(t));
  EXPECT_ONYX_ERROR(format::read_npy_file(dir.file("missing.npy")), ErrorCode::kIo, "missing.npy");
  EXPECT_ONYX_ERROR(format::write_npy_file(dir.file("no/such/dir/t.npy"), t), ErrorCode::kIo,
                    "cannot write");
}

TEST(Npy, DtypesWithoutNumpyEquivalentAreWrittenAsRawBits) {
  // Strings are numpy unicode and the rest their bits (tests/unit/value_io_test.cc has
  // the details); bfloat16 as uint16.
  Tensor b = make_tensor<uint16_t>(DType::kBFloat16, {2}, {0x3FC0, 0xC040});
  Tensor back = read(write_npy(b));
  EXPECT_EQ(back.dtype(), DType::kUint16);
  EXPECT_EQ(values_of<uint16_t>(back), (std::vector<uint16_t>{0x3FC0, 0xC040}));
  EXPECT_EQ(read(write_npy(Tensor(DType::kFloat8E5M2, {2}))).dtype(), DType::kUint8);
  EXPECT_EQ(read(write_npy(Tensor(DType::kInt4, {2}))).dtype(), DType::kInt8);
  EXPECT_EQ(read(write_npy(Tensor(DType::kString, {2}))).dtype(), DType::kString);
}

TEST(Npy, TruncatedData) {
  std::string good = write_npy(make_float({2, 3}, {1, 2, 3, 4, 5, 6}));
  std::string cut = good.substr(0, good.size() - 1);
  EXPECT_ONYX_ERROR(read(cut), ErrorCode::kInvalidArgument, "test.npy", "23 bytes", "[2, 3]", "float",
                    "needs 24", "truncated");
  // Every prefix either loads or throws onyx::Error.
  for (size_t n = 0; n < good.size(); ++n) {
    Caught c = catch_error([&] { read_npy(good.data(), n, "p"); });
    EXPECT_TRUE(c.is_error()) << "prefix " << n << ": " << c.message;
  }
}

TEST(Npy, TruncatedHeader) {
  std::string good = write_npy(make_float({2}, {1, 2}));
  EXPECT_ONYX_ERROR(read(good.substr(0, 40)), ErrorCode::kInvalidArgument, "header runs past the end");
  std::string v2 = npy_file(2, dict("<f4", "(1,)"), std::string(4, '\0'));
  EXPECT_ONYX_ERROR(read(v2.substr(0, 11)), ErrorCode::kInvalidArgument, "test.npy");
}

TEST(Npy, BadMagic) {
  std::string good = write_npy(make_float({1}, {1}));
  std::string bad = good;
  bad[1] = 'X';
  EXPECT_ONYX_ERROR(read(bad), ErrorCode::kInvalidArgument, "test.npy", "not a .npy file", "bad magic");
  EXPECT_ONYX_ERROR(read(""), ErrorCode::kInvalidArgument, "bad magic");
  EXPECT_ONYX_ERROR(read("PK\x03\x04 this is a zip"), ErrorCode::kInvalidArgument, "bad magic");
  bad = good;
  bad[6] = 9;
  EXPECT_ONYX_ERROR(read(bad), ErrorCode::kInvalidArgument, "unsupported npy format version 9");
}

TEST(Npy, FortranOrderRefused) {
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f4", "(2, 2)", true), std::string(16, '\0'))),
                    ErrorCode::kInvalidArgument, "test.npy", "Fortran", "np.ascontiguousarray");
}

TEST(Npy, UnsupportedDtypes) {
  EXPECT_ONYX_ERROR(read(npy_file(1, dict(">f4", "(1,)"), std::string(4, '\0'))),
                    ErrorCode::kInvalidArgument, "big-endian", "'>f4'");
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("|O", "(1,)"), std::string(8, '\0'))),
                    ErrorCode::kInvalidArgument, "dtype 'O'", "pickled");
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<M8[ns]", "(1,)"), std::string(8, '\0'))),
                    ErrorCode::kInvalidArgument, "unsupported numpy dtype");
}

TEST(Npy, MalformedHeaders) {
  std::string d4(4, '\0');
  EXPECT_ONYX_ERROR(read(npy_file(1, "{'fortran_order': False, 'shape': (1,), }", d4)),
                    ErrorCode::kInvalidArgument, "lacks 'descr'");
  EXPECT_ONYX_ERROR(read(npy_file(1, "{'descr': '<f4', 'fortran_order': False, }", d4)),
                    ErrorCode::kInvalidArgument, "lacks 'shape'");
  EXPECT_ONYX_ERROR(read(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, }", d4)),
                    ErrorCode::kInvalidArgument, "malformed shape");
  EXPECT_ONYX_ERROR(read(npy_file(1, "{'descr': <f4, 'fortran_order': False, 'shape': (1,), }", d4)),
                    ErrorCode::kInvalidArgument, "malformed descr");
  EXPECT_ONYX_ERROR(read(npy_file(1, "{'descr'", d4)), ErrorCode::kInvalidArgument, "test.npy");
}

TEST(Npy, NegativeDimsAreRefused) {
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f4", "(-1, 4)"), std::string(16, '\0'))),
                    ErrorCode::kInvalidArgument, "test.npy", "shape");
}

TEST(Npy, HugeShapesFailWithoutAllocating) {
  // The data size is checked before the tensor is allocated.
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f4", "(100000000000,)"), std::string(4, '\0'))),
                    ErrorCode::kInvalidArgument, "test.npy", "[100000000000]", "truncated");
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f8", "(1048576, 1048576, 1024)"), "")),
                    ErrorCode::kInvalidArgument, "test.npy");
  // Products past 64 bits.
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f4", "(4294967296, 4294967296)"), "")),
                    ErrorCode::kInvalidArgument, "test.npy");
  EXPECT_ONYX_ERROR(read(npy_file(1, dict("<f4", "(99999999999999999999999,)"), "")),
                    ErrorCode::kInvalidArgument, "test.npy", "too large");
}

TEST(Npy, TrailingBytesAreIgnored) {
  // numpy's own reader ignores bytes after the array (np.save appends nothing, but
  // concatenated files exist).
  std::string b = write_npy(make_float({2}, {1, 2})) + "junk";
  EXPECT_EQ(values_of<float>(read(b)), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace onyx::test
