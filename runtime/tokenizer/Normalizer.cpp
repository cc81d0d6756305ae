// The normalizers of tokenizer.json (HF tokenizers/src/normalizers/).
#include "tokenizer/Normalizer.h"

#include "tokenizer/Regex.h"
#include "tokenizer/Utf8.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

namespace fm::tok {
namespace {

bool isAscii(const std::string &s) {
  for (unsigned char c : s)
    if (c >= 0x80)
      return false;
  return true;
}

class UnicodeForm : public Normalizer {
public:
  UnicodeForm(utf8proc_option_t options, std::string name)
      : options_(options), name_(std::move(name)) {}
  Status normalize(std::string &text) const override {
    if (isAscii(text)) // every normalization form leaves ASCII alone
      return Status::ok();
    utf8proc_uint8_t *out = nullptr;
    utf8proc_ssize_t n = utf8proc_map(
        reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
        static_cast<utf8proc_ssize_t>(text.size()), &out, options_);
    if (n < 0)
      return Status::error(name_ + " normalization failed: " +
                           utf8proc_errmsg(n));
    text.assign(reinterpret_cast<char *>(out), static_cast<size_t>(n));
    std::free(out);
    return Status::ok();
  }

private:
  utf8proc_option_t options_;
  std::string name_;
};

class Prepend : public Normalizer {
public:
  explicit Prepend(std::string s) : prefix_(std::move(s)) {}
  Status normalize(std::string &text) const override {
    if (!text.empty())
      text.insert(0, prefix_);
    return Status::ok();
  }

private:
  std::string prefix_;
};

/// Replace with a String pattern: non-overlapping, left to right.
class ReplaceLiteral : public Normalizer {
public:
  ReplaceLiteral(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status normalize(std::string &text) const override {
    size_t at = text.find(pattern_);
    if (at == std::string::npos)
      return Status::ok();
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    size_t from = 0;
    while (at != std::string::npos) {
      out.append(text, from, at - from);
      out += content_;
      from = at + pattern_.size();
      at = text.find(pattern_, from);
    }
    out.append(text, from, std::string::npos);
    text.swap(out);
    return Status::ok();
  }

private:
  std::string pattern_, content_;
};

class ReplaceRegex : public Normalizer {
public:
  ReplaceRegex(Regex re, std::string content)
      : re_(std::move(re)), content_(std::move(content)) {}
  Status normalize(std::string &text) const override {
    std::string out;
    size_t from = 0;
    FM_RETURN_IF_ERROR(re_.forEachMatch(text, [&](size_t s, size_t e) {
      out.append(text, from, s - from);
      out += content_;
      from = e;
    }));
    out.append(text, from, std::string::npos);
    text.swap(out);
    return Status::ok();
  }

private:
  Regex re_;
  std::string content_;
};

/// Strip: removes leading and/or trailing White_Space.
class Strip : public Normalizer {
public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  Status normalize(std::string &text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t i = begin;
        if (!isUnicodeWhiteSpace(decodeUtf8(text, i)))
          break;
        begin = i;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t s = end - 1;
        while (s > begin && (static_cast<uint8_t>(text[s]) & 0xC0) == 0x80)
          --s;
        size_t i = s;
        if (!isUnicodeWhiteSpace(decodeUtf8(text, i)))
          break;
        end = s;
      }
    }
    text = text.substr(begin, end - begin);
    return Status::ok();
  }

private:
  bool left_, right_;
};

class Sequence : public Normalizer {
public:
  explicit Sequence(std::vector<std::shared_ptr<const Normalizer>> parts)
      : parts_(std::move(parts)) {}
  Status normalize(std::string &text) const override {
    for (const auto &p : parts_)
      FM_RETURN_IF_ERROR(p->normalize(text));
    return Status::ok();
  }

private:
  std::vector<std::shared_ptr<const Normalizer>> parts_;
};

} // namespace

Expected<std::shared_ptr<const Normalizer>>
Normalizer::fromJson(const JValue &json, const JPath &at) {
  std::string type;
  FM_RETURN_IF_ERROR(jtype(json, at, &type));
  using Ptr = std::shared_ptr<const Normalizer>;
  if (type == "NFC")
    return Ptr(std::make_shared<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE), "NFC"));
  if (type == "NFD")
    return Ptr(std::make_shared<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), "NFD"));
  if (type == "NFKC")
    return Ptr(std::make_shared<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT),
        "NFKC"));
  if (type == "NFKD")
    return Ptr(std::make_shared<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
                          UTF8PROC_COMPAT),
        "NFKD"));
  if (type == "Prepend") {
    std::string s;
    FM_RETURN_IF_ERROR(jstring(json, "prepend", at, &s, true));
    return Ptr(std::make_shared<Prepend>(std::move(s)));
  }
  if (type == "Replace") {
    std::string literal, regex, content;
    bool isRegex = false;
    FM_RETURN_IF_ERROR(readPattern(json, at, &literal, &regex, &isRegex));
    FM_RETURN_IF_ERROR(jstring(json, "content", at, &content, true));
    if (!isRegex && !literal.empty())
      return Ptr(std::make_shared<ReplaceLiteral>(literal, content));
    Expected<Regex> re =
        isRegex ? Regex::compile(regex, (at / "pattern" / "Regex").str())
                : Regex::literal(literal, (at / "pattern" / "String").str());
    if (!re)
      return re.status();
    return Ptr(std::make_shared<ReplaceRegex>(std::move(*re), content));
  }
  if (type == "Strip") {
    bool left = true, right = true;
    FM_RETURN_IF_ERROR(jbool(json, "strip_left", at, &left));
    FM_RETURN_IF_ERROR(jbool(json, "strip_right", at, &right));
    return Ptr(std::make_shared<Strip>(left, right));
  }
  if (type == "Sequence") {
    const JValue *list = jmember(json, "normalizers");
    if (!list || !list->IsArray())
      return (at / "normalizers").error("must be an array");
    std::vector<Ptr> parts;
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      auto part = fromJson((*list)[i], (at / "normalizers")[i]);
      if (!part)
        return part.status();
      parts.push_back(std::move(*part));
    }
    return Ptr(std::make_shared<Sequence>(std::move(parts)));
  }
  return (at / "type")
      .error("normalizer '" + type +
             "' is not supported (NFC, NFD, NFKC, NFKD, Prepend, Replace, "
             "Strip, Sequence are)");
}

} // namespace fm::tok
