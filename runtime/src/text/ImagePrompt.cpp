// `<image>` markers in prompt text (fm/image_prompt.h).
#include "fm/image_prompt.h"

namespace fm {

int64_t countImageMarkers(std::string_view text) {
  int64_t n = 0;
  for (size_t at = text.find(kImageMarker); at != std::string_view::npos;
       at = text.find(kImageMarker, at + kImageMarker.size()))
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
                               const std::string &tokenText, int64_t perImage) {
  std::string run;
  for (int64_t i = 0; i < perImage; ++i)
    run += tokenText;
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(kImageMarker); at != std::string_view::npos;
       at = text.find(kImageMarker, from)) {
    out.append(text.substr(from, at - from));
    out += run;
    from = at + kImageMarker.size();
  }
  out.append(text.substr(from));
  return out;
}

} // namespace fm
