// The text end of a generation, shared by Session::generateText and
// fm::generateTextSpeculative: which ids stop it or have no text, and each
// token taken turned into streamed text (stop ids, the streaming decoder,
// stop strings, the caller's callback).
#pragma once

#include "fm/runtime.h"
#include "fm/tokenizer.h"
#include "text/StopStrings.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fm::rt {

/// What a text generation of `prompt` with `options` starts from: the
/// model's tokenizer, the ids that end it (options' stopIds, and the
/// model's unless useModelStopIds is off) as a table by id, and the ids the
/// tokenizer has no text for (a padded embedding's, holes), which are never
/// sampled. An error names the model and what is wrong: an empty prompt, a
/// negative maxNewTokens, no tokenizer, a stop id out of range.
struct TextIds {
  Tokenizer tokenizer;
  std::vector<uint8_t> isStop;
  std::vector<int32_t> textless;
};
Expected<TextIds> textIds(const Model &model, const std::vector<int32_t> &prompt,
                          const GenerateOptions &options);

/// Takes the tokens of one generation in order and hands its text to the
/// callback as generateText does; `g` (tokens, text, stop) is filled as it
/// goes and must outlive this.
class TextOutput {
public:
  TextOutput(const Tokenizer &tokenizer, const GenerateOptions &options,
             const std::vector<uint8_t> &isStop, const TextCallback &callback,
             Generation *g);
  /// Appends `token` to g->tokens and its text to the output: false when
  /// the generation ends with it (g->stop says why: a stop id, a stop
  /// string, the callback).
  Expected<bool> push(int32_t token);
  /// After the last token: an unfinished character at the end, and text
  /// held back for a stop string that did not complete, unless a stop
  /// string or the callback ended the text.
  void finish();

private:
  void emit(const std::string &piece);

  const std::vector<uint8_t> &isStop_;
  const TextCallback &callback_;
  Generation *g_;
  StreamDecoder decoder_;
  StopStrings stops_;
  bool listening_ = true; // the callback has not said stop
};

} // namespace fm::rt
