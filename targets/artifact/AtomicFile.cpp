// AtomicFile: temporary file + rename (AtomicFile.h).
#include "targets/artifact/AtomicFile.h"

#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace fm::writer {

llvm::Expected<AtomicFile> AtomicFile::create(const std::string &path) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0)
    return llvm::createStringError("cannot write %s: %s", tmp.c_str(),
                                   std::strerror(errno));
  return AtomicFile(path, tmp, fd);
}

AtomicFile::AtomicFile(AtomicFile &&other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)),
      fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!tmp_.empty())
    ::unlink(tmp_.c_str());
}

llvm::Error AtomicFile::fail(const std::string &what) {
  return llvm::createStringError("%s: %s: %s", path_.c_str(), what.c_str(),
                                 std::strerror(errno));
}

namespace {

// Writes all `size` bytes at `offset` (pwrite), retrying short writes.
bool writeFully(int fd, const void *data, size_t size, uint64_t offset) {
  const char *c = static_cast<const char *>(data);
  while (size) {
    ssize_t k = ::pwrite(fd, c, size, off_t(offset));
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    c += k;
    size -= size_t(k);
    offset += uint64_t(k);
  }
  return true;
}

} // namespace

llvm::Error AtomicFile::write(const void *data, size_t size) {
  if (!writeFully(fd_, data, size, size_))
    return fail("write failed");
  size_ += size;
  return llvm::Error::success();
}

llvm::Error AtomicFile::pad(size_t size) {
  static const std::vector<char> zeros(1 << 16, 0);
  while (size) {
    size_t n = std::min(size, zeros.size());
    if (llvm::Error e = write(zeros.data(), n))
      return e;
    size -= n;
  }
  return llvm::Error::success();
}

llvm::Error AtomicFile::writeAt(uint64_t offset, const void *data, size_t size) {
  if (offset + size > size_)
    return llvm::createStringError("%s: overwrite past the end", path_.c_str());
  if (!writeFully(fd_, data, size, offset))
    return fail("write failed");
  return llvm::Error::success();
}

llvm::Error AtomicFile::readAt(uint64_t offset, void *data, size_t size) const {
  if (offset + size > size_)
    return llvm::createStringError("%s: read past the end", path_.c_str());
  char *c = static_cast<char *>(data);
  while (size) {
    ssize_t k = ::pread(fd_, c, size, off_t(offset));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return llvm::createStringError("%s: cannot read back what was written: %s",
                                     path_.c_str(), std::strerror(errno));
    c += k;
    size -= size_t(k);
    offset += uint64_t(k);
  }
  return llvm::Error::success();
}

llvm::Error AtomicFile::commit() {
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    return fail("cannot complete the write");
  }
  fd_ = -1;
  if (std::error_code ec = llvm::sys::fs::rename(tmp_, path_))
    return llvm::createStringError("cannot rename %s to %s: %s", tmp_.c_str(),
                                   path_.c_str(), ec.message().c_str());
  tmp_.clear();
  return llvm::Error::success();
}

} // namespace fm::writer
