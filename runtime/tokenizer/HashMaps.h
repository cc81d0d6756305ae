// Open-addressing hash maps for the BPE hot path: byte string -> token id
// (keys live in the caller's token table) and token pair -> merge.
#pragma once

#include "tokenizer/HugeBuffer.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fm::tok {

inline uint64_t hashBytes(const char *p, size_t n) {
  // wyhash-style mixing of (overlapping) 8-, 4- and 1-byte loads: strings
  // here are short, and a byte loop would dominate.
  const uint64_t m = 0x9E3779B97F4A7C15ull;
  uint64_t h = (n + 1) * m, w;
  if (n >= 8) {
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
      std::memcpy(&w, p + k, 8);
      h = (h ^ w) * m;
      h ^= h >> 29;
    }
    std::memcpy(&w, p + n - 8, 8); // the tail, overlapping
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    w = (static_cast<uint64_t>(b) << 32) | a;
  } else if (n > 0) {
    w = static_cast<uint8_t>(p[0]) | (static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8) |
        (static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16);
  } else {
    w = 0;
  }
  h = (h ^ w) * m;
  h ^= h >> 32;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  return h;
}

/// Byte string -> id, the strings being `keys[id]` of a table the caller
/// keeps alive and unchanged. Keys of up to 15 bytes are also kept in the
/// slot, so most lookups touch one cache line (loading a vocabulary is
/// hundreds of thousands of lookups).
class StringIdMap {
public:
  void reset(size_t expected) {
    size_t cap = 16;
    while (cap < expected + expected / 2) // load factor <= 2/3
      cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  /// Inserts or overwrites; `keys[id]` must be the key.
  void put(const std::vector<std::string> &keys, int32_t id) {
    const std::string &k = keys[id];
    put(keys, id, hashBytes(k.data(), k.size()));
  }
  void put(const std::vector<std::string> &keys, int32_t id, uint64_t h) {
    const std::string &k = keys[id];
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (s.id < 0) {
        s.hash = static_cast<uint32_t>(h);
        s.id = id;
        s.length = static_cast<uint8_t>(k.size() < kInline ? k.size() : kInline);
        for (size_t j = 0; j < s.length; ++j)
          s.key[j] = k[j];
        return;
      }
      if (matches(s, keys, static_cast<uint32_t>(h), k)) {
        s.id = id;
        return;
      }
    }
  }
  int32_t get(const std::vector<std::string> &keys, std::string_view k) const {
    return find(keys, k, hashBytes(k.data(), k.size()));
  }
  /// For batched lookups: prefetch(hash) a while before find(key, hash).
  void prefetch(uint64_t h) const {
    if (!slots_.empty())
      __builtin_prefetch(&slots_[h & mask_]);
  }
  int32_t find(const std::vector<std::string> &keys, std::string_view k,
               uint64_t h) const {
    if (slots_.empty())
      return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot &s = slots_[i];
      if (s.id < 0)
        return -1;
      if (matches(s, keys, static_cast<uint32_t>(h), k))
        return s.id;
    }
  }

private:
  static constexpr size_t kInline = 15; // length kInline: "longer, see keys"
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;
    uint8_t length = 0;
    char key[kInline];
  };
  static bool matches(const Slot &s, const std::vector<std::string> &keys,
                      uint32_t h, std::string_view k) {
    if (s.hash != h)
      return false;
    if (k.size() < kInline) {
      if (s.length != k.size())
        return false;
      for (size_t j = 0; j < k.size(); ++j)
        if (s.key[j] != k[j])
          return false;
      return true;
    }
    if (s.length != kInline)
      return false;
    const std::string &key = keys[s.id];
    return key.size() == k.size() && std::memcmp(key.data(), k.data(), k.size()) == 0;
  }
  HugeArray<Slot> slots_;
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
    while (cap < expected + expected / 2) // load factor <= 2/3
      cap <<= 1;
    entries_.assign(cap, Entry{kEmpty, Merge{0, -1}});
    mask_ = cap - 1;
  }
  void prefetch(int32_t a, int32_t b) const {
    __builtin_prefetch(&entries_[mix(key(a, b)) & mask_]);
  }
  /// Inserts or overwrites (a later duplicate merge wins, as in HF).
  void put(int32_t a, int32_t b, Merge m) {
    uint64_t k = key(a, b);
    for (size_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
      Entry &e = entries_[i];
      if (e.key == kEmpty || e.key == k) {
        e.key = k;
        e.merge = m;
        return;
      }
    }
  }
  const Merge *get(int32_t a, int32_t b) const {
    if (entries_.empty())
      return nullptr;
    uint64_t k = key(a, b);
    for (size_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
      const Entry &e = entries_[i];
      if (e.key == k)
        return &e.merge;
      if (e.key == kEmpty)
        return nullptr;
    }
  }

private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Entry {
    uint64_t key;
    Merge merge;
  };
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
  HugeArray<Entry> entries_;
  size_t mask_ = 0;
};

} // namespace fm::tok
