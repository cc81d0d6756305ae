// BPE encoding with HF tokenizers' exact rules (models/bpe/model.rs
// merge_word, word.rs merge_all): lowest rank first, then leftmost.
#include "tokenizer/Bpe.h"

#include "tokenizer/Utf8.h"

#include <algorithm>
#include <functional>

namespace fm::tok {

void BpeModel::mergeWord(std::string_view w, BpeScratch &sc) const {
  auto &symbols = sc.symbols;
  symbols.clear();
  const bool bytes = options.byteLevel;
  const bool affixes = !options.continuingSubwordPrefix.empty() ||
                       !options.endOfWordSuffix.empty();
  int32_t unkId = -1;
  uint32_t unkLength = 0;
  auto add = [&](int32_t id, uint32_t length) {
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1, length});
    if (index > 0)
      symbols[index - 1].next = index;
  };
  size_t i = 0;
  while (i < w.size()) {
    size_t n = bytes ? 1 : utf8Length(static_cast<uint8_t>(w[i]));
    if (i + n > w.size())
      n = w.size() - i;
    std::string_view s = w.substr(i, n);
    int32_t id;
    if (bytes && !affixes) {
      id = byteIds[static_cast<uint8_t>(w[i])];
    } else if (!affixes) {
      id = vocab.get(keys, s);
    } else {
      sc.unit.clear();
      if (i != 0)
        sc.unit += options.continuingSubwordPrefix;
      sc.unit.append(s);
      if (i + n == w.size())
        sc.unit += options.endOfWordSuffix;
      s = sc.unit;
      id = vocab.get(keys, s);
    }
    i += n;
    if (id >= 0) {
      if (unkId >= 0) {
        add(unkId, unkLength);
        unkId = -1;
      }
      add(id, static_cast<uint32_t>(n));
      continue;
    }
    if (options.byteFallback) {
      bool all = true;
      for (char b : s)
        all &= byteFallbackIds[static_cast<uint8_t>(b)] >= 0;
      if (all) {
        // HF adds the pending unknown token only before a vocabulary hit,
        // so it lands after these bytes.
        for (char b : s)
          add(byteFallbackIds[static_cast<uint8_t>(b)], 1);
        continue;
      }
    }
    if (options.unkId >= 0) {
      if (unkId >= 0 && options.fuseUnk) {
        unkLength += static_cast<uint32_t>(n);
      } else {
        if (unkId >= 0)
          add(unkId, unkLength);
        unkId = options.unkId;
        unkLength = static_cast<uint32_t>(n);
      }
    }
    // Without an unk_token, HF drops the character.
  }
  if (unkId >= 0)
    add(unkId, unkLength);

  // merge_all: a min-heap on (rank, position).
  auto &heap = sc.heap;
  heap.clear();
  auto push = [&](uint32_t rank, int32_t pos) {
    heap.push_back((static_cast<uint64_t>(rank) << 32) |
                   static_cast<uint32_t>(pos));
    std::push_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
  };
  for (size_t k = 0; k + 1 < symbols.size(); ++k)
    if (const PairMap::Merge *m = merges.get(symbols[k].id, symbols[k + 1].id))
      push(m->rank, static_cast<int32_t>(k));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
    uint64_t top = heap.back();
    heap.pop_back();
    uint32_t rank = static_cast<uint32_t>(top >> 32);
    int32_t pos = static_cast<int32_t>(top & 0xFFFFFFFFu);
    BpeScratch::Symbol &left = symbols[pos];
    if (left.length == 0 || left.next < 0)
      continue;
    int32_t nextPos = left.next;
    BpeScratch::Symbol right = symbols[nextPos];
    const PairMap::Merge *m = merges.get(left.id, right.id);
    if (!m || m->rank != rank) // an expired entry
      continue;
    left.id = m->id;
    left.length += right.length;
    left.next = right.next;
    symbols[nextPos].length = 0;
    if (right.next >= 0)
      symbols[right.next].prev = pos;
    if (left.prev >= 0)
      if (const PairMap::Merge *pm = merges.get(symbols[left.prev].id, left.id))
        push(pm->rank, left.prev);
    if (left.next >= 0)
      if (const PairMap::Merge *nm = merges.get(left.id, symbols[left.next].id))
        push(nm->rank, pos);
  }
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t> &out,
                        BpeScratch &scratch, BpeCache *cache) const {
  if (piece.empty())
    return;
  if (options.ignoreMerges) {
    int32_t id = vocab.get(keys, piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  uint64_t hash = 0;
  if (cache && piece.size() <= BpeCache::kMaxKey) {
    hash = hashBytes(piece.data(), piece.size());
    if (cache->get(piece, hash, out))
      return;
  }
  mergeWord(piece, scratch);
  size_t start = out.size();
  for (const BpeScratch::Symbol &s : scratch.symbols)
    if (s.length)
      out.push_back(s.id);
  if (cache && piece.size() <= BpeCache::kMaxKey)
    cache->put(piece, hash, out.data() + start, out.size() - start);
}

} // namespace fm::tok
