// fm.h: tokenizers (encode, decode, chat templates).
#include "capi/Objects.h"

#include <cctype>

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

extern "C" {

fm_status fm_model_tokenizer(const fm_model *model, fm_tokenizer **tokenizer) {
  return guarded("fm_model_tokenizer", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (!tokenizer)
      return call.null("tokenizer");
    const fm::Model &m = *model->model;
    if (!m.hasTokenizer())
      return call.fail(FM_STATUS_UNSUPPORTED,
                       m.name() + " embeds no tokenizer (fmc compile embeds the "
                                  "tokenizer.json beside the checkpoint)");
    fm::Expected<fm::Tokenizer> t = m.tokenizer();
    if (!t)
      return call.fail(t.status());
    *tokenizer = fm::capi::publish(new fm_tokenizer(*t));
    return FM_STATUS_OK;
  });
}

fm_status fm_tokenizer_open(const char *path, fm_tokenizer **tokenizer) {
  return guarded("fm_tokenizer_open", [&](Call &call) {
    if (!path)
      return call.null("path");
    if (!tokenizer)
      return call.null("tokenizer");
    fm::Expected<fm::Tokenizer> t = fm::Tokenizer::open(path);
    if (!t)
      return call.fail(t.status(), FM_STATUS_LOAD_FAILED);
    *tokenizer = fm::capi::publish(new fm_tokenizer(*t));
    return FM_STATUS_OK;
  });
}

fm_status fm_tokenizer_free(fm_tokenizer *tokenizer) {
  return fm::capi::freeHandle("fm_tokenizer_free", tokenizer, Kind::Tokenizer,
                              "tokenizer");
}

const char *fm_tokenizer_error(const fm_tokenizer *tokenizer) {
  return fm::capi::handleError(tokenizer, tokenizer, Kind::Tokenizer);
}

fm_status fm_tokenizer_info_get(const fm_tokenizer *tokenizer, fm_tokenizer_info *info) {
  return guarded("fm_tokenizer_info_get", [&](Call &call) {
    if (fm_status s = call.handle(tokenizer, Kind::Tokenizer, "tokenizer"))
      return s;
    if (fm_status s = call.params(info, "info"))
      return s;
    const fm::Tokenizer &t = tokenizer->tokenizer;
    info->vocab_size = static_cast<int64_t>(t.vocabSize());
    info->bos_id = t.bosId().value_or(-1);
    info->eos_id = t.eosId().value_or(-1);
    info->has_chat_template = !t.chatTemplate().empty();
    return FM_STATUS_OK;
  });
}

fm_status fm_tokenizer_encode(const fm_tokenizer *tokenizer, const char *text,
                              size_t size, int add_special, int32_t *ids,
                              size_t capacity, size_t *n) {
  return guarded("fm_tokenizer_encode", [&](Call &call) {
    if (fm_status s = call.handle(tokenizer, Kind::Tokenizer, "tokenizer"))
      return s;
    if (!text && size > 0)
      return call.null("text");
    if (!n)
      return call.null("n");
    auto out = tokenizer->tokenizer.encode(std::string_view(text ? text : "", size),
                                           add_special != 0);
    if (!out)
      return call.fail(out.status());
    *n = out->size();
    if (capacity < out->size())
      return call.fail(FM_STATUS_BUFFER_TOO_SMALL,
                       "ids needs " + std::to_string(out->size()) +
                           " ids; capacity is " + std::to_string(capacity));
    if (!ids && !out->empty())
      return call.null("ids");
    std::copy(out->begin(), out->end(), ids);
    return FM_STATUS_OK;
  });
}

fm_status fm_tokenizer_decode(const fm_tokenizer *tokenizer, const int32_t *ids,
                              size_t n, int skip_special, char *text,
                              size_t capacity, size_t *size) {
  return guarded("fm_tokenizer_decode", [&](Call &call) {
    if (fm_status s = call.handle(tokenizer, Kind::Tokenizer, "tokenizer"))
      return s;
    if (!ids && n > 0)
      return call.null("ids");
    if (!size)
      return call.null("size");
    auto out = tokenizer->tokenizer.decode(std::vector<int32_t>(ids, ids + n),
                                           skip_special != 0);
    if (!out)
      return call.fail(out.status());
    return fm::capi::copyOut(call, *out, text, capacity, size, "text");
  });
}

fm_status fm_tokenizer_apply_chat_template(const fm_tokenizer *tokenizer,
                                           const char *messages_json,
                                           int add_generation_prompt, char *text,
                                           size_t capacity, size_t *size) {
  return guarded("fm_tokenizer_apply_chat_template", [&](Call &call) {
    if (fm_status s = call.handle(tokenizer, Kind::Tokenizer, "tokenizer"))
      return s;
    if (!messages_json)
      return call.null("messages_json");
    if (!size)
      return call.null("size");
    fm_tokenizer *t = const_cast<fm_tokenizer *>(tokenizer); // the compiled template, once
    const fm::Tokenizer &tok = t->tokenizer;
    if (tok.chatTemplate().empty())
      return call.fail(FM_STATUS_UNSUPPORTED,
                       tok.name() + " has no chat_template (its "
                                    "tokenizer_config.json has none)");
    std::call_once(t->templateOnce, [&] {
      t->chatTemplate.emplace(
          fm::ChatTemplate::compile(tok.chatTemplate(), tok.name() + ": chat_template"));
    });
    if (!*t->chatTemplate)
      return call.fail(t->chatTemplate->status());
    fm::ChatTemplateOptions options = fm::chatTemplateOptions(tok);
    options.addGenerationPrompt = add_generation_prompt != 0;
    // A list of messages, or an object of every variable.
    const char *first = messages_json;
    while (*first && std::isspace(static_cast<unsigned char>(*first)))
      ++first;
    const std::string context = *first == '['
                                    ? "{\"messages\": " + std::string(messages_json) + "}"
                                    : std::string(messages_json);
    fm::Expected<std::string> rendered = (**t->chatTemplate).renderJson(context, options);
    if (!rendered)
      return call.fail(FM_STATUS_ERROR, "messages_json: " + rendered.message());
    return fm::capi::copyOut(call, *rendered, text, capacity, size, "text");
  });
}

} // extern "C"
