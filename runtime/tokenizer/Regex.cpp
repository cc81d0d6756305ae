// PCRE2 behind fm::tok::Regex: pattern translation, one compile (and JIT) per
// pattern, per-thread match data and JIT stack.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/Regex.h"

#include "tokenizer/UnicodeAdditions.h"
#include "tokenizer/Utf8.h"

#include <pcre2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fm::tok {

struct Regex::Code {
  pcre2_code *code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Limits that keep a hostile pattern from running away (plain regexes of
// real tokenizers stay far below them).
constexpr uint32_t kMatchLimit = 50'000'000;
constexpr uint32_t kDepthLimit = 1'000'000;

// Per-thread match state: match data (one pair is enough, we only read the
// whole match), a match context with limits, and a JIT stack.
struct ThreadMatchState {
  pcre2_match_data *data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context *context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack *stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024,
                                                  nullptr);
  ThreadMatchState() {
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    if (stack)
      pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState &threadState() {
  thread_local ThreadMatchState state;
  return state;
}

bool pcre2KnowsUnicode15() {
  static const bool knows = [] {
    char version[32] = {0};
    pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
    int major = std::atoi(version);
    return major >= 15;
  }();
  return knows;
}

template <size_t N>
void appendRanges(std::string &out, const CodePointRange (&ranges)[N]) {
  char buf[32];
  for (const CodePointRange &r : ranges) {
    if (r.first == r.last)
      std::snprintf(buf, sizeof buf, "\\x{%X}", r.first);
    else
      std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", r.first, r.last);
    out += buf;
  }
}

// The extra class items for \p{L}, \p{M}, \p{N} (empty when PCRE2 is new
// enough or the property is another one).
std::string additionsFor(std::string_view property) {
  std::string out;
  if (pcre2KnowsUnicode15())
    return out;
  if (property == "L")
    appendRanges(out, kUnicode15AddedL);
  else if (property == "M")
    appendRanges(out, kUnicode15AddedM);
  else if (property == "N")
    appendRanges(out, kUnicode15AddedN);
  return out;
}

} // namespace

std::string Regex::translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool inClass = false;
  size_t classStart = 0; // index in p just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      if (e == 's') {
        out += inClass ? "\\s\\x{85}" : "[\\s\\x{85}]";
        ++i;
        continue;
      }
      if (e == 'S' && !inClass) {
        out += "[^\\s\\x{85}]";
        ++i;
        continue;
      }
      if ((e == 'p' || e == 'P') && i + 2 < p.size()) {
        // \pL or \p{L}
        std::string_view prop;
        size_t end;
        if (p[i + 2] == '{') {
          size_t close = p.find('}', i + 3);
          if (close == std::string_view::npos) {
            out.append(p.substr(i, 2));
            ++i;
            continue;
          }
          prop = p.substr(i + 3, close - (i + 3));
          end = close;
        } else {
          prop = p.substr(i + 2, 1);
          end = i + 2;
        }
        std::string extra = additionsFor(prop);
        std::string item = std::string("\\") + e + "{" + std::string(prop) + "}";
        if (extra.empty() || (inClass && e == 'P')) {
          out += item;
        } else if (inClass) {
          out += item + extra;
        } else {
          out += (e == 'p' ? "[" : "[^") + std::string("\\p{") +
                 std::string(prop) + "}" + extra + "]";
        }
        i = end;
        continue;
      }
      out.push_back(c);
      out.push_back(e);
      ++i;
      continue;
    }
    if (!inClass && c == '[') {
      inClass = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out.push_back('^');
        ++i;
      }
      classStart = i + 1;
      // A ']' first in a class is a literal.
      if (classStart < p.size() && p[classStart] == ']') {
        out.push_back(']');
        ++i;
      }
      continue;
    }
    if (inClass && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (inClass && c == ']') {
      inClass = false;
    }
    out.push_back(c);
  }
  return out;
}

Expected<Regex> Regex::compile(std::string_view pattern,
                               const std::string &where) {
  Regex re;
  re.source_ = std::string(pattern);
  re.where_ = where;
  std::string translated = translate(pattern);
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
      PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset,
      nullptr);
  if (!code) {
    // Recompile the original to report an offset into what the user wrote.
    pcre2_code *original = pcre2_compile(
        reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
        PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
    pcre2_code_free(original);
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(errorCode, message, sizeof message);
    return Status::error(where + ": PCRE2 rejects the regex at offset " +
                         std::to_string(errorOffset) + ": " +
                         reinterpret_cast<const char *>(message));
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  re.code_ = std::move(holder);
  return re;
}

Expected<Regex> Regex::literal(std::string_view literal,
                               const std::string &where) {
  // \Q...\E quotes everything but a literal "\E", which is spelled out.
  std::string p;
  size_t start = 0;
  while (true) {
    size_t e = literal.find("\\E", start);
    p += "\\Q";
    p.append(literal.substr(start, e == std::string_view::npos
                                       ? std::string_view::npos
                                       : e - start));
    p += "\\E";
    if (e == std::string_view::npos)
      break;
    p += "\\\\E";
    start = e + 2;
  }
  Expected<Regex> re = compile(p, where);
  if (re)
    re->source_ = std::string(literal);
  return re;
}

int Regex::find(std::string_view text, size_t from, size_t *start,
                size_t *end) const {
  ThreadMatchState &st = threadState();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = code_->jit
               ? pcre2_jit_match(code_->code, subject, text.size(), from, 0,
                                 st.data, st.context)
               : pcre2_match(code_->code, subject, text.size(), from,
                             PCRE2_NO_UTF_CHECK, st.data, st.context);
  if (rc == PCRE2_ERROR_NOMATCH)
    return 0;
  if (rc < 0)
    return rc;
  const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st.data);
  *start = ov[0];
  *end = ov[1];
  return 1;
}

Status Regex::matchError(int rc, size_t length) const {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(rc, message, sizeof message);
  return Status::error(where_ + ": the regex gave up on a piece of " +
                       std::to_string(length) + " bytes: " +
                       reinterpret_cast<const char *>(message));
}

size_t Regex::nextCharLength(std::string_view text, size_t pos) {
  return utf8Length(static_cast<uint8_t>(text[pos]));
}

} // namespace fm::tok
