// fm/image_prompt.h: `<image>` markers in a VLM's prompt text, expanded into
// the model's image placeholder tokens before the text is encoded.
#pragma once

#include "fm/runtime.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fm {

/// The text that stands for one image in a prompt or a chat turn.
inline constexpr std::string_view kImageMarker = "<image>";

/// How many markers `text` holds (non-overlapping, left to right).
int64_t countImageMarkers(std::string_view text);

/// The text of a VLM's image placeholder token (ImageEncoderInfo::
/// imageTokenIndex) in its tokenizer: the added token with that id, checked
/// to encode to exactly that id. As Hugging Face's VLM processors do, a
/// marker becomes this text once per image token, and the whole prompt is
/// then encoded: added tokens split the text, so the ids around an image
/// are those of the text on either side. An error (naming the id) when the
/// model is no VLM or its tokenizer has no such added token.
Expected<std::string> imageTokenText(const Model &model,
                                     const Tokenizer &tokenizer);

/// `text` with every marker replaced by `tokenText` repeated `perImage`
/// times (ImageEncoderInfo::tokens).
std::string expandImageMarkers(std::string_view text,
                               const std::string &tokenText, int64_t perImage);

} // namespace fm
