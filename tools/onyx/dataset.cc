#include "tools/onyx/dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "format/npy.h"
#include "tools/onyx/util.h"
#include "tools/onyx/zlib_inflate.h"

namespace onyx::cli {

namespace fs = std::filesystem;

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
      int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
      if (c) return c < 0;
      i = i1, j = j1;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

std::vector<SampleFile> list_dataset(const std::string& dir, const std::string& role) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail_arg("{} '{}' is not a folder (a dataset is a folder of NAME.npz files or NAME/ folders of .npy files)",
             role, dir);
  std::map<std::string, SampleFile> by_name;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    std::string file = p.filename().string();
    if (file.empty() || file[0] == '.') continue;
    SampleFile s;
    s.path = p.string();
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      bool has_npy = false;
      for (auto& f : fs::directory_iterator(p, ec2))
        if (f.path().extension() == ".npy") has_npy = true;
      if (!has_npy) continue;
      s.name = file;
      s.is_npz = false;
    } else if (p.extension() == ".npz") {
      s.name = p.stem().string();
    } else {
      continue;
    }
    if (by_name.count(s.name))
      fail_arg("{} '{}' has two samples named '{}' ({} and {}); keep one", role, dir, s.name,
               by_name[s.name].path, s.path);
    by_name[s.name] = s;
  }
  if (ec) fail(ErrorCode::kIo, "cannot list {} '{}': {}", role, dir, ec.message());
  if (by_name.empty())
    fail_arg("{} '{}' holds no sample: expected NAME.npz files (np.savez) or NAME/ folders of .npy files",
             role, dir);
  std::vector<SampleFile> out;
  for (auto& [n, s] : by_name) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const SampleFile& a, const SampleFile& b) { return natural_less(a.name, b.name); });
  return out;
}

std::vector<format::NpzArray> load_sample(const SampleFile& s) {
  if (s.is_npz) return format::read_npz_file(s.path, zlib_inflate);
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& f : fs::directory_iterator(s.path, ec))
    if (f.path().extension() == ".npy") files.push_back(f.path());
  if (ec) fail(ErrorCode::kIo, "cannot list '{}': {}", s.path, ec.message());
  std::sort(files.begin(), files.end());
  std::vector<format::NpzArray> out;
  for (const auto& f : files) out.push_back({f.stem().string(), format::read_npy_file(f.string())});
  return out;
}

std::string array_key(const std::string& name) { return safe_file_name(name); }

}  // namespace onyx::cli
