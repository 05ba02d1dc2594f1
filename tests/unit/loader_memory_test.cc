// format::load_model_from_bytes with in-memory external data (what onyx-web uses: the
// browser has no files): the same tensors as the file-based load of the same model and
// weights file, and the file path's refusals (missing location, '..', absolute path, a
// range past the end) as clear onyx::Errors naming the tensor and the location.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "format/loader.h"
#include "model_builder.h"
#include "runtime/session_internal.h"
#include "test_util.h"

namespace onyx::test {
namespace {

using format::ExternalBlob;
using format::ExternalBlobs;

/// An external-data tensor named `name`: float[n] at `location`, from `offset`.
TensorSpec external_floats(const std::string& name, int64_t n, const std::string& location,
                           int64_t offset) {
  TensorSpec w;
  w.name = name;
  w.dims = {n};
  w.data_location = 1;
  w.external_data = {{"location", location},
                     {"offset", std::to_string(offset)},
                     {"length", std::to_string(n * 4)}};
  return w;
}

/// y = (x + a) * b with a = float[4] at byte 0 and b = float[4] at byte 16 of `location`
/// (b's location may differ, to test a second blob).
std::string two_weight_model(const std::string& location, const std::string& b_location = "",
                             int64_t b_offset = 16) {
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {4})};
  g.outputs = {tensor_info("y", kFloat, {4})};
  g.initializers = {external_floats("a", 4, location, 0),
                    external_floats("b", 4, b_location.empty() ? location : b_location, b_offset)};
  g.nodes = {NodeSpec("Add", {"x", "a"}, {"s"}), NodeSpec("Mul", {"s", "b"}, {"y"})};
  return ModelSpec(g).serialize();
}

/// A blob that owns a copy of `bytes` (as onyx-web's heap buffer does).
ExternalBlob blob_of(const std::string& bytes) {
  auto owned = std::make_shared<std::string>(bytes);
  return {std::shared_ptr<const void>(owned, owned->data()), owned->data(), owned->size()};
}

const std::string kWeights = raw_bytes(std::vector<float>{1, 2, 3, 4}) +
                             raw_bytes(std::vector<float>{10, 20, 30, 40});

TEST(LoaderMemory, SameTensorsAsTheFileBasedLoad) {
  TempDir dir;
  std::string model = two_weight_model("model.onnx.data");
  write_file(dir.file("model.onnx"), model);
  write_file(dir.file("model.onnx.data"), kWeights);
  auto from_file = format::load_model(dir.file("model.onnx"));
  auto from_memory =
      format::load_model_from_bytes(model.data(), model.size(), ExternalBlobs{{"model.onnx.data", blob_of(kWeights)}});
  for (const char* name : {"a", "b"}) {
    SCOPED_TRACE(name);
    const Tensor* f = from_file->graph->initializer(name);
    const Tensor* m = from_memory->graph->initializer(name);
    ASSERT_NE(f, nullptr);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->dims(), f->dims());
    EXPECT_EQ(values_of<float>(*m), values_of<float>(*f));
  }
  // And the values written (not only equal to each other).
  EXPECT_EQ(values_of<float>(*from_memory->graph->initializer("b")), (std::vector<float>{10, 20, 30, 40}));
  ASSERT_EQ(from_memory->external_files.size(), 1u);
  EXPECT_EQ(from_memory->external_files[0].location, "model.onnx.data");
  EXPECT_EQ(from_memory->external_files[0].bytes_used, 32u);

  Tensor x = make_float({4}, {1, 1, 1, 1});
  auto yf = session_from_model(from_file)->run({{"x", x}});
  auto ym = session_from_model(from_memory)->run({{"x", x}});
  EXPECT_EQ(values_of<float>(ym[0].tensor()), values_of<float>(yf[0].tensor()));
  EXPECT_EQ(values_of<float>(ym[0].tensor()), (std::vector<float>{20, 60, 120, 200}));
}

TEST(LoaderMemory, TheModelKeepsTheBlobAlive) {
  std::string model = two_weight_model("w.bin");
  std::shared_ptr<ir::Model> m;
  {
    ExternalBlobs blobs{{"w.bin", blob_of(kWeights)}};
    m = format::load_model_from_bytes(model.data(), model.size(), blobs);
  }  // the caller's handle on the blob is gone
  EXPECT_EQ(values_of<float>(*m->graph->initializer("a")), (std::vector<float>{1, 2, 3, 4}));
  auto y = session_from_model(m)->run({{"x", make_float({4}, {0, 0, 0, 0})}});
  EXPECT_EQ(values_of<float>(y[0].tensor()), (std::vector<float>{10, 40, 90, 160}));
}

