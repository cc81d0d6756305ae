// Zeroed, 64-byte-aligned host memory for arenas, KV caches and scratch.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fm::rt {

/// A zeroed, 64-byte-aligned block of bytes: an anonymous mapping where
/// there is one (untouched pages cost no memory, so a long KV cache that a
/// session never fills is free), else aligned heap memory.
class HostBlock {
public:
  HostBlock() = default;
  ~HostBlock();
  HostBlock(const HostBlock &) = delete;
  HostBlock &operator=(const HostBlock &) = delete;
  HostBlock(HostBlock &&other) noexcept;
  HostBlock &operator=(HostBlock &&other) noexcept;

  /// Replaces the block with `bytes` zeroed bytes; false when the memory is
  /// not available (then the block is empty). 0 bytes is an empty block.
  bool allocate(uint64_t bytes);
  uint8_t *data() const { return data_; }
  uint64_t size() const { return bytes_; }
  template <typename T> T *as() const { return reinterpret_cast<T *>(data_); }

private:
  void release();
  uint8_t *data_ = nullptr;
  uint64_t bytes_ = 0;
  size_t mappedBytes_ = 0;
  bool mapped_ = false;
};

} // namespace fm::rt
