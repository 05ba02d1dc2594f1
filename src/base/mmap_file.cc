#include "base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "base/error.h"

namespace onyx {

namespace {

/// What a non-regular file is, for messages.
const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

/// Reads `size` bytes from `fd` into `buf`; false with errno (0: early end) on failure.
bool read_all(int fd, unsigned char* buf, size_t size, int& err) {
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      err = r == 0 ? 0 : errno;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

int open_regular_file(const std::string& path, const char* what, size_t& size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(ErrorCode::kIo, "cannot open {} '{}': {}", what, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorCode::kIo, "cannot stat {} '{}': {}", what, path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::kIo, "{} '{}' is {}, expected a regular file", what, path,
         file_kind(st.st_mode));
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > SIZE_MAX) {
    ::close(fd);
    fail(ErrorCode::kIo, "{} '{}' is too large to read ({} bytes)", what, path,
         static_cast<int64_t>(st.st_size));
  }
  size = static_cast<size_t>(st.st_size);
  return fd;
}

std::string read_regular_file(const std::string& path, const char* what, size_t max_bytes) {
  size_t size = 0;
  int fd = open_regular_file(path, what, size);
  if (size > max_bytes) {
    ::close(fd);
    fail_arg("{} '{}' is {} bytes; files over {} bytes are refused", what, path, size, max_bytes);
  }
  std::string out;
  try {
    out.resize(size);
  } catch (const std::exception&) {
    ::close(fd);
    fail(ErrorCode::kIo, "out of memory reading {} '{}' ({} bytes)", what, path, size);
  }
  int e = 0;
  bool ok = read_all(fd, reinterpret_cast<unsigned char*>(out.data()), size, e);
  ::close(fd);
  if (!ok)
    fail(ErrorCode::kIo, "cannot read {} '{}': {}", what, path,
         e ? std::strerror(e) : "unexpected end");
  return out;
}

namespace {
/// The live read-only mappings made by MappedFile::open: release_mapped_pages touches
/// nothing else.
struct Mappings {
  std::mutex mu;
  std::vector<std::pair<const unsigned char*, size_t>> live;
};
Mappings& mappings() {
  static Mappings* m = new Mappings();  // never destroyed: files may unmap at exit
  return *m;
}
void register_mapping(const unsigned char* p, size_t n, bool add) {
  Mappings& m = mappings();
  std::lock_guard<std::mutex> lock(m.mu);
  if (add) {
    m.live.emplace_back(p, n);
    return;
  }
  for (size_t i = 0; i < m.live.size(); ++i)
    if (m.live[i].first == p) {
      m.live.erase(m.live.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}
}  // namespace

size_t release_mapped_pages(const void* p, size_t n) {
#ifdef __EMSCRIPTEN__
  (void)p;
  (void)n;
  return 0;
#else
  const auto* b = static_cast<const unsigned char*>(p);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (!b || n == 0 || page <= 0) return 0;
  const uintptr_t ps = static_cast<uintptr_t>(page);
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(b) + ps - 1) / ps * ps;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(b) + n) / ps * ps;
  if (hi <= lo) return 0;
  Mappings& m = mappings();
  std::lock_guard<std::mutex> lock(m.mu);  // (the mapping stays while it is released)
  for (const auto& [mp, mn] : m.live) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(mp);
    if (lo >= a && hi <= a + mn) {
      if (::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) != 0) return 0;
      return hi - lo;
    }
  }
  return 0;
#endif
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path, const char* what) {
  size_t size = 0;
  int fd = open_regular_file(path, what, size);
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = size;
  if (f->size_ == 0) {
    ::close(fd);
    return f;
  }
#ifndef __EMSCRIPTEN__
  void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    ::close(fd);
    f->data_ = static_cast<const unsigned char*>(p);
    f->mapped_ = true;
    register_mapping(f->data_, f->size_, true);
    return f;
  }
#endif
  // Fallback: read the whole file.
  auto* buf = static_cast<unsigned char*>(std::malloc(f->size_));
  if (!buf) {
    ::close(fd);
    fail(ErrorCode::kIo, "out of memory reading {} '{}' ({} bytes)", what, path, f->size_);
  }
  int e = 0;
  bool ok = read_all(fd, buf, f->size_, e);
  ::close(fd);
  if (!ok) {
    std::free(buf);
    fail(ErrorCode::kIo, "cannot read {} '{}': {}", what, path,
         e ? std::strerror(e) : "unexpected end");
  }
  f->data_ = buf;
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  if (mapped_) {
#ifndef __EMSCRIPTEN__
    register_mapping(data_, size_, false);
    ::munmap(const_cast<unsigned char*>(data_), size_);
#endif
  } else {
    std::free(const_cast<unsigned char*>(data_));
  }
}

}  // namespace onyx
