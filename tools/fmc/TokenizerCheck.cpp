// The tokenizer `fmc compile` embeds (TokenizerCheck.h).
#include "TokenizerCheck.h"

#include "fm/chat_template.h"
#include "fm/tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <vector>

namespace fm::cli {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string join(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

llvm::Expected<std::string> readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(path + ": cannot read: " + buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

/// One id that ends a generation, and where it came from.
struct StopId {
  int32_t id;
  std::string why;
};

/// The bos/eos/pad ids of a model config (config.json,
/// generation_config.json): each in the model's range, bos and eos tokens
/// of the tokenizer; eos ids become stop ids.
llvm::Error checkConfigIds(const std::string &path, const fm::Tokenizer &tok,
                           int64_t vocabSize, std::vector<StopId> &stops) {
  if (!llvm::sys::fs::exists(path))
    return llvm::Error::success();
  auto text = readFile(path);
  if (!text)
    return text.takeError();
  auto json = llvm::json::parse(*text);
  if (!json)
    return error(path + ": " + llvm::toString(json.takeError()));
  const llvm::json::Object *obj = json->getAsObject();
  if (!obj)
    return error(path + ": not a JSON object");
  for (const char *field : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    const llvm::json::Value *v = obj->get(field);
    if (!v || v->kind() == llvm::json::Value::Null)
      continue;
    std::vector<const llvm::json::Value *> items;
    if (const llvm::json::Array *a = v->getAsArray())
      for (const llvm::json::Value &x : *a)
        items.push_back(&x);
    else
      items.push_back(v);
    for (size_t i = 0; i < items.size(); ++i) {
      std::string at = std::string(field) +
                       (v->getAsArray() ? "[" + std::to_string(i) + "]" : "");
      std::optional<int64_t> id = items[i]->getAsInteger();
      if (!id)
        return error(path + ": " + at + " is not an integer");
      if (*id < 0 || *id >= vocabSize)
        return error(llvm::formatv("{0}: {1} {2} is out of range of the "
                                   "model's vocabulary (vocab_size {3})",
                                   path, at, *id, vocabSize));
      const bool needsToken = std::string(field) != "pad_token_id";
      if (needsToken && !tok.hasId(static_cast<fm::TokenId>(*id)))
        return error(llvm::formatv("{0}: {1} {2} is not a token of {3}", path,
                                   at, *id, tok.name()));
      if (std::string(field) == "eos_token_id")
        stops.push_back({static_cast<int32_t>(*id),
                         llvm::sys::path::filename(path).str() + " " + at});
    }
  }
  return llvm::Error::success();
}

/// The special token that ends an assistant turn in `tpl`'s rendering (the
/// first token after the reply's text), when it is a special token.
std::optional<fm::TokenId> endOfTurn(const fm::ChatTemplate &tpl,
                                     const fm::ChatTemplateOptions &base,
                                     const fm::Tokenizer &tok) {
  const std::string probe = "fmc end-of-turn probe";
  fm::ChatTemplateOptions o = base;
  o.addGenerationPrompt = false;
  auto text = tpl.render({{"user", "Hi"}, {"assistant", probe}}, o);
  if (!text)
    return std::nullopt;
  const size_t at = text->rfind(probe);
  if (at == std::string::npos)
    return std::nullopt;
  auto ids = tok.encode(std::string_view(*text).substr(at + probe.size()));
  if (!ids || ids->empty() || !tok.isSpecial(ids->front()))
    return std::nullopt;
  return ids->front();
}

std::string human(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? llvm::formatv("{0:F0} B", bytes).str()
                : llvm::formatv("{0:F1} {1}", bytes, units[u]).str();
}

} // namespace

llvm::Expected<std::optional<CheckedTokenizer>>
checkTokenizer(const std::string &path, const std::string &modelDir,
               int64_t vocabSize) {
  // Where the files are.
  std::string jsonPath;
  if (!path.empty()) {
    if (!llvm::sys::fs::exists(path))
      return error("--tokenizer " + path + ": no such file or directory");
    jsonPath = llvm::sys::fs::is_directory(path) ? join(path, "tokenizer.json")
                                                 : path;
    if (!llvm::sys::fs::exists(jsonPath))
      return error("--tokenizer " + path + ": no tokenizer.json in it");
  } else {
    if (modelDir.empty() || !llvm::sys::fs::exists(join(modelDir, "tokenizer.json")))
      return std::nullopt;
    jsonPath = join(modelDir, "tokenizer.json");
  }
  const std::string configPath =
      join(llvm::sys::path::parent_path(jsonPath), "tokenizer_config.json");

  CheckedTokenizer out;
  auto json = readFile(jsonPath);
  if (!json)
    return json.takeError();
  out.files.tokenizerJson = std::move(*json);
  if (llvm::sys::fs::exists(configPath)) {
    auto config = readFile(configPath);
    if (!config)
      return config.takeError();
    out.files.configJson = std::move(*config);
  }
  out.files.source = jsonPath;
  auto tok = fm::Tokenizer::fromJson(out.files.tokenizerJson,
                                     out.files.configJson, jsonPath, configPath);
  if (!tok)
    return error(tok.message());

  // Every id must have an embedding row.
  if (static_cast<int64_t>(tok->vocabSize()) > vocabSize)
    return error(llvm::formatv(
        "{0}: the tokenizer has {1} ids (model.vocab and added_tokens) but "
        "the model's vocab_size is {2}: ids from {2} on would have no "
        "embedding row",
        jsonPath, tok->vocabSize(), vocabSize));
  if (!out.files.configJson.empty())
    for (const char *field : {"bos_token", "eos_token"}) {
      const bool bos = std::string(field) == "bos_token";
      const std::string &token = bos ? tok->bosToken() : tok->eosToken();
      if (!token.empty() && !(bos ? tok->bosId() : tok->eosId()))
        return error(configPath + ": " + field + " '" + token +
                     "' is not a token of " + jsonPath);
    }

  std::vector<StopId> stops;
  if (tok->eosId())
    stops.push_back({*tok->eosId(), "eos_token"});
  if (!modelDir.empty()) {
    for (const char *config : {"config.json", "generation_config.json"})
      if (llvm::Error e = checkConfigIds(join(modelDir, config), *tok,
                                         vocabSize, stops))
        return std::move(e);
  }

  // The chat template: compiled, and rendered with the conversation every
  // chat starts with, so that a template fm_chat cannot render fails here
  // rather than in the middle of a chat.
  std::string templateLine = "no chat template";
  if (!tok->chatTemplate().empty()) {
    const std::string name = configPath + ": chat_template";
    auto tpl = fm::ChatTemplate::compile(tok->chatTemplate(), name);
    if (!tpl)
      return error(tpl.message());
    fm::ChatTemplateOptions o;
    o.bosToken = tok->bosToken();
    o.eosToken = tok->eosToken();
    o.unkToken = tok->unkToken();
    o.padToken = tok->padToken();
    auto rendered = tpl->render(
        {{"user", "Hello"}, {"assistant", "Hi."}, {"user", "How are you?"}}, o);
    if (!rendered)
      return error("cannot render a conversation (user, assistant, user) "
                   "with " + rendered.message());
    auto withSystem = tpl->render({{"system", "Be brief."}, {"user", "Hello"}}, o);
    templateLine = "chat template " + human(tok->chatTemplate().size()) +
                   (withSystem ? " (renders)"
                               : " (renders; a system message fails: " +
                                     withSystem.message() + ")");
    if (auto eot = endOfTurn(*tpl, o, *tok))
      stops.push_back({*eot, "the chat template's end of turn"});
  }

  std::string stopText;
  for (const StopId &s : stops) {
    if (std::any_of(out.files.stopIds.begin(), out.files.stopIds.end(),
                    [&](int32_t id) { return id == s.id; }))
      continue;
    out.files.stopIds.push_back(s.id);
    stopText += llvm::formatv("{0}{1} {2} ({3})", stopText.empty() ? "" : ", ",
                              s.id, tok->tokenString(s.id), s.why)
                    .str();
  }
  auto special = [&](const char *what, const std::string &token,
                     std::optional<fm::TokenId> id) {
    return id ? llvm::formatv(", {0} {1} {2}", what, token, *id).str()
              : std::string();
  };
  out.report =
      llvm::formatv("  tokenizer     {0} ({1}): {2} ids{3}{4}, model vocab "
                    "{5}\n",
                    jsonPath, human(out.files.tokenizerJson.size()),
                    tok->vocabSize(),
                    special("bos", tok->bosToken(), tok->bosId()),
                    special("eos", tok->eosToken(), tok->eosId()), vocabSize)
          .str() +
      "                " + templateLine + "; stop ids " +
      (stopText.empty() ? "none" : stopText) + "\n";
  return out;
}

} // namespace fm::cli
