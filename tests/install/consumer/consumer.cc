// Runs models/tiny-cnn through the installed C++ and C APIs and compares both with
// PyTorch's probabilities (within 1e-5). usage: consumer MODEL IMAGE.npy PROBS.npy
#include <onyx/onyx_c.h>
#include <onyx/session.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

// The float32 payload of a .npy file (version 1 header).
std::vector<float> read_npy(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {};
  size_t header = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  size_t start = 10 + header;
  std::vector<float> v((bytes.size() - start) / 4);
  std::memcpy(v.data(), bytes.data() + start, v.size() * 4);
  return v;
}

double max_diff(const float* a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::fmax(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  std::vector<float> image = read_npy(argv[2]), probs = read_npy(argv[3]);
  if (image.size() != 784 || probs.size() != 10) {
    std::fprintf(stderr, "bad .npy files\n");
    return 1;
  }
  int bad = 0;
  try {
    auto s = onyx::Session::open(argv[1]);
    const onyx::ModelMetadata& md = s->metadata();
    std::printf("C++: %s %s, %zu input(s), input '%s' %s\n", md.producer_name.c_str(), md.producer_version.c_str(),
                s->inputs().size(), s->inputs()[0].name.c_str(), s->inputs()[0].type.c_str());
    onyx::Tensor in = onyx::Tensor::view(onyx::DType::kFloat, {1, 1, 28, 28}, image.data(),
                                         std::shared_ptr<void>(image.data(), [](void*) {}));
    std::vector<onyx::Value> out = s->run({{"image", in}}, {"probs"});
    double d = max_diff(out.at(0).tensor().data<float>(), probs);
    std::printf("C++: max |onyx - torch| = %.3g\n", d);
    bad += !(d <= 1e-5);
  } catch (const onyx::Error& e) {
    std::fprintf(stderr, "C++ API: %s\n", e.what());
    return 1;
  }
  OnyxSession* s = nullptr;
  OnyxStatus* st = onyx_session_create(argv[1], nullptr, &s);
  if (st) {
    std::fprintf(stderr, "C API: %s\n", onyx_status_message(st));
    return 1;
  }
  int64_t dims[4] = {1, 1, 28, 28};
  OnyxValue* in = nullptr;
  OnyxValue* out = nullptr;
  st = onyx_tensor_create_view(ONYX_DTYPE_FLOAT, dims, 4, image.data(), image.size() * 4, &in);
  const char* names[1] = {"image"};
  const OnyxValue* ins[1] = {in};
  if (!st) st = onyx_session_run(s, nullptr, names, ins, 1, nullptr, 1, &out);
  if (st) {
    std::fprintf(stderr, "C API: %s\n", onyx_status_message(st));
    return 1;
  }
  double d = max_diff(static_cast<const float*>(onyx_tensor_data(out)), probs);
  std::printf("C: onyx %s, max |onyx - torch| = %.3g\n", onyx_version(), d);
  bad += !(d <= 1e-5);
  onyx_value_free(out);
  onyx_value_free(in);
  onyx_session_free(s);
  return bad ? 1 : 0;
}
