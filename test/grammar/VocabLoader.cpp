// Reads tokenizer.json (with fm_grammar's own JSON reader; RapidJSON's DOM header does not build
// with clang 22) and maps token strings back to bytes.
#include "VocabLoader.h"

#include "grammar/Json.h"

#include <fstream>
#include <iterator>
#include <map>

namespace fm::test {

using grammar::JsonValue;

namespace {

bool decodeOne(const std::string &s, size_t *i, uint32_t *cp) {
  uint8_t c = uint8_t(s[*i]);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (!len || *i + size_t(len) > s.size())
    return false;
  uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k)
    v = (v << 6) | (uint8_t(s[*i + size_t(k)]) & 0x3F);
  *cp = v;
  *i += size_t(len);
  return true;
}

// GPT-2's bytes_to_unicode(): printable bytes map to themselves, the others to 256 + n.
std::map<uint32_t, uint8_t> byteDecoder() {
  std::map<uint32_t, uint8_t> out;
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    out[printable ? uint32_t(b) : uint32_t(256 + n++)] = uint8_t(b);
  }
  return out;
}

bool mentions(const JsonValue &v, const char *type) {
  if (v.type == JsonValue::Object) {
    const JsonValue *t = v.get("type");
    if (t && t->type == JsonValue::String && t->text == type)
      return true;
    for (const auto &m : v.members)
      if (mentions(m.second, type))
        return true;
  } else if (v.type == JsonValue::Array) {
    for (const auto &x : v.items)
      if (mentions(x, type))
        return true;
  }
  return false;
}

bool integer(const JsonValue *v, int64_t *out) {
  if (!v || v->type != JsonValue::Number || v->text.empty() ||
      v->text.find_first_not_of("0123456789") != std::string::npos || v->text.size() > 9)
    return false;
  *out = std::stoll(v->text);
  return true;
}

} // namespace

Expected<Vocabulary> loadTokenizerJson(const std::string &path,
                                       const std::vector<std::string> &eosNames) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto doc = grammar::parseJson(text, path);
  if (!doc)
    return doc.status();
  const JsonValue *model = doc->get("model");
  const JsonValue *vocabJson = model ? model->get("vocab") : nullptr;
  if (!vocabJson || vocabJson->type != JsonValue::Object)
    return Status::error(path + ": not a tokenizer.json with model.vocab");
  const JsonValue *decoderJson = doc->get("decoder");
  bool byteLevel = decoderJson && mentions(*decoderJson, "ByteLevel");
  auto decoder = byteDecoder();
  Vocabulary vocab;
  std::map<std::string, int32_t> byName;
  auto put = [&](int64_t id, std::string bytes, const std::string &name) {
    if (size_t(id) >= vocab.tokens.size())
      vocab.tokens.resize(size_t(id) + 1);
    vocab.tokens[size_t(id)] = std::move(bytes);
    byName[name] = int32_t(id);
  };
  for (const auto &[name, idJson] : vocabJson->members) {
    int64_t id;
    if (!integer(&idJson, &id))
      return Status::error(path + ": token '" + name + "' has no integer id");
    std::string bytes;
    if (byteLevel) {
      for (size_t i = 0; i < name.size();) {
        uint32_t cp;
        if (!decodeOne(name, &i, &cp) || !decoder.count(cp))
          return Status::error(path + ": token '" + name + "' is not in GPT-2's byte alphabet");
        bytes += char(decoder[cp]);
      }
    } else if (name.size() == 6 && name.compare(0, 3, "<0x") == 0 && name[5] == '>') {
      bytes = char(std::stoi(name.substr(3, 2), nullptr, 16));
    } else {
      for (size_t i = 0; i < name.size();) {
        if (name.compare(i, 3, "\xE2\x96\x81") == 0) { // U+2581
          bytes += ' ';
          i += 3;
        } else {
          bytes += name[i++];
        }
      }
    }
    put(id, bytes, name);
  }
  if (const JsonValue *added = doc->get("added_tokens"); added && added->type == JsonValue::Array) {
    for (const auto &t : added->items) {
      int64_t id;
      const JsonValue *content = t.get("content");
      if (!integer(t.get("id"), &id) || !content || content->type != JsonValue::String)
        continue;
      const JsonValue *special = t.get("special");
      bool isSpecial = special && special->type == JsonValue::Bool && special->boolean;
      put(id, isSpecial ? std::string() : content->text, content->text);
    }
  }
  for (const std::string &e : eosNames) {
    auto it = byName.find(e);
    if (it == byName.end())
      return Status::error(path + ": no token named '" + e + "'");
    vocab.eos.push_back(it->second);
  }
  return vocab;
}

} // namespace fm::test
