// fm::Tokenizer: the encode pipeline (added tokens, normalizer, added tokens
// again, pre-tokenizer, BPE, post-processor) and decoding.
#include "fm/tokenizer.h"

#include "tokenizer/TokenizerImpl.h"
#include "tokenizer/Utf8.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace fm {
namespace tok {

namespace {

// Per-call working memory, reused by the calling thread.
struct EncodeScratch {
  std::vector<Segment> segments, inner;
  Pieces pieces;
  BpeScratch bpe;
  std::string normalized;
};

EncodeScratch &scratch() {
  thread_local EncodeScratch s;
  return s;
}

} // namespace

Status TokenizerImpl::encode(std::string_view input, bool addSpecial,
                             std::vector<TokenId> &out) const {
  std::string repaired;
  if (!isValidUtf8(input)) {
    repaired = sanitizeUtf8(input);
    input = repaired;
  }
  EncodeScratch &s = scratch();

  BpeCache *c = nullptr;
  std::unique_lock<std::mutex> lock(cache->mutex, std::try_to_lock);
  if (lock.owns_lock())
    c = cache.get();

  s.segments.clear();
  rawMatcher.split(input, added, s.segments);
  for (const Segment &seg : s.segments) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    std::string_view text = input.substr(seg.start, seg.end - seg.start);
    std::string_view normalizedText = text;
    if (normalizer) {
      s.normalized.assign(text);
      FM_RETURN_IF_ERROR(normalizer->normalize(s.normalized));
      normalizedText = s.normalized;
    }
    s.inner.clear();
    normalizedMatcher.split(normalizedText, added, s.inner);
    for (const Segment &part : s.inner) {
      if (part.id >= 0) {
        out.push_back(part.id);
        continue;
      }
      Pieces &p = s.pieces;
      p.text.assign(normalizedText.substr(part.start, part.end - part.start));
      p.ranges.assign(1, {0u, uint32_t(p.text.size())});
      p.atInputStart = seg.start == 0 && part.start == 0;
      if (preTokenizer)
        FM_RETURN_IF_ERROR(preTokenizer->apply(p));
      for (const auto &r : p.ranges)
        model.tokenize(std::string_view(p.text).substr(r.first, r.second - r.first),
                       out, s.bpe, c);
    }
  }
  if (addSpecial && postProcessor)
    postProcessor->process(out);
  return Status::ok();
}

std::optional<TokenId> TokenizerImpl::idOf(std::string_view token) const {
  auto it = addedIds.find(std::string(token));
  if (it != addedIds.end())
    return it->second;
  int32_t id;
  if (byteLevel) {
    std::string raw;
    if (!toRawBytes(token, raw))
      return std::nullopt;
    id = model.vocab.get(model.keys, raw);
  } else {
    id = model.vocab.get(model.keys, token);
  }
  if (id < 0)
    return std::nullopt;
  return id;
}

std::string TokenizerImpl::contribution(TokenId id, bool first) const {
  if (!decoder)
    return first ? strings[id] : " " + strings[id];
  std::vector<std::string> list(1, strings[id]);
  DecodeState st;
  st.contribution = true;
  st.firstToken = first;
  decoder->decodeChain(list, st);
  std::string out;
  for (const std::string &t : list)
    out += t;
  return out;
}

const std::vector<std::string> &TokenizerImpl::contributions() const {
  std::call_once(contributionsOnce_, [&] {
    contributions_.resize(strings.size());
    for (size_t id = 0; id < strings.size(); ++id)
      if (present[id])
        contributions_[id] = contribution(static_cast<TokenId>(id), false);
  });
  return contributions_;
}

} // namespace tok

namespace {

Expected<std::string> readFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::string out;
  struct stat st;
  if (::fstat(fileno(f), &st) == 0 && st.st_size > 0)
    out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    return Status::error(path + ": read error");
  return out;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

const std::string kEmpty;

} // namespace

