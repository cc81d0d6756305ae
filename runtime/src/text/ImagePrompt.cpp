// `<image>` markers in prompt text (fm/image_prompt.h).
#include "fm/image_prompt.h"

namespace fm {

int64_t countImageMarkers(std::string_view text, std::string_view marker) {
  int64_t n = 0;
  for (size_t at = text.find(marker); at != std::string_view::npos;
       at = text.find(marker, at + marker.size()))
    ++n;
  return n;
}

Expected<std::string> imageTokenText(const Model &model,
                                     const Tokenizer &tokenizer) {
  const ImageEncoderInfo *e = model.imageEncoder();
  if (!e || e->imageTokenIndex < 0)
    return Status::error(model.name() + ": is no VLM (no image_token_index): "
                                        "its prompts take no images");
  const int32_t id = static_cast<int32_t>(e->imageTokenIndex);
  const std::string what = model.name() + ": image_token_index " +
                           std::to_string(id) + " ";
  for (const AddedTokenInfo &t : tokenizer.addedTokens()) {
    if (t.id != id)
      continue;
    Expected<std::vector<TokenId>> ids = tokenizer.encode(t.content, false);
    if (!ids)
      return ids.status();
    if (ids->size() != 1 || (*ids)[0] != id)
      return Status::error(what + "('" + t.content + "') does not encode to "
                           "itself in " + tokenizer.name() +
                           ", so an <image> marker cannot become its "
                           "placeholders: give the ids with --tokens");
    return t.content;
  }
  return Status::error(what + "is not an added token of " + tokenizer.name() +
                       ", so an <image> marker cannot become its "
                       "placeholders: give the ids with --tokens");
}

std::string expandImageMarkers(std::string_view text,
                               const std::string &tokenText, int64_t perImage,
                               std::string_view marker) {
  std::string run;
  for (int64_t i = 0; i < perImage; ++i)
    run += tokenText;
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(marker); at != std::string_view::npos;
       at = text.find(marker, from)) {
    out.append(text.substr(from, at - from));
    out += run;
    from = at + marker.size();
  }
  out.append(text.substr(from));
  return out;
}

Expected<std::string> imagePromptText(const Model &model, std::string_view prompt,
                                      int64_t images, std::string_view imagesNoun,
                                      bool *prepended) {
  if (prepended)
    *prepended = false;
  const ImageEncoderInfo *e = model.imageEncoder();
  if (!e || e->imageTokenIndex < 0) {
    if (images > 0)
      return Status::error(model.name() + " takes no images in a prompt (it is "
                                          "no VLM): " +
                           std::to_string(images) + " " + std::string(imagesNoun) +
                           (images == 1 ? " was" : " were") + " given");
    return std::string(prompt); // markers are plain text here
  }
  const int64_t markers = countImageMarkers(prompt);
  std::string text(prompt);
  if (markers == 0 && images > 0) {
    text.clear();
    for (int64_t i = 0; i < images; ++i)
      text += kImageMarker;
    text += prompt;
    if (prepended)
      *prepended = true;
  } else if (markers != images) {
    return Status::error("the prompt holds " + std::to_string(markers) + " " +
                         std::string(kImageMarker) + " marker" +
                         (markers == 1 ? "" : "s") + " but " +
                         std::to_string(images) + " " + std::string(imagesNoun) +
                         (images == 1 ? " was" : " were") +
                         " given: each marker takes the next image, in order");
  }
  if (images == 0)
    return text;
  Expected<Tokenizer> tokenizer = model.tokenizer();
  if (!tokenizer)
    return tokenizer.status();
  Expected<std::string> tokenText = imageTokenText(model, *tokenizer);
  if (!tokenText)
    return tokenText.status();
  return expandImageMarkers(text, *tokenText, e->tokens);
}

bool holdsOutsideMarkers(std::string_view text, std::string_view tokenText) {
  if (tokenText.empty())
    return false;
  size_t from = 0;
  for (size_t at = text.find(kImageMarker);; at = text.find(kImageMarker, from)) {
    const std::string_view piece =
        text.substr(from, at == std::string_view::npos ? std::string_view::npos
                                                       : at - from);
    if (piece.find(tokenText) != std::string_view::npos)
      return true;
    if (at == std::string_view::npos)
      return false;
    from = at + kImageMarker.size();
  }
}

std::string withoutImageText(std::string reply, std::string_view tokenText) {
  if (tokenText.empty())
    return reply;
  // Searched again from the cut: removing one can join another.
  for (size_t at = reply.find(tokenText); at != std::string::npos;
       at = reply.find(tokenText, at >= tokenText.size() ? at - tokenText.size() + 1 : 0))
    reply.erase(at, tokenText.size());
  return reply;
}

std::string chatImageSentinel(const std::vector<std::string_view> &texts) {
  for (uint32_t cp = 0xE000; cp <= 0xF8FF; ++cp) {
    // UTF-8 of a three-byte code point.
    const char utf8[3] = {static_cast<char>(0xE0 | (cp >> 12)),
                          static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                          static_cast<char>(0x80 | (cp & 0x3F))};
    const std::string_view s(utf8, 3);
    bool used = false;
    for (std::string_view t : texts)
      if (t.find(s) != std::string_view::npos) {
        used = true;
        break;
      }
    if (!used)
      return std::string(s);
  }
  return {};
}

std::string markImages(std::string_view text, std::string_view sentinel) {
  return expandImageMarkers(text, std::string(sentinel), 1);
}

Expected<std::string> renderChatImages(const ChatTemplate &tmpl,
                                       std::string_view templateSource,
                                       const std::vector<ChatMessage> &messages,
                                       const ChatTemplateOptions &options,
                                       const std::string &tokenText,
                                       int64_t perImage, int64_t *markers) {
  std::vector<std::string_view> texts = {
      templateSource,   options.extraJson, options.bosToken,
      options.eosToken, options.unkToken,  options.padToken};
  for (const ChatMessage &m : messages)
    texts.push_back(m.content);
  const std::string sentinel = chatImageSentinel(texts);
  if (sentinel.empty())
    return Status::error("the conversation holds every private-use code point "
                         "U+E000..U+F8FF, so none is left to stand for its " +
                         std::string(kImageMarker) + " markers");
  std::vector<ChatMessage> marked = messages;
  for (ChatMessage &m : marked)
    if (m.role == "user")
      m.content = markImages(m.content, sentinel);
  Expected<std::string> text = tmpl.render(marked, options);
  if (!text)
    return text.status();
  *markers = countImageMarkers(*text, sentinel);
  return expandImageMarkers(*text, tokenText, perImage, sentinel);
}

} // namespace fm