TEST(LoaderMemory, BlobWithoutOwnerIsCopied) {
  std::string model = two_weight_model("w.bin");
  std::string bytes = kWeights;
  std::shared_ptr<ir::Model> m = format::load_model_from_bytes(
      model.data(), model.size(), ExternalBlobs{{"w.bin", ExternalBlob{nullptr, bytes.data(), bytes.size()}}});
  std::memset(bytes.data(), 0, bytes.size());  // not viewed: the caller may reuse its buffer
  EXPECT_EQ(values_of<float>(*m->graph->initializer("a")), (std::vector<float>{1, 2, 3, 4}));
}

TEST(LoaderMemory, TwoBlobsAndDotSlashLocations) {
  std::string model = two_weight_model("./a.bin", "sub//b.bin", 0);
  auto m = format::load_model_from_bytes(
      model.data(), model.size(),
      ExternalBlobs{{"a.bin", blob_of(kWeights.substr(0, 16))}, {"sub/b.bin", blob_of(kWeights.substr(16))}});
  EXPECT_EQ(values_of<float>(*m->graph->initializer("a")), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(values_of<float>(*m->graph->initializer("b")), (std::vector<float>{10, 20, 30, 40}));
}

TEST(LoaderMemory, MissingLocationNamesItAndWhatWasGiven) {
  std::string model = two_weight_model("model.onnx.data");
  auto load = [&](const ExternalBlobs& blobs) { format::load_model_from_bytes(model.data(), model.size(), blobs); };
  EXPECT_ONYX_ERROR(load({{"weights.bin", blob_of(kWeights)}}), ErrorCode::kInvalidModel, "tensor 'a'",
                    "external data 'model.onnx.data' was not given", "given: 'weights.bin'");
  EXPECT_ONYX_ERROR(load({}), ErrorCode::kInvalidModel, "tensor 'a'", "'model.onnx.data'", "given: none");
}

TEST(LoaderMemory, PathsThatLeaveTheFolderAreRefused) {
  ExternalBlobs blobs{{"../w.bin", blob_of(kWeights)}, {"/w.bin", blob_of(kWeights)}, {"w.bin", blob_of(kWeights)}};
  std::string up = two_weight_model("../w.bin");
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(up.data(), up.size(), blobs), ErrorCode::kInvalidModel,
                    "tensor 'a'", "'../w.bin'", "'..' is not allowed");
  std::string back = two_weight_model("sub/../w.bin");
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(back.data(), back.size(), blobs), ErrorCode::kInvalidModel,
                    "'sub/../w.bin'", "'..' is not allowed");
  std::string abs = two_weight_model("/w.bin");
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(abs.data(), abs.size(), blobs), ErrorCode::kInvalidModel,
                    "tensor 'a'", "'/w.bin'", "absolute path");
  std::string empty = two_weight_model("");
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(empty.data(), empty.size(), blobs), ErrorCode::kInvalidModel,
                    "tensor 'a'", "empty location");
}

TEST(LoaderMemory, RangePastTheEndIsRefused) {
  ExternalBlobs blobs{{"w.bin", blob_of(kWeights)}};  // 32 bytes
  std::string past = two_weight_model("w.bin", "", 20);  // b: bytes 20..36
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(past.data(), past.size(), blobs), ErrorCode::kInvalidModel,
                    "tensor 'b'", "offset 20 length 16", "past the end of 'w.bin' (32 bytes)");
  std::string far = two_weight_model("w.bin", "", 1000);
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(far.data(), far.size(), blobs), ErrorCode::kInvalidModel,
                    "tensor 'b'", "offset 1000", "past the end");
  // A blob shorter than the tensor (no length given: the rest of the blob).
  GraphSpec g;
  g.inputs = {tensor_info("x", kFloat, {16})};
  g.outputs = {tensor_info("y", kFloat, {16})};
  TensorSpec w;
  w.name = "w";
  w.dims = {16};
  w.data_location = 1;
  w.external_data = {{"location", "w.bin"}};
  g.initializers = {w};
  g.nodes = {NodeSpec("Add", {"x", "w"}, {"y"})};
  std::string short_blob = ModelSpec(g).serialize();
  EXPECT_ONYX_ERROR(format::load_model_from_bytes(short_blob.data(), short_blob.size(), blobs),
                    ErrorCode::kInvalidModel, "tensor 'w'", "holds 32 bytes", "need 64");
}

}  // namespace
}  // namespace onyx::test
