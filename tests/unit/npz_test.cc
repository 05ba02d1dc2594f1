// format:: .npz reader: archives written by numpy (np.savez, np.savez_compressed), ZIP64
// records, and clear errors for corrupt or unsupported archives.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "format/npy.h"
#include "format/npz.h"
#include "onyx/error.h"
#include "tools/onyx/zlib_inflate.h"

namespace onyx::format {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(ONYX_SOURCE_DIR "/tests/unit/data/") + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name << " (regenerate with tests/unit/data/make_npz.py)";
  return ss.str();
}

std::vector<NpzArray> read(const std::string& b, const InflateFn& inflate = cli::zlib_inflate) {
  return read_npz(b.data(), b.size(), "test.npz", inflate);
}

std::string error_of(const std::string& b, const InflateFn& inflate = cli::zlib_inflate) {
  try {
    read(b, inflate);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_x_and_ids(const std::vector<NpzArray>& a) {
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0].name, "x");
  EXPECT_EQ(a[0].tensor.dtype(), DType::kFloat);
  EXPECT_EQ(a[0].tensor.dims(), (Dims{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a[0].tensor.data<float>()[i], i / 4.0f);
  EXPECT_EQ(a[1].name, "ids");
  EXPECT_EQ(a[1].tensor.dtype(), DType::kInt64);
  EXPECT_EQ(a[1].tensor.dims(), (Dims{4}));
  const int64_t want[] = {3, -1, 7, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[1].tensor.data<int64_t>()[i], want[i]);
}

TEST(Npz, NumpySavez) {
  auto a = read(fixture("savez.npz"), nullptr);  // stored entries need no inflater
  ASSERT_EQ(a.size(), 2u);
  expect_x_and_ids(a);
}

TEST(Npz, NumpySavezCompressed) {
  auto a = read(fixture("savez_compressed.npz"));
  ASSERT_EQ(a.size(), 3u);
  expect_x_and_ids(a);
  EXPECT_EQ(a[2].name, "big");
  EXPECT_EQ(a[2].tensor.dims(), (Dims{100, 10}));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a[2].tensor.data<double>()[i], i * 0.5);
}

TEST(Npz, PositionalAndBool) {
  auto a = read(fixture("positional.npz"));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].name, "arr_0");
  EXPECT_EQ(a[0].tensor.dtype(), DType::kBool);
  EXPECT_EQ(a[0].tensor.data<uint8_t>()[1], 0);
  EXPECT_EQ(a[0].tensor.data<uint8_t>()[2], 1);
}

TEST(Npz, DeflatedWithoutInflaterIsUnsupported) {
  std::string e = error_of(fixture("savez_compressed.npz"), nullptr);
  EXPECT_NE(e.find("deflated"), std::string::npos) << e;
  EXPECT_NE(e.find("x.npy"), std::string::npos) << e;
}

TEST(Npz, WriteRoundTrip) {
  Tensor t(DType::kFloat16, {3});
  Tensor s(DType::kUint8, {2, 2});
  for (int i = 0; i < 4; ++i) s.data<uint8_t>()[i] = static_cast<uint8_t>(10 * i);
  std::string b = write_npz({{"half", t}, {"bytes", s}});
  auto a = read(b, nullptr);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, "half");
  EXPECT_EQ(a[0].tensor.dtype(), DType::kFloat16);
  EXPECT_EQ(a[1].tensor.dims(), (Dims{2, 2}));
  EXPECT_EQ(a[1].tensor.data<uint8_t>()[3], 30);
  EXPECT_TRUE(read(write_npz({}), nullptr).empty());  // an empty archive is just the end record
}

TEST(Npz, Crc32KnownValue) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);  // the standard check value
  EXPECT_EQ(crc32("", 0), 0u);
}

void put16(std::string& s, uint32_t v) { s += static_cast<char>(v & 0xff), s += static_cast<char>((v >> 8) & 0xff); }
void put32(std::string& s, uint32_t v) { put16(s, v & 0xffff), put16(s, v >> 16); }
void put64(std::string& s, uint64_t v) { put32(s, static_cast<uint32_t>(v)), put32(s, static_cast<uint32_t>(v >> 32)); }

