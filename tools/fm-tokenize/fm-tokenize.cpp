// fm-tokenize: encodes all of stdin (one UTF-8 text) to ids with a Hugging
// Face tokenizer.json and prints them separated by spaces; --decode reads ids
// (separated by spaces, commas or newlines) and writes the exact text.
#include "fm/tokenizer.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-tokenize: error: %s\n", message.c_str());
  return 1;
}

std::string readStdin() {
  std::string all;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0)
    all.append(buf, n);
  return all;
}

/// Ids separated by spaces, tabs, commas or newlines.
bool parseIds(const std::string &text, std::vector<fm::TokenId> *ids,
              std::string *error) {
  size_t i = 0;
  auto isSep = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',';
  };
  while (i < text.size()) {
    if (isSep(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !isSep(text[j]))
      ++j;
    std::string word = text.substr(i, j - i);
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(word.c_str(), &end, 10);
    if (word.empty() || *end != '\0' || errno || v < 0 || v > INT32_MAX) {
      *error = "'" + word + "' (byte " + std::to_string(i) +
               " of stdin) is not a token id";
      return false;
    }
    ids->push_back(static_cast<fm::TokenId>(v));
    i = j;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"fm-tokenize: text on stdin -> token ids (or --decode: ids -> "
               "text) with a Hugging Face tokenizer"};
  std::string path;
  bool decode = false, addSpecial = false;
  app.add_option("path", path,
                 "tokenizer.json, or a directory with tokenizer.json "
                 "(+ tokenizer_config.json)")
      ->required();
  app.add_flag("--decode", decode,
               "read ids (spaces, commas or newlines) and write the text");
  app.add_flag("--add-special", addSpecial,
               "add the post-processor's special tokens (BOS/EOS)");
  CLI11_PARSE(app, argc, argv);

  fm::Expected<fm::Tokenizer> tokenizer = fm::Tokenizer::open(path);
  if (!tokenizer)
    return fail(tokenizer.message());
  std::string input = readStdin();

  if (decode) {
    std::vector<fm::TokenId> ids;
    std::string error;
    if (!parseIds(input, &ids, &error))
      return fail(error);
    fm::Expected<std::string> text = tokenizer->decode(ids);
    if (!text)
      return fail(text.message());
    std::fwrite(text->data(), 1, text->size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  fm::Expected<std::vector<fm::TokenId>> ids =
      tokenizer->encode(input, addSpecial);
  if (!ids)
    return fail(ids.message());
  std::string out;
  out.reserve(ids->size() * 6 + 1);
  for (size_t i = 0; i < ids->size(); ++i) {
    if (i)
      out.push_back(' ');
    out += std::to_string((*ids)[i]);
  }
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
