// fm::StreamDecoder: each token's contribution (tokenBytes), the whole-text
// Strip applied at the ends, and whole UTF-8 characters only.
#include "fm/tokenizer.h"

#include "tokenizer/TokenizerImpl.h"
#include "tokenizer/Utf8.h"

namespace fm {

StreamDecoder::StreamDecoder(const Tokenizer &tokenizer, bool skipSpecial)
    : impl_(tokenizer.impl_), skipSpecial_(skipSpecial) {}

Expected<std::string> StreamDecoder::push(TokenId id) {
  const tok::TokenizerImpl &t = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= t.strings.size() || !t.present[id])
    return Status::error(t.name + ": decode: id " + std::to_string(id) +
                         " is not in the vocabulary of " +
                         std::to_string(t.strings.size()) + " ids");
  if (skipSpecial_ && t.special[id])
    return std::string();
  if (first_)
    pending_ += t.contribution(id, true);
  else
    pending_ += t.contributions()[id];
  first_ = false;
  return emit(false);
}

std::string StreamDecoder::finish() {
  std::string out = emit(true);
  pending_.clear();
  return out;
}

std::string StreamDecoder::emit(bool final) {
  const tok::TokenizerImpl &t = *impl_;
  size_t held = 0; // trailing bytes kept back for a Strip of the text's end
  if (t.textCut) {
    const std::string &c = t.textCut->content;
    while (!pastStart_) {
      if (leadingCut_ >= t.textCut->start) {
        pastStart_ = true;
      } else if (pending_.compare(0, c.size(), c) == 0) {
        pending_.erase(0, c.size());
        ++leadingCut_;
      } else if (pending_.size() < c.size() &&
                 c.compare(0, pending_.size(), pending_) == 0 && !final) {
        return std::string(); // could still become the content character
      } else {
        pastStart_ = true;
      }
    }
    size_t end = pending_.size();
    for (size_t k = 0; k < t.textCut->stop && end >= c.size() &&
                       pending_.compare(end - c.size(), c.size(), c) == 0;
         ++k)
      end -= c.size();
    held = pending_.size() - end;
    if (final) {
      pending_.resize(end);
      held = 0;
    }
  }
  const auto *s = reinterpret_cast<const uint8_t *>(pending_.data());
  size_t n = pending_.size() - held, i = 0;
  std::string out;
  while (i < n) {
    tok::Utf8Scan r = tok::scanUtf8(s + i, n - i);
    if (r.length) {
      out.append(pending_, i, r.length);
      i += r.length;
    } else if (r.incomplete) {
      if (!final)
        break; // the rest of the character is still to come
      out += tok::kReplacementChar;
      i += r.incomplete;
    } else {
      out += tok::kReplacementChar;
      i += r.invalid;
    }
  }
  pending_.erase(0, i);
  return out;
}

} // namespace fm
