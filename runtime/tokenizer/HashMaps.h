// Open-addressing hash maps for the BPE hot path: byte string -> token id
// (keys live in the caller's token table) and token pair -> merge.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fm::tok {

inline uint64_t hashBytes(const char *p, size_t n) {
  // wyhash-style mixing of 8-byte words; strings here are short.
  const uint64_t m = 0x9E3779B97F4A7C15ull;
  uint64_t h = n * m;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * m;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w ^ (n << 59)) * m;
  h ^= h >> 32;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  return h;
}

/// Byte string -> id, the strings being `keys[id]` of a table the caller
/// keeps alive and unchanged.
class StringIdMap {
public:
  void reset(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2)
      cap <<= 1;
    slots_.assign(cap, Slot{0, -1});
    mask_ = cap - 1;
  }
  /// Inserts or overwrites; `keys[id]` must be the key.
  void put(const std::vector<std::string> &keys, int32_t id) {
    const std::string &k = keys[id];
    uint64_t h = hashBytes(k.data(), k.size());
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (s.id < 0) {
        s = Slot{static_cast<uint32_t>(h), id};
        return;
      }
      if (s.hash == static_cast<uint32_t>(h) && keys[s.id] == k) {
        s.id = id;
        return;
      }
    }
  }
  int32_t get(const std::vector<std::string> &keys, std::string_view k) const {
    if (slots_.empty())
      return -1;
    uint64_t h = hashBytes(k.data(), k.size());
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot &s = slots_[i];
      if (s.id < 0)
        return -1;
      if (s.hash == static_cast<uint32_t>(h)) {
        const std::string &key = keys[s.id];
        if (key.size() == k.size() &&
            std::memcmp(key.data(), k.data(), k.size()) == 0)
          return s.id;
      }
    }
  }

private:
  struct Slot {
    uint32_t hash;
    int32_t id;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

/// (left id, right id) -> (rank, merged id).
class PairMap {
public:
  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  void reset(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2)
      cap <<= 1;
    keys_.assign(cap, kEmpty);
    values_.assign(cap, Merge{0, -1});
    mask_ = cap - 1;
  }
  /// Inserts or overwrites (a later duplicate merge wins, as in HF).
  void put(int32_t a, int32_t b, Merge m) {
    uint64_t k = key(a, b);
    for (size_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == kEmpty || keys_[i] == k) {
        keys_[i] = k;
        values_[i] = m;
        return;
      }
    }
  }
  const Merge *get(int32_t a, int32_t b) const {
    if (keys_.empty())
      return nullptr;
    uint64_t k = key(a, b);
    for (size_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == k)
        return &values_[i];
      if (keys_[i] == kEmpty)
        return nullptr;
    }
  }

private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
           static_cast<uint32_t>(b);
  }
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    return k;
  }
  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  size_t mask_ = 0;
};

} // namespace fm::tok
