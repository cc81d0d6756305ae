// Jinja2's lexer (jinja2/lexer.py) for HF's environment: trim_blocks,
// lstrip_blocks, '-'/'+' whitespace control, comments, raw blocks, newline
// normalization and the trailing newline dropped.
#include "chat/Template.h"
#include "tokenizer/Utf8.h"

#include <cstring>

namespace fm::chat {
namespace {

// Python's str.isspace() on the code point at s[i] (UTF-8); sets *n to its
// length. Used for rstrip() and the \s of Jinja's regexes.
bool pySpaceAt(const std::string &s, size_t i, size_t *n) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    *n = 1;
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  }
  uint32_t cp = 0;
  size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (i + len > s.size()) {
    *n = 1;
    return false;
  }
  cp = c & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *n = len;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// The length of the whitespace run at s[i].
size_t spaceRun(const std::string &s, size_t i) {
  size_t start = i, n;
  while (i < s.size() && pySpaceAt(s, i, &n))
    i += n;
  return i - start;
}

bool allSpace(const std::string &s, size_t from) {
  return from < s.size() && spaceRun(s, from) == s.size() - from;
}

// Python's str.rstrip().
std::string rstripPy(const std::string &s) {
  size_t end = 0, i = 0, n;
  while (i < s.size()) {
    bool sp = pySpaceAt(s, i, &n);
    i += n;
    if (!sp)
      end = i;
  }
  return s.substr(0, end);
}

bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// Python's "unicode-escape" decoding of a string literal's body.
std::string unescape(const std::string &s, int line) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    char e = s[++i];
    switch (e) {
    case '\n':
      break; // a backslash-newline continues the line
    case '\\':
      out.push_back('\\');
      break;
    case '\'':
      out.push_back('\'');
      break;
    case '"':
      out.push_back('"');
      break;
    case 'a':
      out.push_back('\a');
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'n':
      out.push_back('\n');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'v':
      out.push_back('\v');
      break;
    case 'x':
    case 'u':
    case 'U': {
      size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      for (size_t k = 0; k < digits; ++k) {
        int h = i + 1 + k < s.size() ? hexValue(s[i + 1 + k]) : -1;
        if (h < 0)
          throw TemplateError("truncated \\" + std::string(1, e) +
                                  " escape in a string",
                              line);
        cp = cp * 16 + static_cast<uint32_t>(h);
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        throw TemplateError("escape out of range in a string", line);
      i += digits;
      tok::appendUtf8(out, cp);
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t cp = static_cast<uint32_t>(e - '0');
        for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' &&
                        s[i + 1] <= '7';
             ++k)
          cp = cp * 8 + static_cast<uint32_t>(s[++i] - '0');
        tok::appendUtf8(out, cp);
      } else if (e == 'N') {
        throw TemplateError("\\N{...} escapes are not supported", line);
      } else {
        out.push_back('\\'); // unknown escapes stay as written
        out.push_back(e);
      }
    }
  }
  return out;
}

const char *const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-",
                                  "/",  "*",  "%",  "~",  "[",  "]",  "(", ")",
                                  "{",  "}",  ">",  "<",  "=",  ".",  ":", "|",
                                  ",",  ";"};

struct Lexer {
  std::string src;
  size_t pos = 0;
  int line = 1;
  bool lineStarting = true;
  std::vector<Token> out;

  void emit(Token::Kind k, std::string text = {}) {
    Token t{k, std::move(text)};
    t.line = line;
    out.push_back(std::move(t));
  }
  void advance(size_t to) {
    for (size_t k = pos; k < to; ++k)
      if (src[k] == '\n')
        ++line;
    pos = to;
  }

