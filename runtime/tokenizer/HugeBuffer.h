// A fixed-size array of trivially copyable elements, its pages advised to be
// transparent huge pages on Linux: the tokenizer's hash tables (6-8 MB each
// for Llama 3) are filled with random accesses at load, and with 4 KiB pages
// every access is a TLB miss and every page a fault.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fm::tok {

/// Memory for `bytes` bytes: 2 MiB-aligned and advised MADV_HUGEPAGE when it
/// is at least that large (Linux), else plain malloc. Free with std::free.
inline void *allocateHuge(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < kHuge)
    return std::malloc(bytes ? bytes : 1);
  size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);
  void *p = std::aligned_alloc(kHuge, rounded);
  if (!p)
    return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  ::madvise(p, rounded, MADV_HUGEPAGE); // advice only: failure is harmless
#endif
  return p;
}

template <typename T> class HugeArray {
  static_assert(std::is_trivially_copyable<T>::value &&
                    std::is_trivially_destructible<T>::value,
                "HugeArray holds plain data");

public:
  HugeArray() = default;
  HugeArray(const HugeArray &o) { *this = o; }
  HugeArray(HugeArray &&o) noexcept { swap(o); }
  HugeArray &operator=(const HugeArray &o) {
    if (this != &o) {
      allocate(o.size_);
      if (size_)
        std::memcpy(data_, o.data_, size_ * sizeof(T));
    }
    return *this;
  }
  HugeArray &operator=(HugeArray &&o) noexcept {
    swap(o);
    return *this;
  }
  ~HugeArray() { std::free(data_); }

  /// `n` elements, each `value`.
  void assign(size_t n, const T &value) {
    allocate(n);
    for (size_t i = 0; i < n; ++i)
      data_[i] = value;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }

private:
  void allocate(size_t n) {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
    if (!n)
      return;
    data_ = static_cast<T *>(allocateHuge(n * sizeof(T)));
    if (!data_)
      throw std::bad_alloc();
    size_ = n;
  }
  void swap(HugeArray &o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  T *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace fm::tok
