// Added-token matching (HF tokenizers/src/tokenizer/added_vocabulary.rs
// find_matches), over a byte trie with a first-byte filter.
#include "tokenizer/AddedVocabulary.h"

#include "tokenizer/Utf8.h"

#include <utf8proc.h>

#include <algorithm>

namespace fm::tok {
namespace {

// The regex crate's \w, which single_word tests on the neighbours.
bool isWordChar(uint32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c == '_';
  if (c == 0x200C || c == 0x200D)
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_MC:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_NL:
  case UTF8PROC_CATEGORY_PC:
    return true;
  default:
    return false;
  }
}

size_t previousCharStart(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80)
    --i;
  return i;
}

} // namespace

void AddedMatcher::build(const std::vector<AddedToken> &tokens,
                         bool normalized) {
  nodes_.assign(1, Node{});
  first_.fill(false);
  tokenCount_ = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const AddedToken &tok = tokens[t];
    if (tok.normalized != normalized || tok.content.empty())
      continue;
    int32_t node = 0;
    for (char ch : tok.content) {
      uint8_t b = static_cast<uint8_t>(ch);
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.push_back(Node{});
        auto &edges = nodes_[node].edges;
        edges.insert(std::lower_bound(edges.begin(), edges.end(),
                                      std::make_pair(b, int32_t(-1))),
                     {b, next});
      }
      node = next;
    }
    // The same content twice: the later entry wins, as in HF's map.
    nodes_[node].token = static_cast<int32_t>(t);
    first_[static_cast<uint8_t>(tok.content[0])] = true;
    ++tokenCount_;
  }
}

int32_t AddedMatcher::child(int32_t node, uint8_t byte) const {
  const auto &edges = nodes_[node].edges;
  auto it = std::lower_bound(edges.begin(), edges.end(),
                             std::make_pair(byte, int32_t(-1)));
  return it != edges.end() && it->first == byte ? it->second : -1;
}

void AddedMatcher::split(std::string_view s,
                         const std::vector<AddedToken> &tokens,
                         std::vector<Segment> &out) const {
  const auto *bytes = reinterpret_cast<const uint8_t *>(s.data());
  size_t n = s.size(), startOffset = 0, i = 0;
  while (i < n && tokenCount_) {
    if (!first_[bytes[i]]) {
      ++i;
      continue;
    }
    // The longest token starting at i.
    int32_t node = 0, best = -1;
    size_t bestEnd = 0;
    for (size_t j = i; j < n; ++j) {
      node = child(node, bytes[j]);
      if (node < 0)
        break;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        bestEnd = j + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken &tok = tokens[best];
    size_t start = i, stop = bestEnd;
    i = bestEnd; // the matcher moves past this match whatever happens to it
    if (tok.singleWord) {
      bool startSpace = true, stopSpace = true;
      if (start > 0) {
        size_t k = previousCharStart(s, start);
        startSpace = !isWordChar(decodeUtf8(s, k));
      }
      if (stop < n) {
        size_t k = stop;
        stopSpace = !isWordChar(decodeUtf8(s, k));
      }
      if (!startSpace || !stopSpace)
        continue;
    }
    if (tok.lstrip) {
      size_t newStart = start;
      while (newStart > 0) {
        size_t k = previousCharStart(s, newStart), c = k;
        if (!isUnicodeWhiteSpace(decodeUtf8(s, c)))
          break;
        newStart = k;
      }
      start = std::max(newStart, startOffset);
    }
    if (tok.rstrip) {
      while (stop < n) {
        size_t k = stop;
        if (!isUnicodeWhiteSpace(decodeUtf8(s, k)))
          break;
        stop = k;
      }
      i = std::max(i, stop);
    }
    if (startOffset < start)
      out.push_back({uint32_t(startOffset), uint32_t(start), -1});
    out.push_back({uint32_t(start), uint32_t(stop), tok.id});
    startOffset = stop;
  }
  if (startOffset < n)
    out.push_back({uint32_t(startOffset), uint32_t(n), -1});
}

} // namespace fm::tok
