// Read-only memory mapping of a whole file (falls back to reading where mmap is absent).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace onyx {

class MappedFile {
 public:
  /// Maps `path` read-only; throws onyx::Error (kIo) naming the path on failure.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string path_;
};

}  // namespace onyx
