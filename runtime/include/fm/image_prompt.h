// fm/image_prompt.h: `<image>` markers in a VLM's prompt text, expanded into
// the model's image placeholder tokens before the text is encoded.
#pragma once

#include "fm/chat_template.h"
#include "fm/runtime.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fm {

/// The text that stands for one image in a prompt or a chat turn.
inline constexpr std::string_view kImageMarker = "<image>";

/// How many markers `text` holds (non-overlapping, left to right); `marker`
/// is kImageMarker or a chat's sentinel (chatImageSentinel).
int64_t countImageMarkers(std::string_view text,
                          std::string_view marker = kImageMarker);

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
                               const std::string &tokenText, int64_t perImage,
                               std::string_view marker = kImageMarker);

/// A prompt's text for the tokenizer when `images` images go with it (a
/// VLM's Session::pendingImages, or images about to be encoded): each
/// kImageMarker takes the next image and becomes its placeholders
/// (expandImageMarkers); a prompt without markers gets all the images
/// before its text, and *prepended (may be null) says so. Errors: the
/// markers and the images differ in number (the message names both and
/// says "<count> <imagesNoun> was/were given"), or images come with a model
/// that is no VLM. A model that is no VLM keeps its markers as plain text.
Expected<std::string> imagePromptText(const Model &model, std::string_view prompt,
                                      int64_t images, std::string_view imagesNoun,
                                      bool *prepended = nullptr);

/// Whether `text` holds `tokenText` outside its kImageMarker markers: a user
/// turn that types the image token's text itself is refused, but a model
/// whose image token is the text `<image>` (llava's) still takes markers.
bool holdsOutsideMarkers(std::string_view text, std::string_view tokenText);

/// `reply` without the image token's text (removed until none is left): a
/// reply can spell it from plain tokens, and in a chat's history it would be
/// a placeholder without an image in every later turn.
std::string withoutImageText(std::string reply, std::string_view tokenText);

/// In a chat only the markers a user turn holds take images: a system text
/// or an assistant reply that holds `<image>` keeps it as plain text. So
/// the user turns' markers become a sentinel before the template renders,
/// and only the sentinel is counted and expanded afterwards. The sentinel
/// is one private-use code point (U+E000 ... U+F8FF), the first that none
/// of `texts` (every message's content, the template source, the special
/// tokens' text, the extra template variables) holds, chosen afresh for
/// each rendering; so a user who types U+E000 gets another sentinel, not a
/// marker. "" when every one of them occurs (no chat holds 6400 of them).
std::string chatImageSentinel(const std::vector<std::string_view> &texts);

/// `text` with its kImageMarker markers replaced by `sentinel`.
std::string markImages(std::string_view text, std::string_view sentinel);

/// A VLM chat's text for the tokenizer: `messages` rendered by `tmpl`
/// (compiled from `templateSource`) with each user turn's marker expanded
/// into `tokenText` x perImage, and `<image>` in any other text (system,
/// assistant, the template's own) left as it is. `*markers` is the number
/// of user markers the rendering holds (a template may drop or repeat
/// turns: the caller compares it with the images it has). An error when
/// the template fails or no sentinel is left.
Expected<std::string> renderChatImages(const ChatTemplate &tmpl,
                                       std::string_view templateSource,
                                       const std::vector<ChatMessage> &messages,
                                       const ChatTemplateOptions &options,
                                       const std::string &tokenText,
                                       int64_t perImage, int64_t *markers);

} // namespace fm
