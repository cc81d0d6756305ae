// Reads tokenizer.json and tokenizer_config.json into a TokenizerImpl; every
// refusal names the file and the field.
#include "tokenizer/ByteLevelAlphabet.h"
#include "tokenizer/HugeBuffer.h"
#include "tokenizer/TokenizerImpl.h"
#include "tokenizer/Utf8.h"

#include <rapidjson/error/en.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <exception>
#include <thread>
#include <vector>

namespace fm::tok {
namespace {

constexpr int64_t kMaxId = (1 << 24) - 1; // 16M ids is far past any vocabulary

std::string lineAndColumn(const std::string &text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column) +
         " (byte " + std::to_string(offset) + ")";
}

Status parseJson(rapidjson::Document &doc, std::string &text,
                 const std::string &name) {
  // The whole file is checked to be UTF-8 first (faster than RapidJSON's
  // per-string check); RapidJSON itself refuses escapes of lone surrogates,
  // so every string it gives is valid UTF-8.
  if (!isValidUtf8(text)) {
    size_t bad = 0;
    const auto *s = reinterpret_cast<const uint8_t *>(text.data());
    while (bad < text.size()) {
      Utf8Scan r = scanUtf8(s + bad, text.size() - bad);
      if (!r.length)
        break;
      bad += r.length;
    }
    return Status::error(name + ": invalid UTF-8 at " + lineAndColumn(text, bad));
  }
  constexpr unsigned kFlags =
      rapidjson::kParseInsituFlag | rapidjson::kParseNanAndInfFlag;
  doc.ParseInsitu<kFlags>(text.data());
  if (!doc.HasParseError())
    return Status::ok();
  // The in-situ parse rewrote strings before the offset, never newlines
  // outside them, so counting lines still works.
  size_t offset = doc.GetErrorOffset(), line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return Status::error(name + ": invalid JSON at line " + std::to_string(line) +
                       ", column " + std::to_string(column) + " (byte " +
                       std::to_string(offset) + "): " +
                       rapidjson::GetParseError_En(doc.GetParseError()));
}

} // namespace

namespace {

/// toRawBytes into `out` (room for s.size() bytes): the raw length, or -1.
/// The load's hot loop: the vocabulary and both sides of every merge.
ptrdiff_t rawBytesInto(std::string_view s, char *out) {
  const std::array<int16_t, 0x144> &byteOf = ByteLevelAlphabet::get().byteOf;
  const auto *p = reinterpret_cast<const uint8_t *>(s.data());
  size_t i = 0, n = 0;
  while (i < s.size()) {
    uint32_t c = p[i];
    if (c < 0x80) { // ASCII stands for itself, except what the alphabet moved
      ++i;
    } else if (c >= 0xC2 && c < 0xE0 && i + 1 < s.size() &&
               (p[i + 1] & 0xC0) == 0x80) {
      // The whole alphabet is < U+0800: one well-formed two-byte sequence
      // (no stray continuation byte as its lead, no overlong C0/C1 form, a
      // real continuation byte after it), else its bits would name another
      // character.
      c = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F);
      i += 2;
    } else {
      return -1;
    }
    int b = c < byteOf.size() ? byteOf[c] : -1;
    if (b < 0)
      return -1;
    out[n++] = static_cast<char>(b);
  }
  return static_cast<ptrdiff_t>(n);
}

} // namespace

bool toRawBytes(std::string_view s, std::string &out) {
  out.resize(s.size());
  ptrdiff_t n = rawBytesInto(s, out.data());
  if (n < 0)
    return false;
  out.resize(static_cast<size_t>(n));
  return true;
}

namespace {

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else
      out.push_back(c);
  }
  return out + "'";
}

// What resolving the merges reads: tokenizer.json's model.merges and the
// vocabulary already loaded.
struct MergeSource {
  const JValue &merges;
  const JPath &path; // model.merges, for messages
  const std::string &vocabPath;
  bool byteLevel;
  size_t prefixLength; // continuing_subword_prefix
  const BpeModel &model;
};