  void run() {
    while (pos < src.size()) {
      size_t open = std::string::npos;
      const char *kinds[] = {"{{", "{%", "{#"};
      int which = -1;
      for (int k = 0; k < 3; ++k) {
        size_t p = src.find(kinds[k], pos);
        if (p != std::string::npos && p < open) {
          open = p;
          which = k;
        }
      }
      if (open == std::string::npos) {
        emit(Token::Kind::Data, src.substr(pos));
        advance(src.size());
        break;
      }
      std::string text = src.substr(pos, open - pos);
      char sign = open + 2 < src.size() && (src[open + 2] == '-' || src[open + 2] == '+')
                      ? src[open + 2]
                      : 0;
      if (sign == '-') {
        text = rstripPy(text);
      } else if (sign != '+' && which != 0) {
        size_t lpos = text.rfind('\n');
        lpos = lpos == std::string::npos ? 0 : lpos + 1;
        if ((lpos > 0 || lineStarting) && allSpace(text, lpos))
          text.resize(lpos);
      }
      if (!text.empty())
        emit(Token::Kind::Data, text);
      advance(open + 2 + (sign ? 1 : 0));
      if (which == 2) {
        comment();
      } else if (which == 1 && isRaw(pos)) {
        raw();
      } else {
        tag(which == 0);
      }
    }
    emit(Token::Kind::End);
  }

  bool isRaw(size_t p) const {
    p += spaceRun(src, p);
    if (src.compare(p, 3, "raw") != 0)
      return false;
    p += 3;
    p += spaceRun(src, p);
    if (src.compare(p, 3, "-%}") == 0 || src.compare(p, 2, "%}") == 0)
      return true;
    return false;
  }

  // After a tag end at `end` (one past it): trim_blocks eats one newline.
  size_t blockSuffix(size_t end) const {
    return end < src.size() && src[end] == '\n' ? end + 1 : end;
  }

  void comment() {
    for (size_t p = pos; p < src.size(); ++p) {
      size_t end = 0;
      if (src.compare(p, 3, "+#}") == 0)
        end = p + 3;
      else if (src.compare(p, 3, "-#}") == 0)
        end = p + 3 + spaceRun(src, p + 3);
      else if (src.compare(p, 2, "#}") == 0)
        end = blockSuffix(p + 2);
      if (end) {
        lineStarting = src[end - 1] == '\n';
        advance(end);
        return;
      }
    }
    throw TemplateError("Missing end of comment tag", line);
  }

  void raw() {
    // {% raw %} ... {% endraw %}: the body is data.
    size_t p = pos + spaceRun(src, pos) + 3;
    p += spaceRun(src, p);
    size_t bodyStart;
    if (src.compare(p, 3, "-%}") == 0)
      bodyStart = p + 3 + spaceRun(src, p + 3);
    else
      bodyStart = p + 2;
    for (size_t q = bodyStart; q < src.size(); ++q) {
      if (src.compare(q, 2, "{%") != 0)
        continue;
      size_t r = q + 2;
      char sign = r < src.size() && (src[r] == '-' || src[r] == '+') ? src[r] : 0;
      if (sign)
        ++r;
      r += spaceRun(src, r);
      if (src.compare(r, 6, "endraw") != 0)
        continue;
      r += 6;
      r += spaceRun(src, r);
      size_t end;
      if (src.compare(r, 3, "+%}") == 0)
        end = r + 3;
      else if (src.compare(r, 3, "-%}") == 0)
        end = r + 3 + spaceRun(src, r + 3);
      else if (src.compare(r, 2, "%}") == 0)
        end = blockSuffix(r + 2);
      else
        continue;
      std::string body = src.substr(bodyStart, q - bodyStart);
      if (sign == '-') {
        body = rstripPy(body);
      } else if (sign != '+') {
        size_t lpos = body.rfind('\n');
        lpos = lpos == std::string::npos ? 0 : lpos + 1;
        if (lpos > 0 && allSpace(body, lpos))
          body.resize(lpos);
      }
      advance(bodyStart);
      if (!body.empty())
        emit(Token::Kind::Data, body);
      lineStarting = src[end - 1] == '\n';
      advance(end);
      return;
    }
    throw TemplateError("Missing end of raw directive", line);
  }

