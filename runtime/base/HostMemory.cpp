// HostBlock: anonymous mappings (or aligned heap memory) for runtime state.
#include "base/HostMemory.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#if (defined(__unix__) || defined(__APPLE__)) && !defined(FM_HEAP_HOST_MEMORY)
#include <sys/mman.h>
#define FM_HAVE_MMAP 1
#endif

namespace fm::rt {

HostBlock::~HostBlock() { release(); }

HostBlock::HostBlock(HostBlock &&other) noexcept { *this = std::move(other); }

HostBlock &HostBlock::operator=(HostBlock &&other) noexcept {
  if (this != &other) {
    release();
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    std::swap(mappedBytes_, other.mappedBytes_);
    std::swap(mapped_, other.mapped_);
  }
  return *this;
}

bool HostBlock::allocate(uint64_t bytes) {
  release();
  if (bytes == 0)
    return true;
  if (bytes > SIZE_MAX - 64)
    return false;
  const size_t rounded = (static_cast<size_t>(bytes) + 63) & ~size_t(63);
#if FM_HAVE_MMAP
  // Zero pages come from the kernel on first touch.
  void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return false;
  mapped_ = true;
#else
  // Sanitizer builds (FM_HEAP_HOST_MEMORY) take heap memory so that
  // overruns trap: exactly `bytes`, so that the first byte past the block
  // is already a sanitizer's redzone.
  void *p = nullptr;
  if (posix_memalign(&p, 64, static_cast<size_t>(bytes)) != 0)
    return false;
  std::memset(p, 0, static_cast<size_t>(bytes));
  mapped_ = false;
#endif
  data_ = static_cast<uint8_t *>(p);
  bytes_ = bytes;
  mappedBytes_ = rounded;
  return true;
}

void HostBlock::release() {
  if (!data_)
    return;
#if FM_HAVE_MMAP
  if (mapped_)
    munmap(data_, mappedBytes_);
  else
#endif
    std::free(data_);
  data_ = nullptr;
  bytes_ = mappedBytes_ = 0;
  mapped_ = false;
}

} // namespace fm::rt