// The ids of merges [from, to) to `take(i, a, b, merged)`, in order, or the
// error of the first bad one. Hundreds of thousands of merges, three lookups
// each: done in batches whose hash slots are prefetched before they are read
// (and, with `pairs`, the pair slot each will be put into). The model-side
// keys of a batch (a, b and the merged token) are written into one arena.
// Reads only: two threads may resolve two ranges at once.
template <typename Take>
Status resolveMerges(const MergeSource &src, rapidjson::SizeType from, rapidjson::SizeType to,
                     const PairMap *pairs, Take &&take) {
  constexpr size_t kBatch = 32;
  struct Item {
    std::string_view a, b; // as the file writes them
    uint32_t ka, kb, ab;   // offsets of the model-side keys in the arena
    uint32_t na, nb, nab;
    uint64_t ha, hb, hab;
    int32_t ia, ib;
  };
  const StringIdMap &vocab = src.model.vocab;
  const std::vector<std::string> &keys = src.model.keys;
  Item batch[kBatch];
  std::string arena;
  for (rapidjson::SizeType base = from; base < to; base += kBatch) {
    size_t count = std::min<size_t>(kBatch, to - base);
    size_t room = 0;
    for (size_t j = 0; j < count; ++j) {
      rapidjson::SizeType i = base + static_cast<rapidjson::SizeType>(j);
      const JValue &e = src.merges[i];
      Item &it = batch[j];
      if (e.IsString()) { // "a b" (tokenizers < 0.20)
        std::string_view s(e.GetString(), e.GetStringLength());
        size_t space = s.find(' ');
        if (space == std::string_view::npos)
          return src.path[i].error(quoted(s) +
                                   " is not two tokens separated by a space");
        it.a = s.substr(0, space);
        it.b = s.substr(space + 1);
      } else if (e.IsArray() && e.Size() == 2 && e[0].IsString() &&
                 e[1].IsString()) {
        it.a = std::string_view(e[0].GetString(), e[0].GetStringLength());
        it.b = std::string_view(e[1].GetString(), e[1].GetStringLength());
      } else {
        return src.path[i].error("must be \"a b\" or [\"a\", \"b\"]");
      }
      room += 2 * (it.a.size() + it.b.size());
    }
    if (arena.size() < room)
      arena.resize(room);
    char *out = arena.data();
    uint32_t used = 0;
    for (size_t j = 0; j < count; ++j) {
      Item &it = batch[j];
      rapidjson::SizeType i = base + static_cast<rapidjson::SizeType>(j);
      ptrdiff_t na, nb;
      if (src.byteLevel) {
        na = rawBytesInto(it.a, out + used);
        if (na < 0)
          return src.path[i].error("token " + quoted(it.a) + " is not in " +
                                   src.vocabPath);
        nb = rawBytesInto(it.b, out + used + na);
        if (nb < 0)
          return src.path[i].error("token " + quoted(it.b) + " is not in " +
                                   src.vocabPath);
      } else {
        na = static_cast<ptrdiff_t>(it.a.size());
        nb = static_cast<ptrdiff_t>(it.b.size());
        std::memcpy(out + used, it.a.data(), it.a.size());
        std::memcpy(out + used + na, it.b.data(), it.b.size());
      }
      it.ka = used;
      it.na = static_cast<uint32_t>(na);
      it.kb = used + it.na;
      it.nb = static_cast<uint32_t>(nb);
      used += it.na + it.nb;
      // The merged token: a's key and b's without the continuing-subword
      // prefix.
      uint32_t tail = it.nb >= src.prefixLength
                          ? it.nb - static_cast<uint32_t>(src.prefixLength)
                          : 0;
      std::memcpy(out + used, out + it.ka, it.na);
      std::memcpy(out + used + it.na, out + it.kb + (it.nb - tail), tail);
      it.ab = used;
      it.nab = it.na + tail;
      used += it.nab;
      it.ha = hashBytes(out + it.ka, it.na);
      it.hb = hashBytes(out + it.kb, it.nb);
      it.hab = hashBytes(out + it.ab, it.nab);
      vocab.prefetch(it.ha);
      vocab.prefetch(it.hb);
      vocab.prefetch(it.hab);
    }
    for (size_t j = 0; j < count; ++j) {
      Item &it = batch[j];
      rapidjson::SizeType i = base + static_cast<rapidjson::SizeType>(j);
      it.ia = vocab.find(keys, std::string_view(out + it.ka, it.na), it.ha);
      it.ib = vocab.find(keys, std::string_view(out + it.kb, it.nb), it.hb);
      if (it.ia < 0)
        return src.path[i].error("token " + quoted(it.a) + " is not in " +
                                 src.vocabPath);
      if (it.ib < 0)
        return src.path[i].error("token " + quoted(it.b) + " is not in " +
                                 src.vocabPath);
      if (pairs)
        pairs->prefetch(it.ia, it.ib);
    }
    for (size_t j = 0; j < count; ++j) {
      Item &it = batch[j];
      rapidjson::SizeType i = base + static_cast<rapidjson::SizeType>(j);
      int32_t iab = vocab.find(keys, std::string_view(out + it.ab, it.nab), it.hab);
      if (iab < 0)
        return src.path[i].error("the merged token " +
                                 quoted(std::string(it.a) +
                                        std::string(it.b.substr(
                                            std::min(it.b.size(), src.prefixLength)))) +
                                 " is not in " + src.vocabPath);
      take(i, it.ia, it.ib, iab);
    }
  }
  return Status::ok();
}

