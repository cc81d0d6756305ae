// The BPE model of tokenizer.json: vocabulary, ranked merges, byte fallback
// and unknown-token fusing, a ranked-merge priority queue per piece (HF's
// Word::merge_all) and a per-tokenizer cache of merged pieces.
#pragma once

#include "fm/status.h"
#include "tokenizer/HashMaps.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace fm::tok {

/// Recently merged pieces -> ids (direct-mapped; a miss only costs a merge).
class BpeCache {
public:
  static constexpr size_t kSlots = 1 << 14;
  static constexpr size_t kMaxKey = 30;
  static constexpr size_t kMaxIds = 14;

  BpeCache() : slots_(kSlots) {}
  bool get(std::string_view piece, uint64_t hash,
           std::vector<int32_t> &out) const {
    const Slot &s = slots_[hash & (kSlots - 1)];
    if (s.hash != hash || s.keyLength != piece.size() ||
        std::memcmp(s.key, piece.data(), piece.size()) != 0)
      return false;
    out.insert(out.end(), s.ids, s.ids + s.idCount);
    return true;
  }
  void put(std::string_view piece, uint64_t hash, const int32_t *ids,
           size_t count) {
    if (piece.size() > kMaxKey || count > kMaxIds)
      return;
    Slot &s = slots_[hash & (kSlots - 1)];
    s.hash = hash;
    s.keyLength = static_cast<uint8_t>(piece.size());
    s.idCount = static_cast<uint8_t>(count);
    std::memcpy(s.key, piece.data(), piece.size());
    std::memcpy(s.ids, ids, count * sizeof(int32_t));
  }

  /// Encodes take it with try_lock: a busy cache is skipped, never waited on.
  std::mutex mutex;

private:
  struct Slot {
    uint64_t hash = 0;
    uint8_t keyLength = 0xFF;
    uint8_t idCount = 0;
    char key[kMaxKey];
    int32_t ids[kMaxIds];
  };
  std::vector<Slot> slots_;
};

/// Per-call working memory of BpeModel::tokenize.
struct BpeScratch {
  struct Symbol {
    int32_t id, prev, next;
    uint32_t length; // bytes; 0 once merged into its left neighbour
  };
  std::vector<Symbol> symbols;
  std::vector<uint64_t> heap;
  std::string unit;
};

class BpeModel {
public:
  struct Options {
    /// The model works on bytes: the vocabulary is written in GPT-2's
    /// byte-to-unicode alphabet, which the loader maps back to raw bytes.
    bool byteLevel = false;
    bool byteFallback = false;
    bool fuseUnk = false;
    bool ignoreMerges = false;
    std::string continuingSubwordPrefix; // empty: none
    std::string endOfWordSuffix;         // empty: none
    int32_t unkId = -1;                  // -1: the model has no unk_token
  };

  Options options;
  /// id -> the token's bytes as the model matches them (raw bytes for a
  /// byte-level model); empty for ids the vocabulary does not use.
  std::vector<std::string> keys;
  /// id -> whether the vocabulary holds it.
  std::vector<uint8_t> present;
  StringIdMap vocab;
  PairMap merges;
  /// <0xXX> ids for byte fallback (-1 when missing), and the id of each
  /// single byte of a byte-level model.
  std::array<int32_t, 256> byteFallbackIds;
  std::array<int32_t, 256> byteIds;

  /// Appends the ids of `piece` to `out`. `cache` may be null.
  void tokenize(std::string_view piece, std::vector<int32_t> &out,
                BpeScratch &scratch, BpeCache *cache) const;

private:
  void mergeWord(std::string_view piece, BpeScratch &scratch) const;
};

} // namespace fm::tok
