// fm::Conversation (fm/conversation.h).
#include "fm/conversation.h"

#include <algorithm>

namespace fm {

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
  c.templateOptions_.addGenerationPrompt = true;
  c.templateOptions_.bosToken = tokenizer->bosToken();
  c.templateOptions_.eosToken = tokenizer->eosToken();
  c.templateOptions_.unkToken = tokenizer->unkToken();
  c.templateOptions_.padToken = tokenizer->padToken();
  c.templateOptions_.extraJson = options.extraJson;
  if (!options.system.empty())
    c.messages_.push_back({"system", options.system});
  return c;
}

Expected<std::string> Conversation::render() const {
  return template_.render(messages_, templateOptions_);
}

Expected<ChatTurn> Conversation::say(const std::string &user, Sampler &sampler,
                                     const GenerateOptions &options,
                                     const TextCallback &callback) {
  messages_.push_back({"user", user});
  auto undo = [&](const Status &s) {
    messages_.pop_back();
    return s;
  };
  Expected<std::string> text = render();
  if (!text)
    return undo(text.status());
  Expected<std::vector<TokenId>> ids = tokenizer_.encode(*text, false);
  if (!ids)
    return undo(ids.status());
  if (ids->empty())
    return undo(Status::error(session_->model().name() +
                              ": the chat template rendered no tokens"));

  // What the cache holds and the new rendering share.
  const std::vector<int32_t> &cached = session_->tokens();
  const size_t common =
      std::mismatch(cached.begin(),
                    cached.begin() + std::min(cached.size(), ids->size()),
                    ids->begin())
          .first -
      cached.begin();
  const size_t keep = common == ids->size() ? common - 1 : common;
  if (Status s = session_->keepPrefix(static_cast<int64_t>(keep)); !s)
    return undo(s);
  const std::vector<int32_t> rest(ids->begin() + static_cast<long>(keep),
                                  ids->end());
  Expected<Generation> reply =
      session_->generateText(rest, sampler, options, callback);
  if (!reply)
    return undo(reply.status());

  ChatTurn turn;
  turn.contextTokens = static_cast<int64_t>(ids->size());
  turn.reusedTokens = static_cast<int64_t>(keep);
  turn.prefilledTokens = static_cast<int64_t>(rest.size());
  turn.reply = std::move(*reply);
  turn.context = std::move(*ids);
  messages_.push_back({"assistant", turn.reply.text});
  return turn;
}

} // namespace fm
