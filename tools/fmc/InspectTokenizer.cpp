// What `fmc inspect` says about an artifact's embedded tokenizer
// (InspectTokenizer.h). The files are parsed as the runtime parses them, so
// a tokenizer the runtime would refuse says why here.
#include "InspectTokenizer.h"

#include "llvm/Support/FormatVariadic.h"

namespace fm::cli {
namespace {

namespace fa = ::fm::artifact;

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

std::string source(const fa::TokenizerFiles &t) {
  return t.source() && t.source()->size() ? t.source()->str() : "tokenizer.json";
}

} // namespace

std::string tokenizerText(const ArtifactFile &a) {
  const fa::TokenizerFiles *t = a.root().tokenizer();
  if (!t)
    return "  tokenizer     none (token ids only)\n";
  std::string head = llvm::formatv(
      "  tokenizer     {0} ({1}{2})", source(*t),
      human(t->tokenizer_json()->size()),
      t->config_json() && t->config_json()->size()
          ? " + tokenizer_config.json " + human(t->config_json()->size())
          : std::string());
  auto tok = a.tokenizer();
  if (!tok)
    return head + ": does not load: " + tok.message() + "\n";
  std::string specials;
  if (tok->bosId())
    specials += llvm::formatv(", bos {0} {1}", tok->bosToken(), *tok->bosId());
  if (tok->eosId())
    specials += llvm::formatv(", eos {0} {1}", tok->eosToken(), *tok->eosId());
  std::string stops;
  for (int32_t id : a.stopIds())
    stops += llvm::formatv("{0}{1} {2}", stops.empty() ? "" : ", ", id,
                           tok->tokenString(id));
  return head + llvm::formatv(": {0} ids{1}\n", tok->vocabSize(), specials).str() +
         "                " +
         (tok->chatTemplate().empty()
              ? std::string("no chat template")
              : "chat template " + human(tok->chatTemplate().size())) +
         "; stop ids " + (stops.empty() ? "none" : stops) + "\n";
}

llvm::json::Value tokenizerJson(const ArtifactFile &a) {
  const fa::TokenizerFiles *t = a.root().tokenizer();
  if (!t)
    return nullptr;
  llvm::json::Array stops;
  for (int32_t id : a.stopIds())
    stops.push_back(id);
  llvm::json::Object out{
      {"source", source(*t)},
      {"tokenizer_json_bytes", (int64_t)t->tokenizer_json()->size()},
      {"config_json_bytes",
       (int64_t)(t->config_json() ? t->config_json()->size() : 0)},
      {"stop_ids", std::move(stops)}};
  auto tok = a.tokenizer();
  if (!tok) {
    out["error"] = tok.message();
    return std::move(out);
  }
  out["vocab_size"] = (int64_t)tok->vocabSize();
  auto special = [&](const char *name, const std::string &token,
                     std::optional<fm::TokenId> id) {
    if (id)
      out[name] = llvm::json::Object{{"token", token}, {"id", (int64_t)*id}};
    else
      out[name] = nullptr;
  };
  special("bos", tok->bosToken(), tok->bosId());
  special("eos", tok->eosToken(), tok->eosId());
  out["chat_template"] = tok->chatTemplate();
  return std::move(out);
}

} // namespace fm::cli
