// Reading files from strangers: regular files only, opened without blocking (a FIFO or a
// device named as a model, external data or input must not hang the process), then mapped
// read-only (read into memory where mmap is absent) or read whole.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace onyx {

/// Opens `path` read-only without blocking and checks that it is a regular file (not a
/// directory, FIFO, socket or device); returns the descriptor (close-on-exec) and its
/// size. Throws onyx::Error (kIo) naming `what` ("model", "alphabet file"), the path and
/// what it is instead.
int open_regular_file(const std::string& path, const char* what, size_t& size);

/// The whole contents of regular file `path` (see open_regular_file for the errors);
/// a file larger than `max_bytes` is refused (kInvalidArgument) before it is read.
std::string read_regular_file(const std::string& path, const char* what = "file",
                              size_t max_bytes = SIZE_MAX);

class MappedFile {
 public:
  /// Maps regular file `path` read-only; throws onyx::Error (kIo) naming the path on
  /// failure (see open_regular_file).
  static std::shared_ptr<MappedFile> open(const std::string& path, const char* what = "file");
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

/// Tells the kernel that the pages wholly inside [p, p + n) will not be needed soon, when
/// they lie in a file that a live MappedFile maps (read-only, private, never written): they
/// leave the process's resident memory and come back from the file if read again, with the
/// same bytes. For weights a kernel has copied into its own layout at planning, so that
/// the copy does not double their share of the peak RSS. Memory that is not such a mapping
/// (a heap copy, a file read whole) is left alone. Returns the bytes released.
size_t release_mapped_pages(const void* p, size_t n);

}  // namespace onyx
