// fm::ToolCallStream: the text a tool-calling generation streams, split into the free text
// (handed on as soon as no later text can make it part of the call's opener) and the call.
#pragma once

#include "fm/guided.h"

#include <string>
#include <string_view>

namespace fm {

/// Follows the text of one generation under a ToolCallDecoder, piece by piece as
/// Session::generate's TextCallback hands it out (whole UTF-8 characters), so that the free
/// text can be printed while it is generated: push() returns the text that is free for good.
/// What might still become the opener (a trailing "<tool" or `{"na`) is held back until the
/// next piece settles it; from the opener on, nothing is free text. The opener is ASCII, so a
/// cut before it never splits a character. The call itself is the ToolCallDecoder's
/// (callText()): this class only says where the free text ends.
class ToolCallStream {
public:
  /// `opener`: ToolCallSyntax::opener. With ToolChoice::Required every piece is the call's.
  ToolCallStream(std::string opener, ToolChoice choice);

  /// The free text that `piece` settles (possibly empty; empty once the call opened).
  std::string push(std::string_view piece);
  /// The text reached the opener (or the call was required).
  bool inCall() const { return inCall_; }
  /// The constraint opened the call (ToolCallDecoder::inCall()): what is held back and what
  /// follows is the call's, whatever the text said.
  void close();
  /// At the end of a generation without a call: the text not handed out yet (a partial opener
  /// that never completed, or the text from an opener the constraint did not take); then empty.
  /// Empty after close() and for a required call.
  std::string rest();
  /// What push() and rest() handed out is empty or ends a line: the call's line may follow it
  /// without a newline of its own.
  bool atLineStart() const { return atLineStart_; }

private:
  std::string handOut(std::string text);

  std::string opener_;
  std::string held_; // text not handed out: a possible start of the opener, or the call's
  bool inCall_ = false;
  bool closed_ = false; // the call is the constraint's: pieces are dropped
  bool atLineStart_ = true;
};

} // namespace fm
