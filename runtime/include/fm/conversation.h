// fm::Conversation: a chat over a Session, rendered every turn with the
// model's own chat template (tokenizer_config.json's chat_template), with
// only the tokens after what the KV cache already holds prefilled.
#pragma once

#include "fm/chat_template.h"
#include "fm/runtime.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fm {

struct ConversationOptions {
  /// A system message first (empty: none).
  std::string system;
  /// More template variables, a JSON object (enable_thinking, tools, ...).
  std::string extraJson;
};

/// The template variables a tokenizer gives its chat template (bos_token,
/// eos_token, unk_token, pad_token), with the generation prompt: what
/// transformers' apply_chat_template passes.
ChatTemplateOptions chatTemplateOptions(const Tokenizer &tokenizer);

/// What one turn did.
struct ChatTurn {
  /// The assistant's reply (its text joins the conversation).
  Generation reply;
  /// The conversation as rendered and encoded for this turn, the generation
  /// prompt included.
  std::vector<int32_t> context;
  /// context.size().
  int64_t contextTokens = 0;
  /// Of those, the ones the KV cache already held: the longest common
  /// prefix with Session::tokens() (one less when that is all of them, so
  /// that the last one gives the next token's logits).
  int64_t reusedTokens = 0;
  /// Prefilled this turn: contextTokens - reusedTokens.
  int64_t prefilledTokens = 0;
  /// Images whose placeholders were among the prefilled tokens (their kept
  /// tokens, not encoded again).
  int64_t prefilledImages = 0;
};

/// Every turn renders the whole conversation with the template, encodes it
/// and prefills only what follows the longest common prefix with the
/// session's context (Session::keepPrefix), so a template that rewrites
/// earlier turns (Llama 3 trims them, Qwen3 drops earlier thinking) or a
/// reply whose text encodes differently from the sampled ids stays exact.
/// The session must outlive the conversation; use one at a time on it.
class Conversation {
public:
  /// Takes the tokenizer and chat template of the session's model; an error
  /// when the artifact has no tokenizer or no chat template.
  static Expected<Conversation> start(Session &session,
                                      const ConversationOptions &options = {});

  /// Adds the user's turn, renders the conversation with the generation
  /// prompt, prefills what the cache lacks and generates the reply
  /// (Session::generateText: streamed to `callback`, ended by the model's
  /// stop ids, `options`' stop strings or maxNewTokens), which joins the
  /// conversation as the assistant's turn. On an error the conversation is
  /// as it was before the call.
  Expected<ChatTurn> say(const std::string &user, Sampler &sampler,
                         const GenerateOptions &options = {},
                         const TextCallback &callback = {});

  /// A VLM's image for the user turns' `<image>` markers (fm/image_prompt.h):
  /// encoded now, once (Session::encodeImage), and its tokens kept for as
  /// long as the conversation lasts. Images are taken by the markers of the
  /// turns said after them, in order: the first marker not yet taken takes
  /// the first image not yet taken. Only a user turn's markers take images:
  /// `<image>` in the system text or a reply stays text. The template renders
  /// the user's markers as a private-use sentinel (fm/image_prompt.h); in the
  /// rendered conversation each becomes the image token's text once per
  /// image token (as Hugging Face's processors expand it) before it is
  /// encoded. The image token's text itself is refused in a user turn and in
  /// the system text (it would be a placeholder without an image), and a
  /// reply never samples the placeholder id. When the cache
  /// keeps an image's placeholders its tokens are not needed again; when a
  /// re-rendering prefills them anew, the kept tokens go in
  /// (Session::addImageTokens). Returns the image's tokens, kept by the
  /// conversation for as long as it lasts.
  Expected<ImageTokens> addImage(const float *image, int64_t count);
  /// Images added, and of those the ones the turns' markers have taken.
  int64_t images() const { return static_cast<int64_t>(images_.size()); }
  int64_t imagesTaken() const { return taken_; }

  const std::vector<ChatMessage> &messages() const { return messages_; }
  /// The conversation as the template renders it now, with the generation
  /// prompt.
  Expected<std::string> render() const;

private:
  Conversation() = default;
  Session *session_ = nullptr;
  Tokenizer tokenizer_;
  ChatTemplate template_;
  ChatTemplateOptions templateOptions_;
  std::vector<ChatMessage> messages_;
  std::string imageText_;                 // the image token's text ("": no VLM)
  std::vector<std::vector<float>> images_; // each image's tokens
  int64_t taken_ = 0;
};

} // namespace fm
