// fm-grammar: compiles a JSON Schema, GBNF grammar or regex and checks text against it:
// exit 0 when all of stdin is a complete match, 1 when not (saying where), 2 when the grammar
// itself is malformed or the command line is wrong.
#include "fm/grammar.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

namespace {

constexpr int kMatch = 0, kNoMatch = 1, kBadGrammar = 2;

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-grammar: error: %s\n", message.c_str());
  return kBadGrammar;
}

bool readFile(const std::string &path, std::string *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// "byte 17 (line 2, column 5)"; columns count characters, not bytes.
std::string where(const std::string &text, size_t at) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      col = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++col;
    }
  }
  return "byte " + std::to_string(at) + " (line " + std::to_string(line) + ", column " +
         std::to_string(col) + ")";
}

std::string showByte(unsigned char c) {
  char buf[16];
  if (c >= 0x20 && c < 0x7F)
    std::snprintf(buf, sizeof buf, "'%c'", c);
  else
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"fm-grammar: check text against a JSON Schema, a GBNF grammar or a regex"};
  std::string schemaPath, grammarPath, regex, mode = "check";
  bool anyJson = false, check = false, stats = false;
  auto *schemaOpt = app.add_option("--json-schema", schemaPath, "a JSON Schema file");
  auto *grammarOpt = app.add_option("--grammar", grammarPath, "a GBNF grammar file (llama.cpp)");
  auto *regexOpt = app.add_option("--regex", regex, "an ECMA-262 regex the whole text must match");
  auto *jsonOpt = app.add_flag("--json", anyJson, "any JSON value (RFC 8259)");
  schemaOpt->excludes(grammarOpt)->excludes(regexOpt)->excludes(jsonOpt);
  grammarOpt->excludes(regexOpt)->excludes(jsonOpt);
  regexOpt->excludes(jsonOpt);
  app.add_option("--mode", mode,
                 "JSON grammars (--json-schema, --json): check (any whitespace and property "
                 "order; the default) or generate (the canonical form generation writes)")
      ->check(CLI::IsMember({"check", "generate"}))
      // A GBNF grammar or a regex has one form: --mode would change nothing.
      ->excludes(grammarOpt)
      ->excludes(regexOpt);
  app.add_flag("--check", check, "read stdin and exit 0 if it is a complete match, 1 if not");
  app.add_flag("--stats", stats, "print the compiled grammar's size");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    fail(e.what());
    return kBadGrammar;
  }
  fm::GrammarMode gm = mode == "generate" ? fm::GrammarMode::Generate : fm::GrammarMode::Check;

  fm::Expected<fm::Grammar> grammar = fm::Status::error("give one of --json-schema, --grammar, --regex, --json");
  if (!schemaPath.empty()) {
    std::string text;
    if (!readFile(schemaPath, &text))
      return fail("cannot read " + schemaPath);
    grammar = fm::Grammar::fromJsonSchema(text, gm);
    if (!grammar)
      return fail(schemaPath + ": " + grammar.message());
  } else if (!grammarPath.empty()) {
    std::string text;
    if (!readFile(grammarPath, &text))
      return fail("cannot read " + grammarPath);
    grammar = fm::Grammar::fromGbnf(text);
    if (!grammar)
      return fail(grammarPath + ": " + grammar.message());
  } else if (regexOpt->count()) {
    grammar = fm::Grammar::fromRegex(regex);
  } else if (anyJson) {
    grammar = fm::Grammar::anyJson(gm);
  }
  if (!grammar)
    return fail(grammar.message());
  if (stats)
    std::printf("rules %zu, symbols %zu%s\n", grammar->ruleCount(), grammar->symbolCount(),
                grammar->isEmpty() ? " (admits nothing)" : "");
  if (!check)
    return kMatch;

  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  fm::GrammarMatcher matcher(*grammar);
  if (grammar->isEmpty()) {
    std::fprintf(stderr, "fm-grammar: no match: the grammar admits no text at all\n");
    return kNoMatch;
  }
  size_t consumed = matcher.acceptBytes(input);
  if (consumed < input.size()) {
    std::fprintf(stderr, "fm-grammar: no match at %s: %s does not fit; expected %s\n",
                 where(input, consumed).c_str(),
                 showByte(static_cast<unsigned char>(input[consumed])).c_str(),
                 matcher.describeExpected().c_str());
    return kNoMatch;
  }
  if (!matcher.isAccepting()) {
    std::fprintf(stderr, "fm-grammar: no match: the input ends at %s before the grammar is "
                         "complete; expected %s\n",
                 where(input, consumed).c_str(), matcher.describeExpected().c_str());
    return kNoMatch;
  }
  return kMatch;
}
