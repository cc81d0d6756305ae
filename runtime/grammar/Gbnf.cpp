// A GBNF parser that follows llama.cpp's grammar-parser: a rule ends at a newline unless inside
// parentheses or right after '|'.
#include "grammar/Gbnf.h"

#include <map>
#include <string>
#include <vector>

namespace fm::grammar {

namespace {

bool isWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
public:
  explicit GbnfParser(std::string_view text) : t_(text) {}

  Expected<Cfg> parse() {
    space(true);
    while (ok() && i_ < t_.size())
      rule();
    if (!ok())
      return Status::error(error_);
    for (auto &[name, ref] : refs_)
      if (!defined_.count(name))
        return Status::error(where(ref) + "undefined rule '" + name + "'");
    auto root = ids_.find("root");
    if (root == ids_.end())
      return Status::error("gbnf: the grammar has no 'root' rule");
    cfg_.root = root->second;
    return std::move(cfg_);
  }

private:
  bool ok() const { return error_.empty(); }
  std::string where(size_t at) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return "gbnf: " + std::to_string(line) + ":" + std::to_string(col) + ": ";
  }
  void fail(size_t at, const std::string &what) {
    if (error_.empty())
      error_ = where(at) + what;
  }
  char peek(size_t k = 0) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }
  bool end() const { return i_ >= t_.size(); }

  void space(bool newlineOk) {
    while (!end()) {
      char c = peek();
      if (c == ' ' || c == '\t') {
        ++i_;
      } else if (c == '#') {
        while (!end() && peek() != '\n' && peek() != '\r')
          ++i_;
      } else if (newlineOk && (c == '\n' || c == '\r')) {
        ++i_;
      } else {
        break;
      }
    }
  }

  int32_t ruleId(const std::string &name) {
    auto it = ids_.find(name);
    if (it != ids_.end())
      return it->second;
    int32_t r = cfg_.addRule(name);
    ids_[name] = r;
    return r;
  }

  std::string name() {
    size_t from = i_;
    while (!end() && isWordChar(peek()))
      ++i_;
    return std::string(t_.substr(from, i_ - from));
  }

  void rule() {
    size_t at = i_;
    std::string n = name();
    if (n.empty())
      return fail(at, "expected a rule name");
    space(false);
    if (t_.substr(i_, 3) != "::=")
      return fail(i_, "expected '::=' after rule name '" + n + "'");
    i_ += 3;
    space(true);
    if (defined_.count(n))
      return fail(at, "rule '" + n + "' is defined twice");
    defined_[n] = at;
    int32_t r = ruleId(n);
    alternates(r, false);
    if (!ok())
      return;
    if (peek() == '\r')
      i_ += peek(1) == '\n' ? 2 : 1;
    else if (peek() == '\n')
      ++i_;
    else if (!end()) {
      if (peek() == '<')
        return fail(i_, "token references <...> are not supported (the grammar is over bytes)");
      return fail(i_, std::string("expected a newline or the end, found '") + peek() + "'");
    }
    space(true);
  }

  void alternates(int32_t rule, bool nested) {
    cfg_.addAlt(rule, sequence(nested));
    while (ok() && peek() == '|') {
      ++i_;
      space(true);
      cfg_.addAlt(rule, sequence(nested));
    }
  }

  // One code point of a literal or class, with llama.cpp's escapes.
  bool character(uint32_t *cp) {
    size_t at = i_;
    if (peek() == '\\') {
      ++i_;
      char e = peek();
      ++i_;
      auto hexN = [&](int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          char c = peek();
          int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
          if (d < 0) {
            fail(i_, "expected " + std::to_string(digits) + " hex digits after \\" + e);
            return false;
          }
          v = v * 16 + uint32_t(d);
          ++i_;
        }
        *cp = v;
        return true;
      };
      switch (e) {
      case 'x':
        return hexN(2);
      case 'u':
        return hexN(4);
      case 'U':
        return hexN(8);
      case 't':
        *cp = '\t';
        return true;
      case 'r':
        *cp = '\r';
        return true;
      case 'n':
        *cp = '\n';
        return true;
      case '\\':
      case '"':
      case '[':
      case ']':
        *cp = uint32_t(uint8_t(e));
        return true;
      default:
        fail(at, std::string("unknown escape \\") + e);
        return false;
      }
    }
    std::string s(t_.substr(i_, 4));
    size_t k = 0;
    if (!decodeUtf8(s, &k, cp)) {
      fail(at, "invalid UTF-8");
      return false;
    }
    i_ += k;
    return true;
  }

  std::vector<Sym> sequence(bool nested) {
    std::vector<Sym> seq;
    size_t lastStart = i_;
    while (ok() && !end()) {
      char c = peek();
      size_t at = i_;
      if (c == '"') {
        ++i_;
        std::string bytes;
        while (ok() && peek() != '"') {
          if (end())
            return fail(at, "unterminated literal"), seq;
          uint32_t cp;
          if (!character(&cp))
            return seq;
          if (cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(at, "the literal holds an invalid code point"), seq;
          appendUtf8(bytes, cp);
        }
        ++i_;
        lastStart = at;
        seq.push_back(bytes.empty() ? cfg_.empty() : cfg_.literal(bytes));
        space(nested);
      } else if (c == '[') {
        ++i_;
        bool negate = false;
        if (peek() == '^') {
          negate = true;
          ++i_;
        }
        CpSet set;
        while (ok() && peek() != ']') {
          if (end())
            return fail(at, "unterminated character class"), seq;
          uint32_t lo, hi;
          if (!character(&lo))
            return seq;
          hi = lo;
          if (peek() == '-' && peek(1) != ']' && i_ + 1 < t_.size()) {
            ++i_;
            if (!character(&hi))
              return seq;
            if (hi < lo)
              return fail(at, "range out of order in character class"), seq;
          }
          set.add(lo, hi);
        }
        ++i_;
        if (negate)
          set = set.complement();
        lastStart = at;
        seq.push_back(cfg_.utf8Char(set));
        space(nested);
      } else if (isWordChar(c)) {
        std::string n = name();
        if (!refs_.count(n))
          refs_[n] = at;
        lastStart = at;
        seq.push_back(ruleId(n));
        space(nested);
      } else if (c == '(') {
        if (++depth_ > 256)
          return fail(at, "groups nested deeper than 256"), seq;
        ++i_;
        space(true);
        int32_t group = cfg_.addRule("(group at " + where(at).substr(6) + ")");
        alternates(group, true);
        if (!ok())
          return seq;
        if (peek() != ')')
          return fail(at, "expected ')' to close this group"), seq;
        ++i_;
        --depth_;
        lastStart = at;
        seq.push_back(group);
        space(nested);
      } else if (c == '.') {
        ++i_;
        lastStart = at;
        seq.push_back(cfg_.utf8Char(CpSet::all()));
        space(nested);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.empty())
          return fail(at, std::string("nothing before '") + c + "' to repeat"), seq;
        int64_t min = 0, max = -1;
        ++i_;
        if (c == '+') {
          min = 1;
        } else if (c == '?') {
          max = 1;
        } else if (c == '{') {
          space(false);
          auto number = [&](int64_t *v) {
            size_t from = i_;
            *v = 0;
            while (peek() >= '0' && peek() <= '9') {
              *v = std::min<int64_t>(*v * 10 + (peek() - '0'), int64_t(1) << 40);
              ++i_;
            }
            return i_ > from;
          };
          if (!number(&min))
            return fail(i_, "expected a number after '{'"), seq;
          space(false);
          max = min;
          if (peek() == ',') {
            ++i_;
            space(false);
            if (!number(&max))
              max = -1;
            space(false);
          }
          if (peek() != '}')
            return fail(i_, "expected '}' to close the repetition"), seq;
          ++i_;
          if (max >= 0 && max < min)
            return fail(at, "repetition {m,n} with n < m"), seq;
          if (min > 10000 || max > 10000)
            return fail(at, "repetition count above 10000"), seq;
        }
        Sym x = seq.back();
        seq.pop_back();
        seq.push_back(cfg_.repeat(x, min, max, "(repeat at " + where(lastStart).substr(6) + ")"));
        space(nested);
      } else {
        break;
      }
    }
    return seq;
  }

  std::string_view t_;
  size_t i_ = 0;
  int depth_ = 0;
  Cfg cfg_;
  std::map<std::string, int32_t> ids_;
  std::map<std::string, size_t> defined_, refs_;
  std::string error_;
};

} // namespace

Expected<Cfg> parseGbnf(std::string_view text) { return GbnfParser(text).parse(); }

} // namespace fm::grammar
