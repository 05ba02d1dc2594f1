#include "base/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace onyx {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorCode::kIo, "cannot stat '{}': {}", path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::kIo, "'{}' is a directory, expected a file", path);
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
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
    return f;
  }
#endif
  // Fallback: read the whole file.
  auto* buf = static_cast<unsigned char*>(std::malloc(f->size_));
  if (!buf) {
    ::close(fd);
    fail(ErrorCode::kIo, "out of memory reading '{}' ({} bytes)", path, f->size_);
  }
  size_t got = 0;
  while (got < f->size_) {
    ssize_t r = ::read(fd, buf + got, f->size_ - got);
    if (r <= 0) {
      int e = errno;
      std::free(buf);
      ::close(fd);
      fail(ErrorCode::kIo, "cannot read '{}': {}", path, r == 0 ? "unexpected end" : std::strerror(e));
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  f->data_ = buf;
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  if (mapped_) {
#ifndef __EMSCRIPTEN__
    ::munmap(const_cast<unsigned char*>(data_), size_);
#endif
  } else {
    std::free(const_cast<unsigned char*>(data_));
  }
}

}  // namespace onyx