  void tag(bool variable) {
    emit(variable ? Token::Kind::VarBegin : Token::Kind::BlockBegin);
    std::vector<char> balance;
    while (true) {
      if (pos >= src.size())
        throw TemplateError(std::string("unexpected end of template, expected '") +
                                (variable ? "}}" : "%}") + "'",
                            line);
      if (balance.empty()) {
        size_t end = 0;
        if (variable) {
          if (src.compare(pos, 3, "-}}") == 0)
            end = pos + 3 + spaceRun(src, pos + 3);
          else if (src.compare(pos, 2, "}}") == 0)
            end = pos + 2;
        } else {
          if (src.compare(pos, 3, "+%}") == 0)
            end = pos + 3;
          else if (src.compare(pos, 3, "-%}") == 0)
            end = pos + 3 + spaceRun(src, pos + 3);
          else if (src.compare(pos, 2, "%}") == 0)
            end = blockSuffix(pos + 2);
        }
        if (end) {
          emit(variable ? Token::Kind::VarEnd : Token::Kind::BlockEnd);
          lineStarting = src[end - 1] == '\n';
          advance(end);
          return;
        }
      }
      size_t ws = spaceRun(src, pos);
      if (ws) {
        advance(pos + ws);
        continue;
      }
      char c = src[pos];
      if (isDigit(c)) {
        number();
        continue;
      }
      if (isNameStart(c)) {
        size_t e = pos;
        while (e < src.size() && isNameChar(src[e]))
          ++e;
        emit(Token::Kind::Name, src.substr(pos, e - pos));
        advance(e);
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t e = pos + 1;
        while (e < src.size() && src[e] != c) {
          if (src[e] == '\\')
            ++e;
          ++e;
        }
        if (e >= src.size())
          throw TemplateError("unexpected end of string", line);
        int startLine = line;
        std::string body = src.substr(pos + 1, e - pos - 1);
        emit(Token::Kind::String, unescape(body, startLine));
        advance(e + 1);
        continue;
      }
      bool matched = false;
      for (const char *op : kOperators) {
        size_t n = std::strlen(op);
        if (src.compare(pos, n, op) != 0)
          continue;
        std::string o(op);
        if (o == "{" || o == "(" || o == "[")
          balance.push_back(o == "{" ? '}' : o == "(" ? ')' : ']');
        else if (o == "}" || o == ")" || o == "]") {
          if (balance.empty())
            throw TemplateError("unexpected '" + o + "'", line);
          if (balance.back() != o[0])
            throw TemplateError("unexpected '" + o + "', expected '" +
                                    std::string(1, balance.back()) + "'",
                                line);
          balance.pop_back();
        }
        emit(Token::Kind::Op, o);
        advance(pos + n);
        matched = true;
        break;
      }
      if (!matched)
        throw TemplateError(std::string("unexpected char '") + c + "'", line);
    }
  }

  void number() {
    size_t e = pos;
    auto digits = [&](size_t p) {
      size_t q = p;
      while (q < src.size() && (isDigit(src[q]) || (src[q] == '_' && q > p &&
                                                      q + 1 < src.size() &&
                                                      isDigit(src[q + 1]))))
        ++q;
      return q;
    };
    e = digits(pos);
    bool isFloat = false;
    if (e + 1 < src.size() && src[e] == '.' && isDigit(src[e + 1])) {
      isFloat = true;
      e = digits(e + 1);
    }
    if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
      size_t q = e + 1;
      if (q < src.size() && (src[q] == '+' || src[q] == '-'))
        ++q;
      if (q < src.size() && isDigit(src[q])) {
        isFloat = true;
        e = digits(q);
      }
    }
    std::string text;
    for (size_t k = pos; k < e; ++k)
      if (src[k] != '_')
        text.push_back(src[k]);
    Token t{isFloat ? Token::Kind::Float : Token::Kind::Int, text};
    t.line = line;
    if (isFloat)
      t.f = std::strtod(text.c_str(), nullptr);
    else
      t.i = std::strtoll(text.c_str(), nullptr, 10);
    out.push_back(t);
    advance(e);
  }
};

} // namespace

std::vector<Token> lex(const std::string &source) {
  Lexer lx;
  // Newlines become "\n"; one trailing newline is dropped.
  lx.src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      lx.src.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      lx.src.push_back(source[i]);
    }
  }
  if (!lx.src.empty() && lx.src.back() == '\n')
    lx.src.pop_back();
  lx.run();
  return std::move(lx.out);
}

} // namespace fm::chat