// `addedIds`: one past the largest id of added_tokens (a hint, unchecked), so
// that the id table is not reallocated when they are added.
Status loadModel(const JValue &json, const JPath &at, bool byteLevel,
                 size_t addedIds, TokenizerImpl &t) {
  if (!json.IsObject())
    return at.error(std::string("must be an object, not ") +
                    jsonTypeName(json));
  std::string type;
  FM_RETURN_IF_ERROR(jstring(json, "type", at, &type, false));
  if (type.empty() && !jmember(json, "merges"))
    return (at / "type").error("missing");
  if (!type.empty() && type != "BPE")
    return (at / "type")
        .error("model '" + type + "' is not supported (BPE is)");
  BpeModel &m = t.model;
  BpeModel::Options &o = m.options;
  o.byteLevel = byteLevel;
  FM_RETURN_IF_ERROR(jbool(json, "byte_fallback", at, &o.byteFallback));
  FM_RETURN_IF_ERROR(jbool(json, "fuse_unk", at, &o.fuseUnk));
  FM_RETURN_IF_ERROR(jbool(json, "ignore_merges", at, &o.ignoreMerges));
  FM_RETURN_IF_ERROR(jstring(json, "continuing_subword_prefix", at,
                             &o.continuingSubwordPrefix, false));
  FM_RETURN_IF_ERROR(
      jstring(json, "end_of_word_suffix", at, &o.endOfWordSuffix, false));
  if (const JValue *d = jmember(json, "dropout"))
    if (!d->IsNull() && !(d->IsNumber() && d->GetDouble() == 0.0))
      return (at / "dropout").error("BPE dropout is not supported (it makes "
                                    "encoding random)");

  const JValue *vocab = jmember(json, "vocab");
  JPath vp = at / "vocab";
  if (!vocab || !vocab->IsObject())
    return vp.error("must be an object of token -> id");
  int64_t maxId = -1;
  for (auto it = vocab->MemberBegin(); it != vocab->MemberEnd(); ++it) {
    if (!it->value.IsInt64() || it->value.GetInt64() < 0 ||
        it->value.GetInt64() > kMaxId)
      return (vp / it->name.GetString())
          .error("must be a token id in [0, " + std::to_string(kMaxId) + "]");
    maxId = std::max<int64_t>(maxId, it->value.GetInt64());
  }
  // Real vocabularies are dense; a few ids far past the count would only
  // make the id tables huge.
  if (maxId >= static_cast<int64_t>(vocab->MemberCount()) * 2 + 65536)
    return vp.error("id " + std::to_string(maxId) + " leaves most ids below it "
                    "unused (" + std::to_string(vocab->MemberCount()) +
                    " tokens)");
  size_t n = static_cast<size_t>(maxId + 1);
  m.keys.assign(n, std::string());
  m.present.assign(n, 0);
  if (addedIds > n && addedIds <= n + 65536)
    t.strings.reserve(addedIds);
  t.strings.assign(n, std::string());
  m.vocab.reset(vocab->MemberCount());
  // Inserted in batches whose slots are prefetched first.
  int32_t pending[32];
  uint64_t pendingHash[32];
  size_t pendingCount = 0;
  auto flush = [&] {
    for (size_t j = 0; j < pendingCount; ++j)
      m.vocab.put(m.keys, pending[j], pendingHash[j]);
    pendingCount = 0;
  };
  for (auto it = vocab->MemberBegin(); it != vocab->MemberEnd(); ++it) {
    int32_t id = static_cast<int32_t>(it->value.GetInt64());
    std::string_view s(it->name.GetString(), it->name.GetStringLength());
    if (m.present[id])
      return (vp / it->name.GetString())
          .error("id " + std::to_string(id) + " is also used by " +
                 quoted(t.strings[id]));
    m.present[id] = 1;
    t.strings[id].assign(s);
    std::string &key = m.keys[id];
    ptrdiff_t rawLength = 0;
    if (!byteLevel) {
      key.assign(s);
    } else if (key.resize(s.size()), (rawLength = rawBytesInto(s, key.data())) >= 0) {
      key.resize(static_cast<size_t>(rawLength));
    } else {
      key.clear();
      // Unreachable by a byte-level model; decodes as written, found by
      // tokenToId through addedIds.
      t.addedIds.emplace(t.strings[id], id);
      continue;
    }
    uint64_t h = hashBytes(m.keys[id].data(), m.keys[id].size());
    m.vocab.prefetch(h);
    pending[pendingCount] = id;
    pendingHash[pendingCount] = h;
    if (++pendingCount == 32)
      flush();
  }
  flush();

  std::string rawLookup;
  auto lookup = [&](std::string_view s) -> int32_t {
    if (!byteLevel)
      return m.vocab.get(m.keys, s);
    if (!toRawBytes(s, rawLookup))
      return -1;
    return m.vocab.get(m.keys, rawLookup);
  };

  m.byteFallbackIds.fill(-1);
  m.byteIds.fill(-1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    m.byteFallbackIds[b] = lookup(name);
    if (byteLevel)
      m.byteIds[b] = m.vocab.get(m.keys, std::string(1, static_cast<char>(b)));
  }

  std::string unk;
  FM_RETURN_IF_ERROR(jstring(json, "unk_token", at, &unk, false));
  if (!unk.empty()) {
    o.unkId = lookup(unk);
    if (o.unkId < 0)
      return (at / "unk_token").error(quoted(unk) + " is not in " + vp.path);
  }

  const JValue *merges = jmember(json, "merges");
  JPath mp = at / "merges";
  if (!merges || !merges->IsArray())
    return mp.error("must be an array");
  m.merges.reset(merges->Size());
  const MergeSource src{*merges, mp, vp.path, byteLevel,
                        o.continuingSubwordPrefix.size(), m};
  auto put = [&](rapidjson::SizeType i, int32_t a, int32_t b, int32_t merged) {
    m.merges.put(a, b, {static_cast<uint32_t>(i), merged});
  };
  const rapidjson::SizeType total = merges->Size();
  // The lookups are memory-bound: with a second core, a helper thread
  // resolves the second half while this one resolves and inserts the first;
  // its ids are inserted after, in order, so a later duplicate still wins.
  constexpr rapidjson::SizeType kSplitAt = 65536;
  rapidjson::SizeType mid = total;
  struct Ids {
    int32_t a, b, merged;
  };
  std::vector<Ids> second;
  Status secondStatus = Status::ok();
  // What the helper threw (std::bad_alloc): rethrown here after the join,
  // as the one-thread loader would have let it through.
  std::exception_ptr secondThrew;
  std::thread helper;
  if (total >= kSplitAt && std::thread::hardware_concurrency() >= 2) {
    // On a batch boundary (resolveMerges' batches of 32), so that the
    // merge an error names is the same on one core and on two.
    mid = total / 2 / 32 * 32;
    second.resize(total - mid);
    try {
      helper = std::thread([&, mid] {
        try {
          secondStatus = resolveMerges(
              src, mid, total, nullptr,
              [&](rapidjson::SizeType i, int32_t a, int32_t b, int32_t merged) {
                second[i - mid] = {a, b, merged};
              });
        } catch (...) {
          secondThrew = std::current_exception();
        }
      });
    } catch (const std::system_error &) {
      mid = total; // no thread to be had: all on this one
      second.clear();
    }
  }
  Status first = Status::ok();
  try {
    first = resolveMerges(src, 0, mid, &m.merges, put);
  } catch (...) {
    if (helper.joinable())
      helper.join(); // never destroy a joinable thread (std::terminate)
    throw;
  }
  if (helper.joinable())
    helper.join();
  if (secondThrew)
    std::rethrow_exception(secondThrew);
  FM_RETURN_IF_ERROR(first);
  FM_RETURN_IF_ERROR(secondStatus);
  constexpr size_t kAhead = 16;
  for (size_t j = 0; j < second.size(); ++j) {
    if (j + kAhead < second.size())
      m.merges.prefetch(second[j + kAhead].a, second[j + kAhead].b);
    put(mid + static_cast<rapidjson::SizeType>(j), second[j].a, second[j].b, second[j].merged);
  }
  return Status::ok();
}