/// A one-entry archive in the ZIP64 form: sizes and offset 0xFFFFFFFF in the central
/// directory with the real values in a ZIP64 extra field, and ZIP64 end records.
std::string zip64_archive(const std::string& name, const std::string& data) {
  std::string out;
  uint32_t crc = crc32(data.data(), data.size());
  put32(out, 0x04034b50), put16(out, 45), put16(out, 0), put16(out, 0), put16(out, 0), put16(out, 0x21);
  put32(out, crc), put32(out, 0xFFFFFFFF), put32(out, 0xFFFFFFFF), put16(out, static_cast<uint32_t>(name.size())), put16(out, 20);
  out += name;
  put16(out, 1), put16(out, 16), put64(out, data.size()), put64(out, data.size());
  out += data;
  uint64_t cd_off = out.size();
  std::string cd;
  put32(cd, 0x02014b50), put16(cd, 45), put16(cd, 45), put16(cd, 0), put16(cd, 0), put16(cd, 0), put16(cd, 0x21);
  put32(cd, crc), put32(cd, 0xFFFFFFFF), put32(cd, 0xFFFFFFFF), put16(cd, static_cast<uint32_t>(name.size())), put16(cd, 28);
  put16(cd, 0), put16(cd, 0), put16(cd, 0), put32(cd, 0), put32(cd, 0xFFFFFFFF);
  cd += name;
  put16(cd, 1), put16(cd, 24), put64(cd, data.size()), put64(cd, data.size()), put64(cd, 0);
  out += cd;
  uint64_t z64 = out.size();
  put32(out, 0x06064b50), put64(out, 44), put16(out, 45), put16(out, 45), put32(out, 0), put32(out, 0);
  put64(out, 1), put64(out, 1), put64(out, cd.size()), put64(out, cd_off);
  put32(out, 0x07064b50), put32(out, 0), put64(out, z64), put32(out, 1);
  put32(out, 0x06054b50), put16(out, 0), put16(out, 0), put16(out, 0xFFFF), put16(out, 0xFFFF);
  put32(out, 0xFFFFFFFF), put32(out, 0xFFFFFFFF), put16(out, 0);
  return out;
}

TEST(Npz, Zip64Records) {
  Tensor t(DType::kInt32, {2});
  t.data<int32_t>()[0] = 5, t.data<int32_t>()[1] = -6;
  auto a = read(zip64_archive("v.npy", write_npy(t)), nullptr);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].name, "v");
  EXPECT_EQ(a[0].tensor.data<int32_t>()[1], -6);
}

TEST(Npz, CorruptArchivesFailClearly) {
  std::string good = fixture("savez.npz");
  EXPECT_NE(error_of("hello").find("not a .npz"), std::string::npos);
  EXPECT_NE(error_of(std::string(100, '\0')).find("not a .npz"), std::string::npos);
  // Truncated: the end record is gone.
  EXPECT_NE(error_of(good.substr(0, good.size() - 10)).find("end-of-central-directory"), std::string::npos);
  // Every prefix and a flipped byte anywhere must fail with an onyx::Error or parse.
  for (size_t n = 0; n < good.size(); n += 7) EXPECT_THROW(read(good.substr(0, n)), Error) << n;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      read(bad);
    } catch (const Error&) {
    }
  }
  // A flipped byte in the array data fails the CRC check.
  std::string bad = good;
  size_t data = bad.find("NUMPY") + 120;
  bad[data] ^= 1;
  EXPECT_NE(error_of(bad).find("CRC-32"), std::string::npos) << error_of(bad);
  // Corrupt deflate data.
  std::string comp = fixture("savez_compressed.npz");
  size_t p = comp.find("x.npy") + 5 + 10;
  for (size_t i = 0; i < 20; ++i) comp[p + i] = static_cast<char>(0xff);
  EXPECT_THROW(read(comp), Error);
}

TEST(Npz, NonNpyEntryAndDuplicates) {
  std::string two = write_npz({{"a", Tensor(DType::kFloat, {1})}, {"a", Tensor(DType::kFloat, {1})}});
  EXPECT_NE(error_of(two).find("twice"), std::string::npos) << error_of(two);
  std::string txt = zip64_archive("notes.txt", "hello");
  EXPECT_NE(error_of(txt).find("not a .npy"), std::string::npos) << error_of(txt);
}

TEST(Npz, FileErrorsNameThePath) {
  try {
    read_npz_file("/nonexistent/sample.npz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/sample.npz"), std::string::npos);
  }
}

}  // namespace
}  // namespace onyx::format
