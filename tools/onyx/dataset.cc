#include "tools/onyx/dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "format/npy.h"
#include "format/value_io.h"
#include "tools/onyx/util.h"
#include "tools/onyx/zlib_inflate.h"

namespace onyx::cli {

namespace fs = std::filesystem;

namespace {

/// A file of a sample folder that holds one value.
bool value_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::error_code ec;
  return (ext == ".npy" || ext == ".pb" || ext == format::kNoneSuffix) && !fs::is_directory(p, ec);
}

/// A folder of .npy/.pb files: a sequence in a sample folder.
bool sequence_folder(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string ext = it->path().extension().string();
    if (ext == ".npy" || ext == ".pb") return true;
  }
  return false;
}

bool is_sample_folder(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (value_file(it->path()) || (it->is_directory(ec2) && sequence_folder(it->path()))) return true;
  }
  return false;
}

}  // namespace

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
    fail_arg("{} '{}' is not a folder (a dataset is a folder of NAME.npz files or NAME/ folders of .npy or .pb files)",
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
      if (!is_sample_folder(p)) continue;
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
    fail_arg("{} '{}' holds no sample: expected NAME.npz files (np.savez) or NAME/ folders of .npy or .pb files",
             role, dir);
  std::vector<SampleFile> out;
  for (auto& [n, s] : by_name) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const SampleFile& a, const SampleFile& b) { return natural_less(a.name, b.name); });
  return out;
}

std::vector<SampleValue> npz_values(std::vector<format::NpzArray> arrays, const TypeOf& type_of,
                                    const std::string& what) {
  std::vector<SampleValue> out;
  std::map<std::string, std::map<int64_t, Tensor>> seqs;  // sequence key -> items
  std::map<std::string, size_t> tensor_at;
  for (auto& a : arrays) {
    auto slash = a.name.rfind('/');
    std::string idx = slash == std::string::npos ? "" : a.name.substr(slash + 1);
    bool item = !idx.empty() && idx.size() <= 12 && idx.find_first_not_of("0123456789") == std::string::npos &&
                (idx.size() == 1 || idx[0] != '0');
    if (item) {
      seqs[a.name.substr(0, slash)][std::stoll(idx)] = std::move(a.tensor);
    } else {
      tensor_at[a.name] = out.size();
      out.push_back({a.name, Value(std::move(a.tensor))});
    }
  }
  for (auto& [key, items] : seqs) {
    if (tensor_at.count(key))
      fail_arg("{}: '{}' is both an array and a sequence ({}/0 ...); keep one", what, key, key);
    std::vector<Tensor> list;
    for (auto& [k, t] : items) {
      if (k != static_cast<int64_t>(list.size()))
        fail_arg("{}: sequence '{}' has no item {} (arrays {}/0 to {}/{} must all be there)", what, key, list.size(),
                 key, key, items.size() - 1);
      list.push_back(std::move(t));
    }
    DType dt = list[0].dtype();
    out.push_back({key, Value::sequence(dt, std::move(list))});
  }
  for (auto& v : out)
    if (const ir::TypeInfo* t = type_of ? type_of(v.name) : nullptr)
      v.value = format::value_as_declared(v.value, *t, what + " '" + v.name + "'");
  return out;
}

std::vector<SampleValue> load_sample(const SampleFile& s, const TypeOf& type_of) {
  if (s.is_npz) return npz_values(format::read_npz_file(s.path, zlib_inflate), type_of, "sample '" + s.path + "'");
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& f : fs::directory_iterator(s.path, ec)) {
    const fs::path& p = f.path();
    std::string file = p.filename().string();
    if (file.empty() || file[0] == '.') continue;
    std::error_code ec2;
    if (value_file(p) || (f.is_directory(ec2) && sequence_folder(p))) files.push_back(p);
  }
  if (ec) fail(ErrorCode::kIo, "cannot list '{}': {}", s.path, ec.message());
  std::sort(files.begin(), files.end());
  std::vector<SampleValue> out;
  std::map<std::string, std::string> seen;
  static const ir::TypeInfo kUnknown;
  for (const auto& f : files) {
    std::string key = value_file(f) ? f.stem().string() : f.filename().string();
    if (seen.count(key))
      fail_arg("sample '{}' holds '{}' twice ({} and {}); keep one", s.path, key, seen[key], f.filename().string());
    seen[key] = f.filename().string();
    const ir::TypeInfo* t = type_of ? type_of(key) : nullptr;
    out.push_back({key, format::read_value_path(f.string(), t ? *t : kUnknown, "'" + key + "' of sample '" + s.name + "'")});
  }
  return out;
}

std::string array_key(const std::string& name) { return safe_file_name(name); }

}  // namespace onyx::cli
