// Stop strings for streamed text: holds back what may be the start of a
// stop string, and ends the text right before the first one it reaches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fm::rt {

class StopStrings {
public:
  /// Empty strings are dropped (they would stop before anything).
  explicit StopStrings(const std::vector<std::string> &stops);

  /// Adds `text` and returns what may be handed out now: everything but a
  /// tail that is a proper prefix of a stop string, or, once a stop string
  /// appears (possibly across pushes), the text before the one that
  /// completed first (the earliest end; the longer of two ending together),
  /// after which stopped() is true and the rest is dropped.
  std::string push(std::string_view text);
  /// At the end of the text: the held-back tail (a stop string did not
  /// complete).
  std::string finish();
  bool stopped() const { return stopped_; }
  bool empty() const { return stops_.empty(); }

private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

} // namespace fm::rt
