// fm::Conversation (fm/conversation.h).
#include "fm/conversation.h"

#include "fm/image_prompt.h"

#include <algorithm>
#include <limits>

namespace fm {

ChatTemplateOptions chatTemplateOptions(const Tokenizer &tokenizer) {
  ChatTemplateOptions o;
  o.addGenerationPrompt = true;
  o.bosToken = tokenizer.bosToken();
  o.eosToken = tokenizer.eosToken();
  o.unkToken = tokenizer.unkToken();
  o.padToken = tokenizer.padToken();
  return o;
}

Expected<Conversation> Conversation::start(Session &session,
                                           const ConversationOptions &options) {
  if (!session.status())
    return session.status();
  const Model &model = session.model();
  Expected<Tokenizer> tokenizer = model.tokenizer();
  if (!tokenizer)
    return tokenizer.status();
  if (tokenizer->chatTemplate().empty())
    return Status::error(model.name() +
                         ": the tokenizer has no chat_template (its "
                         "tokenizer_config.json has none): chat needs one");
  Expected<ChatTemplate> compiled = ChatTemplate::compile(
      tokenizer->chatTemplate(), model.name() + ": chat_template");
  if (!compiled)
    return compiled.status();
  Conversation c;
  c.session_ = &session;
  c.tokenizer_ = *tokenizer;
  c.template_ = *compiled;
  c.templateOptions_ = chatTemplateOptions(*tokenizer);
  c.templateOptions_.extraJson = options.extraJson;
  if (!options.system.empty())
    c.messages_.push_back({"system", options.system});
  // A VLM's markers need its image token's text; a tokenizer without it
  // fails at the first image, not here (text-only chats still work).
  if (const ImageEncoderInfo *e = model.imageEncoder();
      e && e->imageTokenIndex >= 0)
    if (Expected<std::string> text = imageTokenText(model, *tokenizer); text)
      c.imageText_ = *text;
  // The image token's text is that token wherever it stands (HF's tokenizers
  // split added tokens out first): in the system text it would be a
  // placeholder without an image in every turn.
  if (!c.imageText_.empty() &&
      options.system.find(c.imageText_) != std::string::npos)
    return Status::error(model.name() + ": the system text holds the image "
                         "token's text '" + c.imageText_ +
                         "', which would be an image placeholder without an "
                         "image (only a user turn's " +
                         std::string(kImageMarker) + " marker takes an image)");
  return c;
}

Expected<ImageTokens> Conversation::addImage(const float *image, int64_t count) {
  const Model &model = session_->model();
  const ImageEncoderInfo *e = model.imageEncoder();
  if (!e || e->imageTokenIndex < 0 || imageText_.empty()) {
    Expected<std::string> text = imageTokenText(model, tokenizer_);
    return text ? Status::error(model.name() + ": cannot add an image")
                : text.status();
  }
  session_->clearImages();
  Expected<ImageTokens> tokens = session_->encodeImage(image, count);
  if (!tokens)
    return tokens.status();
  images_.emplace_back(tokens->data, tokens->data + tokens->rows * tokens->width);
  session_->clearImages(); // say() hands the session the images it prefills
  ImageTokens kept = *tokens;
  kept.data = images_.back().data();
  return kept;
}

Expected<std::string> Conversation::render() const {
  return template_.render(messages_, templateOptions_);
}

Expected<ChatTurn> Conversation::say(const std::string &user, Sampler &sampler,
                                     const GenerateOptions &options,
                                     const TextCallback &callback) {
  const std::string &name = session_->model().name();
  // A VLM's markers take the next images; other models' are plain text.
  const ImageEncoderInfo *e = session_->model().imageEncoder();
  const bool vlm = e && e->imageTokenIndex >= 0;
  const int64_t markers = vlm ? countImageMarkers(user) : 0;
  const int64_t turnNo =
      1 + std::count_if(messages_.begin(), messages_.end(),
                        [](const ChatMessage &m) { return m.role == "user"; });
  if (vlm && holdsOutsideMarkers(user, imageText_))
    return Status::error(
        name + ": user turn " + std::to_string(turnNo) +
        " holds the image token's text '" + imageText_ +
        "' itself, which would be an image placeholder without an image: "
        "write " + std::string(kImageMarker) + " for an image");
  const int64_t left = images() - taken_;
  if (markers > left)
    return Status::error(
        name + ": the turn holds " + std::to_string(markers) + " " +
        std::string(kImageMarker) + " marker" + (markers == 1 ? "" : "s") +
        " but " + std::to_string(left) + " of the " + std::to_string(images()) +
        " images added are left for it");
  const int64_t inUse = taken_ + markers;
  messages_.push_back({"user", user});
  auto undo = [&](const Status &s) {
    messages_.pop_back();
    session_->clearImages();
    return s;
  };
  // Only the user turns' markers take images (fm/image_prompt.h): `<image>`
  // in a system text or a reply stays text.
  int64_t rendered = 0;
  Expected<std::string> text =
      vlm ? renderChatImages(template_, tokenizer_.chatTemplate(), messages_,
                             templateOptions_, imageText_, e->tokens, &rendered)
          : render();
  if (!text)
    return undo(text.status());
  if (vlm && rendered != inUse)
    return undo(Status::error(
        name + ": the chat template rendered " + std::to_string(rendered) +
        " of the user turns' " + std::string(kImageMarker) +
        " markers for the " + std::to_string(inUse) +
        " images of the conversation's turns"));
  Expected<std::vector<TokenId>> ids = tokenizer_.encode(*text, false);
  if (!ids)
    return undo(ids.status());
  if (ids->empty())
    return undo(Status::error(name + ": the chat template rendered no tokens"));
  const int32_t placeholder = vlm ? static_cast<int32_t>(e->imageTokenIndex) : -1;
  if (vlm && std::count(ids->begin(), ids->end(), placeholder) != inUse * e->tokens)
    return undo(Status::error(
        name + ": the conversation encodes to " +
        std::to_string(std::count(ids->begin(), ids->end(), placeholder)) +
        " image placeholders (token " + std::to_string(placeholder) +
        ") for " + std::to_string(inUse) + " images of " +
        std::to_string(e->tokens) + ": its text holds the image token's "
        "text '" + imageText_ + "' itself; write " + std::string(kImageMarker)));

  // What the cache holds and the new rendering share.
  const std::vector<int32_t> &cached = session_->tokens();
  const size_t common =
      std::mismatch(cached.begin(),
                    cached.begin() + std::min(cached.size(), ids->size()),
                    ids->begin())
          .first -
      cached.begin();
  size_t keep = common == ids->size() ? common - 1 : common;
  // An image is prefilled whole: a cut inside its placeholders moves to
  // their start. The images the kept prefix does not hold go in again, in
  // order, from their kept tokens. (A common prefix holds the same images:
  // the turns' images are numbered in the order the template renders them,
  // and the placeholders before a position are the same in both.)
  int64_t keptImages = 0, prefilledImages = 0;
  if (vlm) {
    while (keep > 0 && (*ids)[keep] == placeholder &&
           (*ids)[keep - 1] == placeholder)
      --keep;
    keptImages = std::count(ids->begin(), ids->begin() + static_cast<long>(keep),
                            placeholder) / e->tokens;
    session_->clearImages();
    for (int64_t k = keptImages; k < inUse; ++k) {
      const std::vector<float> &t = images_[static_cast<size_t>(k)];
      if (Status s = session_->addImageTokens(t.data(), static_cast<int64_t>(t.size())); !s)
        return undo(s);
      ++prefilledImages;
    }
  }
  if (Status s = session_->keepPrefix(static_cast<int64_t>(keep)); !s)
    return undo(s);
  const std::vector<int32_t> rest(ids->begin() + static_cast<long>(keep),
                                  ids->end());
  // A reply never holds the placeholder: its text, the image token's, would
  // be a placeholder without an image when the next turn renders.
  GenerateOptions generate = options;
  if (vlm)
    generate.logitsProcessor = [inner = options.logitsProcessor, placeholder](
                                   const std::vector<int32_t> &generated,
                                   float *logits, int64_t vocab) {
      if (inner)
        if (Status s = inner(generated, logits, vocab); !s)
          return s;
      if (placeholder < vocab)
        logits[placeholder] = -std::numeric_limits<float>::infinity();
      return Status::ok();
    };
  Expected<Generation> reply =
      session_->generateText(rest, sampler, generate, callback);
  if (!reply)
    return undo(reply.status());

  ChatTurn turn;
  turn.contextTokens = static_cast<int64_t>(ids->size());
  turn.reusedTokens = static_cast<int64_t>(keep);
  turn.prefilledTokens = static_cast<int64_t>(rest.size());
  turn.prefilledImages = prefilledImages;
  taken_ = inUse;
  turn.reply = std::move(*reply);
  turn.context = std::move(*ids);
  // A reply can spell the image token's text from plain tokens: the
  // history holds it without (fm/image_prompt.h); the caller gets it whole.
  messages_.push_back(
      {"assistant", vlm ? withoutImageText(turn.reply.text, imageText_)
                        : turn.reply.text});
  return turn;
}

} // namespace fm
