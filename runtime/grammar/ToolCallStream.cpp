// fm::ToolCallStream (fm/tool_call_stream.h).
#include "fm/tool_call_stream.h"

#include <algorithm>

namespace fm {

ToolCallStream::ToolCallStream(std::string opener, ToolChoice choice)
    : opener_(std::move(opener)), inCall_(choice == ToolChoice::Required),
      closed_(choice == ToolChoice::Required) {}

std::string ToolCallStream::handOut(std::string text) {
  if (!text.empty())
    atLineStart_ = text.back() == '\n';
  return text;
}

std::string ToolCallStream::push(std::string_view piece) {
  if (closed_)
    return std::string();
  held_.append(piece.data(), piece.size());
  if (inCall_)
    return std::string(); // kept for rest(), should the constraint not take the call
  if (opener_.empty()) {
    std::string free;
    free.swap(held_);
    return handOut(std::move(free));
  }
  // held_ is at most a proper prefix of the opener followed by `piece`: any occurrence is new.
  const size_t at = held_.find(opener_);
  if (at != std::string::npos) {
    inCall_ = true;
    std::string free = held_.substr(0, at);
    held_.erase(0, at);
    return handOut(std::move(free));
  }
  // Hold back the longest suffix that is a proper prefix of the opener.
  size_t keep = std::min(opener_.size() - 1, held_.size());
  while (keep > 0 && held_.compare(held_.size() - keep, keep, opener_, 0, keep) != 0)
    --keep;
  std::string free = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return handOut(std::move(free));
}

void ToolCallStream::close() {
  inCall_ = closed_ = true;
  held_.clear();
}

std::string ToolCallStream::rest() {
  std::string text;
  text.swap(held_);
  return handOut(std::move(text));
}

} // namespace fm
