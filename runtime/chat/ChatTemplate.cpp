// fm::ChatTemplate: the public face of the chat template engine; turns JSON
// and options into template variables and every TemplateError into a
// Status naming the template and the line.
#include "fm/chat_template.h"

#include "chat/Render.h"
#include "chat/Template.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <ctime>

namespace fm {
namespace {

chat::Value fromJson(const rapidjson::Value &j) {
  using chat::Value;
  switch (j.GetType()) {
  case rapidjson::kNullType:
    return Value::none();
  case rapidjson::kFalseType:
    return Value::boolean(false);
  case rapidjson::kTrueType:
    return Value::boolean(true);
  case rapidjson::kStringType:
    return Value::string(std::string(j.GetString(), j.GetStringLength()));
  case rapidjson::kNumberType:
    if (j.IsInt64())
      return Value::integer(j.GetInt64());
    return Value::number(j.GetDouble());
  case rapidjson::kArrayType: {
    chat::List l;
    for (const auto &x : j.GetArray())
      l.push_back(fromJson(x));
    return Value::makeList(std::move(l));
  }
  case rapidjson::kObjectType: {
    Value d = Value::makeDict();
    for (auto it = j.MemberBegin(); it != j.MemberEnd(); ++it)
      d.dict->set(std::string(it->name.GetString(), it->name.GetStringLength()),
                  fromJson(it->value));
    return d;
  }
  }
  return Value::none();
}

Status parseObject(std::string_view json, const std::string &what,
                   chat::Value *out) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
  if (doc.HasParseError())
    return Status::error(what + ": invalid JSON at byte " +
                         std::to_string(doc.GetErrorOffset()) + ": " +
                         rapidjson::GetParseError_En(doc.GetParseError()));
  if (!doc.IsObject())
    return Status::error(what + ": must be a JSON object");
  *out = fromJson(doc);
  return Status::ok();
}

// The variables transformers passes, before the caller's.
chat::Value baseGlobals(const ChatTemplateOptions &o) {
  using chat::Value;
  Value g = Value::makeDict();
  g.dict->set("tools", Value::none());
  g.dict->set("documents", Value::none());
  g.dict->set("add_generation_prompt", Value::boolean(o.addGenerationPrompt));
  auto token = [&](const char *name, const std::string &v) {
    if (!v.empty())
      g.dict->set(name, Value::string(v));
  };
  token("bos_token", o.bosToken);
  token("eos_token", o.eosToken);
  token("unk_token", o.unkToken);
  token("pad_token", o.padToken);
  return g;
}

} // namespace

Expected<ChatTemplate> ChatTemplate::compile(std::string_view source,
                                             const std::string &name) {
  ChatTemplate t;
  t.name_ = name;
  try {
    t.nodes_ = std::make_shared<const chat::NodeList>(
        chat::parse(std::string(source)));
  } catch (const chat::TemplateError &e) {
    return Status::error(name + " line " + std::to_string(e.line) + ": " +
                         e.what());
  }
  return t;
}

Expected<std::string>
ChatTemplate::render(const std::vector<ChatMessage> &messages,
                     const ChatTemplateOptions &options) const {
  chat::Value g = baseGlobals(options);
  chat::List list;
  for (const ChatMessage &m : messages) {
    chat::Value d = chat::Value::makeDict();
    d.dict->set("role", chat::Value::string(m.role));
    d.dict->set("content", chat::Value::string(m.content));
    list.push_back(d);
  }
  g.dict->set("messages", chat::Value::makeList(std::move(list)));
  if (!options.extraJson.empty()) {
    chat::Value extra;
    FM_RETURN_IF_ERROR(parseObject(options.extraJson, name_ + " variables", &extra));
    for (const auto &kv : extra.dict->items)
      g.dict->set(kv.first, kv.second);
  }
  chat::RenderLimits limits;
  limits.maxOutputBytes = options.maxOutputBytes;
  limits.maxSteps = options.maxSteps;
  std::time_t now = options.now ? static_cast<std::time_t>(*options.now)
                                : std::time(nullptr);
  try {
    return chat::render(*nodes_, g, now, limits);
  } catch (const chat::TemplateError &e) {
    return Status::error(name_ + (e.line ? " line " + std::to_string(e.line) : "") +
                         ": " + e.what());
  }
}

Expected<std::string>
ChatTemplate::renderJson(std::string_view contextJson,
                         const ChatTemplateOptions &options) const {
  chat::Value g = baseGlobals(options);
  chat::Value ctx;
  FM_RETURN_IF_ERROR(parseObject(contextJson, name_ + " variables", &ctx));
  for (const auto &kv : ctx.dict->items)
    g.dict->set(kv.first, kv.second);
  if (!options.extraJson.empty()) {
    chat::Value extra;
    FM_RETURN_IF_ERROR(parseObject(options.extraJson, name_ + " variables", &extra));
    for (const auto &kv : extra.dict->items)
      g.dict->set(kv.first, kv.second);
  }
  chat::RenderLimits limits;
  limits.maxOutputBytes = options.maxOutputBytes;
  limits.maxSteps = options.maxSteps;
  std::time_t now = options.now ? static_cast<std::time_t>(*options.now)
                                : std::time(nullptr);
  try {
    return chat::render(*nodes_, g, now, limits);
  } catch (const chat::TemplateError &e) {
    return Status::error(name_ + (e.line ? " line " + std::to_string(e.line) : "") +
                         ": " + e.what());
  }
}

} // namespace fm
