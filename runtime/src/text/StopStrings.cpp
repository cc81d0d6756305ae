// Stop strings for streamed text (StopStrings.h).
#include "text/StopStrings.h"

#include <algorithm>

namespace fm::rt {

StopStrings::StopStrings(const std::vector<std::string> &stops) {
  for (const std::string &s : stops)
    if (!s.empty())
      stops_.push_back(s);
}

std::string StopStrings::push(std::string_view text) {
  if (stopped_)
    return {};
  held_.append(text.data(), text.size());
  // The stop string completed first (the earliest end; of two ending
  // together, the longer): held_ held no complete one before this push, so
  // any occurrence ends in the new text. Cutting where the first completed
  // one starts makes the result independent of how the text is cut into
  // pieces.
  size_t first = std::string::npos, end = std::string::npos;
  for (const std::string &s : stops_) {
    const size_t at = held_.find(s);
    if (at == std::string::npos)
      continue;
    if (at + s.size() < end || (at + s.size() == end && at < first)) {
      first = at;
      end = at + s.size();
    }
  }
  if (first != std::string::npos) {
    std::string out = held_.substr(0, first);
    held_.clear();
    stopped_ = true;
    return out;
  }
  // Hold back the longest tail that a stop string starts with.
  size_t keep = 0;
  for (const std::string &s : stops_) {
    const size_t most = std::min(s.size() - 1, held_.size());
    for (size_t k = most; k > keep; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::finish() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

} // namespace fm::rt
