// The decoders of tokenizer.json (HF tokenizers/src/decoders/).
#include "tokenizer/Decoder.h"

#include "tokenizer/ByteLevelAlphabet.h"
#include "tokenizer/Regex.h"
#include "tokenizer/Utf8.h"

namespace fm::tok {
namespace {

/// ByteLevel: each token's characters back to bytes (a token with a
/// character outside the alphabet stays as it is), then the whole text as
/// lossy UTF-8.
class ByteLevelDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    const ByteLevelAlphabet &a = ByteLevelAlphabet::get();
    std::string bytes;
    std::string one;
    for (const std::string &t : tokens) {
      one.clear();
      bool all = true;
      size_t i = 0;
      while (i < t.size()) {
        int b = a.byteFor(decodeUtf8(t, i));
        if (b < 0) {
          all = false;
          break;
        }
        one.push_back(static_cast<char>(b));
      }
      bytes += all ? one : t;
    }
    tokens.assign(1, state.contribution ? bytes : sanitizeUtf8(bytes));
    state.fused = true;
  }
  void collectTextCuts(bool &fused, std::vector<TextCut> &) const override {
    fused = true;
  }
};

class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, bool prependFirst)
      : replacement_(std::move(replacement)), prependFirst_(prependFirst) {}
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      bool first = state.contribution ? state.firstToken : i == 0;
      const char *with = first && prependFirst_ ? "" : " ";
      tokens[i] = replaceAll(tokens[i], with);
    }
  }

private:
  std::string replaceAll(const std::string &t, const char *with) const {
    std::string out;
    size_t from = 0, at;
    while ((at = t.find(replacement_, from)) != std::string::npos) {
      out.append(t, from, at - from);
      out += with;
      from = at + replacement_.size();
    }
    out.append(t, from, std::string::npos);
    return out;
  }
  std::string replacement_;
  bool prependFirst_;
};

/// <0xXX> tokens to bytes; a run of them that is not valid UTF-8 becomes
/// one U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    std::vector<std::string> out;
    std::string run;
    size_t runBytes = 0;
    auto flush = [&] {
      if (!runBytes)
        return;
      if (state.contribution || isValidUtf8(run)) {
        out.push_back(run);
      } else {
        std::string r;
        for (size_t k = 0; k < runBytes; ++k)
          r += kReplacementChar;
        out.push_back(r);
      }
      run.clear();
      runBytes = 0;
    };
    for (std::string &t : tokens) {
      int b = byteOf(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
        ++runBytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }

  /// The byte of "<0xXX>" (Rust's u8::from_str_radix on the two digits,
  /// which takes a leading '+'), or -1.
  static int byteOf(const std::string &t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>')
      return -1;
    auto hex = [](char c) {
      if (c >= '0' && c <= '9')
        return c - '0';
      if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
      if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
      return -1;
    };
    int hi = hex(t[3]), lo = hex(t[4]);
    if (t[3] == '+' && lo >= 0)
      return lo;
    if (hi < 0 || lo < 0)
      return -1;
    return hi * 16 + lo;
  }
};

class FuseDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    std::string all;
    for (const std::string &t : tokens)
      all += t;
    tokens.assign(1, std::move(all));
    state.fused = true;
  }
  void collectTextCuts(bool &fused, std::vector<TextCut> &) const override {
    fused = true;
  }
};

class StripDecoder : public Decoder {
public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    if (state.contribution && state.fused)
      return; // a cut of the whole text: the caller's (TextCut)
    for (std::string &t : tokens)
      t = strip(t, content_, start_, stop_);
  }
  void collectTextCuts(bool &fused, std::vector<TextCut> &cuts) const override {
    if (fused)
      cuts.push_back({content_, start_, stop_});
  }

  static std::string strip(const std::string &t, const std::string &content,
                           size_t start, size_t stop) {
    size_t begin = 0, end = t.size();
    for (size_t k = 0; k < start && t.compare(begin, content.size(), content) == 0 &&
                       begin < end;
         ++k)
      begin += content.size();
    for (size_t k = 0; k < stop && end >= begin + content.size() &&
                       t.compare(end - content.size(), content.size(), content) == 0;
         ++k)
      end -= content.size();
    return t.substr(begin, end - begin);
  }

private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(std::string literal, std::shared_ptr<Regex> re,
                 std::string content)
      : literal_(std::move(literal)), re_(std::move(re)),
        content_(std::move(content)) {}
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &) const override {
    for (std::string &t : tokens) {
      std::string out;
      size_t from = 0;
      if (!re_) {
        size_t at;
        while ((at = t.find(literal_, from)) != std::string::npos) {
          out.append(t, from, at - from);
          out += content_;
          from = at + literal_.size();
        }
      } else if (isValidUtf8(t)) {
        // A regex cannot fail on a token-sized string within its limits;
        // if it did, the token is left as it is.
        Status s = re_->forEachMatch(t, [&](size_t a, size_t b) {
          out.append(t, from, a - from);
          out += content_;
          from = b;
        });
        if (!s.isOk())
          continue;
      }
      out.append(t, from, std::string::npos);
      t.swap(out);
    }
  }

