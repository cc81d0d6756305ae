// The added tokens of a tokenizer.json and how they are cut out of the text
// before normalization (normalized: false) or after it (normalized: true),
// leftmost-longest with lstrip/rstrip/single_word (HF added_vocabulary.rs).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fm::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool singleWord = false;
  bool normalized = false;
};

/// A piece of text: an added token (id >= 0) or text to tokenize (id < 0).
struct Segment {
  uint32_t start, end;
  int32_t id;
};

/// A byte trie over the contents of some added tokens.
class AddedMatcher {
public:
  void build(const std::vector<AddedToken> &tokens, bool normalized);
  bool empty() const { return tokenCount_ == 0; }
  /// Cuts `text` into segments (offsets relative to `text`), appending to
  /// `out`; text segments are never empty.
  void split(std::string_view text, const std::vector<AddedToken> &tokens,
             std::vector<Segment> &out) const;

private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> edges; // sorted by byte
    int32_t token = -1;                             // index into tokens
  };
  int32_t child(int32_t node, uint8_t byte) const;
  std::vector<Node> nodes_;
  std::array<bool, 256> first_{};
  size_t tokenCount_ = 0;
};

} // namespace fm::tok
