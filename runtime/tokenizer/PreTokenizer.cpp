// The pre-tokenizers of tokenizer.json (HF tokenizers/src/pre_tokenizers/),
// with NormalizedString::split's delimiter behaviors.
#include "tokenizer/PreTokenizer.h"

#include "tokenizer/Regex.h"
#include "tokenizer/Utf8.h"

#include <utf8proc.h>

namespace fm::tok {
namespace {

using Range = std::pair<uint32_t, uint32_t>;

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext,
                      Contiguous };

struct Part {
  uint32_t start, end;
  bool match;
};

// NormalizedString::split: folds the matches of one piece by `behavior` and
// appends the non-empty results (absolute offsets) to `out`.
void foldParts(const std::vector<Part> &parts, Behavior behavior,
               std::vector<Range> &out) {
  size_t first = out.size();
  switch (behavior) {
  case Behavior::Removed:
    for (const Part &p : parts)
      if (!p.match)
        out.emplace_back(p.start, p.end);
    break;
  case Behavior::Isolated:
    for (const Part &p : parts)
      out.emplace_back(p.start, p.end);
    break;
  case Behavior::MergedWithPrevious: {
    bool previousMatch = false;
    for (const Part &p : parts) {
      if (p.match && !previousMatch && out.size() > first)
        out.back().second = p.end;
      else
        out.emplace_back(p.start, p.end);
      previousMatch = p.match;
    }
    break;
  }
  case Behavior::MergedWithNext: {
    bool previousMatch = false;
    std::vector<Range> rev;
    for (size_t i = parts.size(); i-- > 0;) {
      const Part &p = parts[i];
      if (p.match && !previousMatch && !rev.empty())
        rev.back().first = p.start;
      else
        rev.emplace_back(p.start, p.end);
      previousMatch = p.match;
    }
    out.insert(out.end(), rev.rbegin(), rev.rend());
    break;
  }
  case Behavior::Contiguous: {
    bool previousMatch = false;
    for (const Part &p : parts) {
      if (p.match == previousMatch && out.size() > first)
        out.back().second = p.end;
      else
        out.emplace_back(p.start, p.end);
      previousMatch = p.match;
    }
    break;
  }
  }
  // Empty pieces are dropped (PreTokenizedString::split).
  size_t w = first;
  for (size_t r = first; r < out.size(); ++r)
    if (out[r].first != out[r].second)
      out[w++] = out[r];
  out.resize(w);
}

Expected<Behavior> behaviorOf(const std::string &name, const JPath &at) {
  if (name == "Removed")
    return Behavior::Removed;
  if (name == "Isolated")
    return Behavior::Isolated;
  if (name == "MergedWithPrevious")
    return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext")
    return Behavior::MergedWithNext;
  if (name == "Contiguous")
    return Behavior::Contiguous;
  return at.error("unknown behavior '" + name +
                  "' (Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                  "Contiguous)");
}

/// Split by a regex (Split, and ByteLevel's own regex).
class RegexSplit : public PreTokenizer {
public:
  RegexSplit(Regex re, Behavior behavior, bool invert)
      : re_(std::move(re)), behavior_(behavior), invert_(invert) {}
  Status apply(Pieces &pieces) const override {
    std::vector<Range> out;
    out.reserve(pieces.ranges.size() * 2);
    std::vector<Part> parts;
    for (const Range &r : pieces.ranges) {
      parts.clear();
      std::string_view piece(pieces.text.data() + r.first, r.second - r.first);
      uint32_t prev = 0;
      FM_RETURN_IF_ERROR(re_.forEachMatch(piece, [&](size_t s, size_t e) {
        if (prev != s)
          parts.push_back({r.first + prev, r.first + uint32_t(s), invert_});
        parts.push_back({r.first + uint32_t(s), r.first + uint32_t(e), !invert_});
        prev = uint32_t(e);
      }));
      if (prev != piece.size())
        parts.push_back({r.first + prev, r.second, invert_});
      foldParts(parts, behavior_, out);
    }
    pieces.ranges.swap(out);
    return Status::ok();
  }

private:
  Regex re_;
  Behavior behavior_;
  bool invert_;
};

/// Split by a character predicate, each matching character its own match.
template <typename Pred> class CharSplit : public PreTokenizer {
public:
  CharSplit(Pred pred, Behavior behavior) : pred_(pred), behavior_(behavior) {}
  Status apply(Pieces &pieces) const override {
    std::vector<Range> out;
    std::vector<Part> parts;
    const std::string &t = pieces.text;
    for (const Range &r : pieces.ranges) {
      parts.clear();
      uint32_t last = r.first;
      size_t i = r.first;
      while (i < r.second) {
        size_t b = i;
        uint32_t c = decodeUtf8(t, i);
        if (pred_(c)) {
          if (last < b)
            parts.push_back({last, uint32_t(b), false});
          parts.push_back({uint32_t(b), uint32_t(i), true});
          last = uint32_t(i);
        }
      }
      if (last < r.second)
        parts.push_back({last, r.second, false});
      foldParts(parts, behavior_, out);
    }
    pieces.ranges.swap(out);
    return Status::ok();
  }

private:
  Pred pred_;
  Behavior behavior_;
};

bool isNumeric(uint32_t c) { // Rust's char::is_numeric: Nd, Nl, No
  if (c < 0x80)
    return c >= '0' && c <= '9';
  utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

struct IsNumeric {
  bool operator()(uint32_t c) const { return isNumeric(c); }
};
struct IsChar {
  uint32_t c;
  bool operator()(uint32_t x) const { return x == c; }
};

/// Rewrites each piece of `pieces` with `f(piece, index, out)` into a new text.
template <typename F> void rewritePieces(Pieces &pieces, F &&f) {
  std::string text;
  text.reserve(pieces.text.size() + pieces.ranges.size() * 3);
  std::vector<Range> ranges;
  ranges.reserve(pieces.ranges.size());
  for (size_t k = 0; k < pieces.ranges.size(); ++k) {
    const Range &r = pieces.ranges[k];
    uint32_t start = uint32_t(text.size());
    f(std::string_view(pieces.text.data() + r.first, r.second - r.first), r,
      text);
    if (text.size() != start)
      ranges.emplace_back(start, uint32_t(text.size()));
  }
  pieces.text.swap(text);
  pieces.ranges.swap(ranges);
}

class ByteLevel : public PreTokenizer {
public:
  ByteLevel(bool addPrefixSpace, std::shared_ptr<const PreTokenizer> regex)
      : addPrefixSpace_(addPrefixSpace), regex_(std::move(regex)) {}
  Status apply(Pieces &pieces) const override {
    if (addPrefixSpace_) {
      bool needed = false;
      for (const Range &r : pieces.ranges)
        needed |= pieces.text[r.first] != ' ';
      if (needed)
        rewritePieces(pieces, [](std::string_view p, const Range &,
                                 std::string &out) {
          if (p[0] != ' ')
            out.push_back(' ');
          out.append(p);
        });
    }
    if (regex_)
      return regex_->apply(pieces);
    return Status::ok();
  }
  bool isByteLevel() const override { return true; }

private:
  bool addPrefixSpace_;
  std::shared_ptr<const PreTokenizer> regex_;
};

enum class Prepend { Always, First, Never };

class Metaspace : public PreTokenizer {
public:
  Metaspace(uint32_t replacement, Prepend prepend, bool split)
      : prepend_(prepend), split_(split),
        splitter_(IsChar{replacement}, Behavior::MergedWithNext) {
    appendUtf8(rep_, replacement);
  }
  Status apply(Pieces &pieces) const override {
    rewritePieces(pieces, [&](std::string_view p, const Range &r,
                              std::string &out) {
      bool startsWithRep = p.substr(0, rep_.size()) == rep_;
      if (!startsWithRep &&
          (prepend_ == Prepend::Always ||
           (prepend_ == Prepend::First && pieces.atInputStart && r.first == 0)))
        out += rep_;
      for (char c : p) {
        if (c == ' ')
          out += rep_;
        else
          out.push_back(c);
      }
    });
    if (split_)
      return splitter_.apply(pieces);
    return Status::ok();
  }

private:
  std::string rep_;
  Prepend prepend_;
  bool split_;
  CharSplit<IsChar> splitter_;
};

class Sequence : public PreTokenizer {
public:
  explicit Sequence(std::vector<std::shared_ptr<const PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  Status apply(Pieces &pieces) const override {
    for (const auto &p : parts_)
      FM_RETURN_IF_ERROR(p->apply(pieces));
    return Status::ok();
  }
  bool isByteLevel() const override {
    for (const auto &p : parts_)
      if (p->isByteLevel())
        return true;
    return false;
  }

private:
  std::vector<std::shared_ptr<const PreTokenizer>> parts_;
};

// GPT-2's pattern, which ByteLevel applies when use_regex is true.
constexpr const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

Expected<uint32_t> singleChar(const std::string &s, const JPath &at) {
  if (s.empty() || !isValidUtf8(s))
    return at.error("must be one character");
  size_t i = 0;
  uint32_t c = decodeUtf8(s, i);
  if (i != s.size())
    return at.error("must be one character, not '" + s + "'");
  return c;
}

} // namespace

Expected<std::shared_ptr<const PreTokenizer>>
PreTokenizer::fromJson(const JValue &json, const JPath &at) {
  std::string type;
  FM_RETURN_IF_ERROR(jtype(json, at, &type));
  using Ptr = std::shared_ptr<const PreTokenizer>;
  if (type == "ByteLevel") {
    bool addPrefixSpace = true, useRegex = true;
    FM_RETURN_IF_ERROR(jbool(json, "add_prefix_space", at, &addPrefixSpace));
    FM_RETURN_IF_ERROR(jbool(json, "use_regex", at, &useRegex));
    Ptr regex;
    if (useRegex) {
      Expected<Regex> re = Regex::compile(kGpt2Pattern, at.str());
      if (!re)
        return re.status();
      regex = std::make_shared<RegexSplit>(std::move(*re), Behavior::Isolated,
                                           false);
    }
    return Ptr(std::make_shared<ByteLevel>(addPrefixSpace, regex));
  }
  if (type == "Split") {
    std::string literal, regex, behaviorName;
    bool isRegex = false, invert = false;
    FM_RETURN_IF_ERROR(readPattern(json, at, &literal, &regex, &isRegex));
    FM_RETURN_IF_ERROR(jstring(json, "behavior", at, &behaviorName, true));
    FM_RETURN_IF_ERROR(jbool(json, "invert", at, &invert));
    Expected<Behavior> behavior = behaviorOf(behaviorName, at / "behavior");
    if (!behavior)
      return behavior.status();
    Expected<Regex> re =
        isRegex ? Regex::compile(regex, (at / "pattern" / "Regex").str())
                : Regex::literal(literal, (at / "pattern" / "String").str());
    if (!re)
      return re.status();
    return Ptr(std::make_shared<RegexSplit>(std::move(*re), *behavior, invert));
  }
  if (type == "Metaspace") {
    std::string rep = "\xE2\x96\x81", scheme;
    FM_RETURN_IF_ERROR(jstring(json, "replacement", at, &rep, false));
    Expected<uint32_t> c = singleChar(rep, at / "replacement");
    if (!c)
      return c.status();
    bool addPrefixSpace = true, split = true;
    FM_RETURN_IF_ERROR(jbool(json, "add_prefix_space", at, &addPrefixSpace));
    FM_RETURN_IF_ERROR(jbool(json, "split", at, &split));
    FM_RETURN_IF_ERROR(jstring(json, "prepend_scheme", at, &scheme, false));
    Prepend prepend = addPrefixSpace ? Prepend::Always : Prepend::Never;
    if (scheme == "always")
      prepend = Prepend::Always;
    else if (scheme == "first")
      prepend = Prepend::First;
    else if (scheme == "never")
      prepend = Prepend::Never;
    else if (!scheme.empty())
      return (at / "prepend_scheme")
          .error("unknown prepend_scheme '" + scheme +
                 "' (always, first, never)");
    return Ptr(std::make_shared<Metaspace>(*c, prepend, split));
  }
  if (type == "Digits") {
    bool individual = false;
    FM_RETURN_IF_ERROR(jbool(json, "individual_digits", at, &individual));
    return Ptr(std::make_shared<CharSplit<IsNumeric>>(
        IsNumeric{}, individual ? Behavior::Isolated : Behavior::Contiguous));
  }
  if (type == "Sequence") {
    const JValue *list = jmember(json, "pretokenizers");
    if (!list || !list->IsArray())
      return (at / "pretokenizers").error("must be an array");
    std::vector<Ptr> parts;
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      JPath pat = (at / "pretokenizers")[i];
      if (!parts.empty() && parts.back()->isByteLevel())
        return pat.error("a pre-tokenizer after ByteLevel is not supported "
                         "(it would see byte-level characters)");
      auto part = fromJson((*list)[i], pat);
      if (!part)
        return part.status();
      parts.push_back(std::move(*part));
    }
    return Ptr(std::make_shared<Sequence>(std::move(parts)));
  }
  return (at / "type")
      .error("pre-tokenizer '" + type +
             "' is not supported (ByteLevel, Split, Metaspace, Digits, "
             "Sequence are)");
}

} // namespace fm::tok