Status loadAddedTokens(const JValue *list, const JPath &at, TokenizerImpl &t) {
  if (!list || list->IsNull())
    return Status::ok();
  if (!list->IsArray())
    return at.error("must be an array");
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const JValue &e = (*list)[i];
    JPath p = at[i];
    if (!e.IsObject())
      return p.error("must be an object");
    AddedToken a;
    int64_t id = -1;
    int64_t limit = static_cast<int64_t>(t.strings.size() + list->Size()) * 2 + 65536;
    FM_RETURN_IF_ERROR(jint(e, "id", p, &id, 0, std::min(kMaxId, limit)));
    if (id < 0)
      return (p / "id").error("missing");
    a.id = static_cast<int32_t>(id);
    FM_RETURN_IF_ERROR(jstring(e, "content", p, &a.content, true));
    if (a.content.empty())
      return (p / "content").error("is empty");
    FM_RETURN_IF_ERROR(jbool(e, "special", p, &a.special));
    a.normalized = !a.special; // HF's default
    FM_RETURN_IF_ERROR(jbool(e, "lstrip", p, &a.lstrip));
    FM_RETURN_IF_ERROR(jbool(e, "rstrip", p, &a.rstrip));
    FM_RETURN_IF_ERROR(jbool(e, "single_word", p, &a.singleWord));
    FM_RETURN_IF_ERROR(jbool(e, "normalized", p, &a.normalized));
    t.added.push_back(a);
    t.addedInfo.push_back({a.id, a.content, a.special, a.lstrip, a.rstrip,
                           a.singleWord, a.normalized});
  }
  return Status::ok();
}

