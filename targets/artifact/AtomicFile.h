// A file that appears at its path complete or not at all: written to a
// temporary file beside it and renamed over the destination on commit().
#pragma once

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::writer {

class AtomicFile {
public:
  /// Creates `path.tmp.<pid>` beside `path`.
  static llvm::Expected<AtomicFile> create(const std::string &path);
  AtomicFile(AtomicFile &&other) noexcept;
  AtomicFile &operator=(AtomicFile &&) = delete;
  /// Removes the temporary file unless committed.
  ~AtomicFile();

  /// Appends `size` bytes.
  llvm::Error write(const void *data, size_t size);
  /// Appends `size` zero bytes.
  llvm::Error pad(size_t size);
  /// Overwrites `size` bytes at `offset` (already written).
  llvm::Error writeAt(uint64_t offset, const void *data, size_t size);
  /// Reads `size` bytes at `offset` (already written) back.
  llvm::Error readAt(uint64_t offset, void *data, size_t size) const;
  /// Flushes, closes and renames over the destination.
  llvm::Error commit();
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  AtomicFile(std::string path, std::string tmp, int fd)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  llvm::Error fail(const std::string &what);

  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

} // namespace fm::writer