private:
  std::string literal_;
  std::shared_ptr<Regex> re_;
  std::string content_;
};

class SequenceDecoder : public Decoder {
public:
  explicit SequenceDecoder(std::vector<std::shared_ptr<const Decoder>> parts)
      : parts_(std::move(parts)) {}
  void decodeChain(std::vector<std::string> &tokens,
                   DecodeState &state) const override {
    for (const auto &p : parts_)
      p->decodeChain(tokens, state);
  }
  void collectTextCuts(bool &fused, std::vector<TextCut> &cuts) const override {
    for (const auto &p : parts_)
      p->collectTextCuts(fused, cuts);
  }

private:
  std::vector<std::shared_ptr<const Decoder>> parts_;
};

} // namespace

Expected<std::shared_ptr<const Decoder>> Decoder::fromJson(const JValue &json,
                                                           const JPath &at) {
  std::string type;
  FM_RETURN_IF_ERROR(jtype(json, at, &type));
  using Ptr = std::shared_ptr<const Decoder>;
  if (type == "ByteLevel")
    return Ptr(std::make_shared<ByteLevelDecoder>());
  if (type == "Metaspace") {
    std::string rep = "\xE2\x96\x81", scheme;
    bool addPrefixSpace = true;
    FM_RETURN_IF_ERROR(jstring(json, "replacement", at, &rep, false));
    FM_RETURN_IF_ERROR(jbool(json, "add_prefix_space", at, &addPrefixSpace));
    FM_RETURN_IF_ERROR(jstring(json, "prepend_scheme", at, &scheme, false));
    if (rep.empty())
      return (at / "replacement").error("must be one character");
    bool prependFirst = addPrefixSpace;
    if (scheme == "always" || scheme == "first")
      prependFirst = true;
    else if (scheme == "never")
      prependFirst = false;
    else if (!scheme.empty())
      return (at / "prepend_scheme")
          .error("unknown prepend_scheme '" + scheme +
                 "' (always, first, never)");
    return Ptr(std::make_shared<MetaspaceDecoder>(rep, prependFirst));
  }
  if (type == "ByteFallback")
    return Ptr(std::make_shared<ByteFallbackDecoder>());
  if (type == "Fuse")
    return Ptr(std::make_shared<FuseDecoder>());
  if (type == "Strip") {
    std::string content;
    int64_t start = 0, stop = 0;
    FM_RETURN_IF_ERROR(jstring(json, "content", at, &content, true));
    FM_RETURN_IF_ERROR(jint(json, "start", at, &start, 0, 1 << 20));
    FM_RETURN_IF_ERROR(jint(json, "stop", at, &stop, 0, 1 << 20));
    size_t i = 0;
    if (content.empty() || !isValidUtf8(content) ||
        (decodeUtf8(content, i), i != content.size()))
      return (at / "content").error("must be one character");
    return Ptr(std::make_shared<StripDecoder>(content, size_t(start),
                                              size_t(stop)));
  }
  if (type == "Replace") {
    std::string literal, regex, content;
    bool isRegex = false;
    FM_RETURN_IF_ERROR(readPattern(json, at, &literal, &regex, &isRegex));
    FM_RETURN_IF_ERROR(jstring(json, "content", at, &content, true));
    std::shared_ptr<Regex> re;
    if (isRegex || literal.empty()) {
      Expected<Regex> r =
          isRegex ? Regex::compile(regex, (at / "pattern" / "Regex").str())
                  : Regex::literal(literal, (at / "pattern" / "String").str());
      if (!r)
        return r.status();
      re = std::make_shared<Regex>(std::move(*r));
    }
    return Ptr(std::make_shared<ReplaceDecoder>(literal, re, content));
  }
  if (type == "Sequence") {
    const JValue *list = jmember(json, "decoders");
    if (!list || !list->IsArray())
      return (at / "decoders").error("must be an array");
    std::vector<Ptr> parts;
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      auto part = fromJson((*list)[i], (at / "decoders")[i]);
      if (!part)
        return part.status();
      parts.push_back(std::move(*part));
    }
    return Ptr(std::make_shared<SequenceDecoder>(std::move(parts)));
  }
  return (at / "type")
      .error("decoder '" + type +
             "' is not supported (ByteLevel, Metaspace, ByteFallback, Fuse, "
             "Strip, Replace, Sequence are)");
}

} // namespace fm::tok