// tokenizer_config.json's "bos_token" etc.: a string, {"content": ...}, or
// null.
Status configToken(const JValue &cfg, const char *key, const JPath &at,
                   std::string *out) {
  const JValue *v = jmember(cfg, key);
  if (!v || v->IsNull())
    return Status::ok();
  if (v->IsString()) {
    out->assign(v->GetString(), v->GetStringLength());
    return Status::ok();
  }
  if (v->IsObject())
    return jstring(*v, "content", at / key, out, true);
  return (at / key).error(std::string("must be a string or an object with "
                                      "\"content\", not ") +
                          jsonTypeName(*v));
}

Status loadConfig(std::string_view text, const std::string &name,
                  TokenizerImpl &t, bool *rebuildPost, bool *addBos,
                  bool *addEos) {
  std::string copy(text);
  rapidjson::Document doc;
  FM_RETURN_IF_ERROR(parseJson(doc, copy, name));
  JPath at{name, ""};
  if (!doc.IsObject())
    return at.error(std::string("must be a JSON object, not ") +
                    jsonTypeName(doc));
  FM_RETURN_IF_ERROR(configToken(doc, "bos_token", at, &t.bosToken));
  FM_RETURN_IF_ERROR(configToken(doc, "eos_token", at, &t.eosToken));
  FM_RETURN_IF_ERROR(configToken(doc, "pad_token", at, &t.padToken));
  FM_RETURN_IF_ERROR(configToken(doc, "unk_token", at, &t.unkToken));
  if (const JValue *ct = jmember(doc, "chat_template")) {
    if (ct->IsString()) {
      t.chatTemplate.assign(ct->GetString(), ct->GetStringLength());
    } else if (ct->IsArray()) {
      for (rapidjson::SizeType i = 0; i < ct->Size(); ++i) {
        std::string tn, body;
        JPath p = (at / "chat_template")[i];
        FM_RETURN_IF_ERROR(jstring((*ct)[i], "name", p, &tn, true));
        FM_RETURN_IF_ERROR(jstring((*ct)[i], "template", p, &body, true));
        if (tn == "default")
          t.chatTemplate = body;
      }
    } else if (!ct->IsNull()) {
      return (at / "chat_template").error("must be a string or a list of "
                                          "{name, template}");
    }
  }
  // transformers' Llama and Gemma fast tokenizers rebuild the post-processor
  // from add_bos_token (default true) and add_eos_token (default false).
  std::string cls;
  FM_RETURN_IF_ERROR(jstring(doc, "tokenizer_class", at, &cls, false));
  if (cls.size() > 4 && cls.compare(cls.size() - 4, 4, "Fast") == 0)
    cls.resize(cls.size() - 4);
  *rebuildPost = cls == "LlamaTokenizer" || cls == "GemmaTokenizer" ||
                 cls == "CodeLlamaTokenizer";
  *addBos = true;
  *addEos = false;
  FM_RETURN_IF_ERROR(jbool(doc, "add_bos_token", at, addBos));
  FM_RETURN_IF_ERROR(jbool(doc, "add_eos_token", at, addEos));
  return Status::ok();
}

