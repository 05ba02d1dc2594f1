#include "tools/onyx/util.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace onyx::cli {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "cannot open {} '{}'", what, path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string safe_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "output";
  return s;
}

nlohmann::json value_info_json(const ir::ValueInfo& v) {
  nlohmann::json j;
  j["name"] = v.name;
  j["type"] = v.type.str();
  const ir::TypeInfo* t = &v.type;
  while (t->inner) t = t->inner.get();
  j["dtype"] = std::string(dtype_name(t->elem));
  if (v.type.is_tensor() && v.type.has_shape) {
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& d : v.type.shape) {
      if (d.known()) dims.push_back(d.value);
      else if (!d.param.empty()) dims.push_back(d.param);
      else dims.push_back(nullptr);
    }
    j["shape"] = dims;
  } else {
    j["shape"] = nullptr;
  }
  return j;
}

const nlohmann::json* member(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace onyx::cli