Expected<Tokenizer> Tokenizer::open(const std::string &path) {
  std::string jsonPath = path, configPath;
  if (isDirectory(path)) {
    std::string dir = path.empty() || path.back() == '/' ? path : path + "/";
    jsonPath = dir + "tokenizer.json";
    if (!exists(jsonPath))
      return Status::error(path + ": no tokenizer.json in this directory");
    configPath = dir + "tokenizer_config.json";
  } else {
    size_t slash = path.rfind('/');
    configPath = (slash == std::string::npos ? std::string()
                                             : path.substr(0, slash + 1)) +
                 "tokenizer_config.json";
  }
  Expected<std::string> json = readFile(jsonPath);
  if (!json)
    return json.status();
  std::string config;
  if (exists(configPath)) {
    Expected<std::string> c = readFile(configPath);
    if (!c)
      return c.status();
    config = std::move(*c);
  }
  auto impl = tok::loadTokenizer(std::move(*json), config, jsonPath,
                                 configPath);
  if (!impl)
    return impl.status();
  Tokenizer t;
  t.impl_ = std::move(*impl);
  return t;
}

Expected<Tokenizer> Tokenizer::fromJson(std::string_view tokenizerJson,
                                        std::string_view configJson,
                                        const std::string &tokenizerName,
                                        const std::string &configName) {
  auto impl = tok::loadTokenizer(std::string(tokenizerJson), configJson,
                                 tokenizerName, configName);
  if (!impl)
    return impl.status();
  Tokenizer t;
  t.impl_ = std::move(*impl);
  return t;
}

Expected<std::vector<TokenId>> Tokenizer::encode(std::string_view text,
                                                 bool addSpecial) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  FM_RETURN_IF_ERROR(impl_->encode(text, addSpecial, ids));
  return ids;
}

Expected<std::string> Tokenizer::decode(const std::vector<TokenId> &ids,
                                        bool skipSpecial) const {
  const tok::TokenizerImpl &t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    TokenId id = ids[i];
    if (!hasId(id))
      return Status::error(t.name + ": decode: id " + std::to_string(id) +
                           " (position " + std::to_string(i) +
                           ") is not in the vocabulary of " +
                           std::to_string(vocabSize()) + " ids");
    if (skipSpecial && t.special[id])
      continue;
    tokens.push_back(t.strings[id]);
  }
  if (!t.decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i)
      out += (i ? " " : "") + tokens[i];
    return out;
  }
  tok::DecodeState st;
  t.decoder->decodeChain(tokens, st);
  std::string out;
  for (const std::string &s : tokens)
    out += s;
  return out;
}

size_t Tokenizer::vocabSize() const { return impl_->strings.size(); }
bool Tokenizer::hasId(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->strings.size() &&
         impl_->present[id];
}
const std::string &Tokenizer::tokenString(TokenId id) const {
  return hasId(id) ? impl_->strings[id] : kEmpty;
}
std::optional<TokenId> Tokenizer::tokenToId(std::string_view token) const {
  return impl_->idOf(token);
}
const std::string &Tokenizer::tokenBytes(TokenId id) const {
  return hasId(id) ? impl_->contributions()[id] : kEmpty;
}
const std::vector<AddedTokenInfo> &Tokenizer::addedTokens() const {
  return impl_->addedInfo;
}
bool Tokenizer::isSpecial(TokenId id) const {
  return hasId(id) && impl_->special[id];
}
std::optional<TokenId> Tokenizer::bosId() const { return impl_->bosId; }
std::optional<TokenId> Tokenizer::eosId() const { return impl_->eosId; }
std::optional<TokenId> Tokenizer::padId() const { return impl_->padId; }
std::optional<TokenId> Tokenizer::unkId() const { return impl_->unkId; }
const std::string &Tokenizer::bosToken() const { return impl_->bosToken; }
const std::string &Tokenizer::eosToken() const { return impl_->eosToken; }
const std::string &Tokenizer::padToken() const { return impl_->padToken; }
const std::string &Tokenizer::unkToken() const { return impl_->unkToken; }
const std::string &Tokenizer::chatTemplate() const {
  return impl_->chatTemplate;
}
const std::string &Tokenizer::name() const { return impl_->name; }

} // namespace fm