// Reads the optional component `key` of tokenizer.json (absent or null: none)
// with its type's fromJson into *out.
template <typename T, typename F>
Status component(const JValue &doc, const char *key, const JPath &at, F &&fromJson,
                 T *out) {
  const JValue *v = jmember(doc, key);
  if (!v || v->IsNull())
    return Status::ok();
  auto read = fromJson(*v, at / key);
  if (!read)
    return read.status();
  *out = std::move(*read);
  return Status::ok();
}

} // namespace

Expected<std::shared_ptr<TokenizerImpl>>
loadTokenizer(std::string json, std::string_view configJson,
              const std::string &name, const std::string &configName) {
  auto t = std::make_shared<TokenizerImpl>();
  t->name = name;
  // The DOM of Llama 3's tokenizer.json is 0.95x the file's size: its first
  // chunk is one huge-page buffer (see HugeBuffer.h), further ones (other
  // files) come from malloc.
  size_t poolBytes = json.size() + json.size() / 8 + 65536;
  std::unique_ptr<void, void (*)(void *)> pool(allocateHuge(poolBytes), std::free);
  if (!pool) // RapidJSON's allocator would write through a null buffer
    return Status::error(name + ": cannot allocate " + std::to_string(poolBytes) +
                         " bytes for its JSON document");
  rapidjson::MemoryPoolAllocator<> allocator(pool.get(), poolBytes);
  rapidjson::Document doc(&allocator);
  FM_RETURN_IF_ERROR(parseJson(doc, json, name));
  JPath root{name, ""};
  if (!doc.IsObject())
    return root.error(std::string("must be a JSON object, not ") +
                      jsonTypeName(doc));

  FM_RETURN_IF_ERROR(
      component(doc, "normalizer", root, Normalizer::fromJson, &t->normalizer));
  FM_RETURN_IF_ERROR(
      component(doc, "pre_tokenizer", root, PreTokenizer::fromJson, &t->preTokenizer));
  const JValue *model = jmember(doc, "model");
  if (!model)
    return (root / "model").error("missing");
  bool byteLevel = t->preTokenizer && t->preTokenizer->isByteLevel();
  t->byteLevel = byteLevel;
  size_t addedIds = 0;
  if (const JValue *list = jmember(doc, "added_tokens"); list && list->IsArray())
    for (const JValue &e : list->GetArray())
      if (const JValue *id = jmember(e, "id"); id && id->IsUint() && id->GetUint() <= kMaxId)
        addedIds = std::max<size_t>(addedIds, id->GetUint() + 1);
  FM_RETURN_IF_ERROR(loadModel(*model, root / "model", byteLevel, addedIds, *t));
  FM_RETURN_IF_ERROR(loadAddedTokens(jmember(doc, "added_tokens"),
                                     root / "added_tokens", *t));
  FM_RETURN_IF_ERROR(
      component(doc, "post_processor", root, PostProcessor::fromJson, &t->postProcessor));
  FM_RETURN_IF_ERROR(
      component(doc, "decoder", root, Decoder::fromJson, &t->decoder));
  if (t->decoder) {
    bool fused = false;
    std::vector<TextCut> cuts;
    t->decoder->collectTextCuts(fused, cuts);
    if (cuts.size() > 1)
      return (root / "decoder")
          .error("more than one Strip of the whole text is not supported");
    if (!cuts.empty())
      t->textCut = cuts[0];
  }

  // The id table: the vocabulary, then added tokens (which win for decode,
  // as in HF's id_to_token).
  size_t n = t->strings.size();
  for (const AddedToken &a : t->added)
    n = std::max(n, static_cast<size_t>(a.id) + 1);
  t->strings.resize(n);
  t->present = t->model.present;
  t->present.resize(n, 0);
  t->special.assign(n, 0);
  for (const AddedToken &a : t->added) {
    t->strings[a.id] = a.content;
    t->present[a.id] = 1;
    t->special[a.id] = a.special;
  }
  for (const AddedToken &a : t->added)
    t->addedIds[a.content] = a.id;
  t->rawMatcher.build(t->added, false);
  t->normalizedMatcher.build(t->added, true);

  if (!configJson.empty()) {
    bool rebuild = false, addBos = true, addEos = false;
    FM_RETURN_IF_ERROR(
        loadConfig(configJson, configName, *t, &rebuild, &addBos, &addEos));
    auto idOf = [&](const std::string &s) -> std::optional<TokenId> {
      if (s.empty())
        return std::nullopt;
      return t->idOf(s);
    };
    t->bosId = idOf(t->bosToken);
    t->eosId = idOf(t->eosToken);
    t->padId = idOf(t->padToken);
    t->unkId = idOf(t->unkToken);
    if (rebuild) {
      JPath cp{configName, ""};
      if (addBos && !t->bosId)
        return (cp / "add_bos_token")
            .error("is true but bos_token " + quoted(t->bosToken) +
                   " is not a token of " + name);
      if (addEos && !t->eosId)
        return (cp / "add_eos_token")
            .error("is true but eos_token " + quoted(t->eosToken) +
                   " is not a token of " + name);
      std::vector<TokenId> prefix, suffix;
      if (addBos)
        prefix.push_back(*t->bosId);
      if (addEos)
        suffix.push_back(*t->eosId);
      t->postProcessor = PostProcessor::wrap(prefix, suffix);
    }
  }
  return t;
}

} // namespace fm::tok
