// fm-tokenize: encodes all of stdin (one UTF-8 text) to ids with a Hugging
// Face tokenizer.json (or the one an .fmb artifact embeds) and prints them
// separated by spaces; --decode reads ids (separated by spaces, commas or
// newlines) and writes the exact text.
#include "fm/artifact.h"
#include "fm/format.h"
#include "fm/tokenizer.h"

#include "common/OptionChecks.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
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

/// Whether `path` is an fmc artifact (a size-prefixed FlatBuffer whose
/// identifier, at byte 8, is "FMB1").
bool isArtifact(const std::string &path) {
  char head[12];
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  const bool full = std::fread(head, 1, sizeof head, f) == sizeof head;
  std::fclose(f);
  return full && std::memcmp(head + 8, fm::format::kFileIdentifier, 4) == 0;
}

fm::Expected<fm::Tokenizer> openTokenizer(const std::string &path) {
  if (!isArtifact(path))
    return fm::Tokenizer::open(path);
  auto artifact = fm::ArtifactFile::open(path, fm::ArtifactFile::Options{});
  if (!artifact)
    return artifact.status();
  return (*artifact)->tokenizer();
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"fm-tokenize: text on stdin -> token ids (or --decode: ids -> "
               "text) with a Hugging Face tokenizer"};
  std::string path;
  bool decode = false, addSpecial = false;
  app.add_option("path", path,
                 "tokenizer.json, a directory with tokenizer.json "
                 "(+ tokenizer_config.json), or an .fmb artifact (its "
                 "embedded tokenizer)")
      ->required();
  auto *decodeFlag =
      app.add_flag("--decode", decode,
                   "read ids (spaces, commas or newlines) and write the text");
  app.add_flag("--add-special", addSpecial,
               "add the post-processor's special tokens (BOS/EOS) when "
               "encoding")
      ->excludes(decodeFlag); // --decode writes the ids as they are
  if (auto code = fm::cli::parseCommandLine(app, argc, argv, "fm-tokenize"))
    return *code;

  fm::Expected<fm::Tokenizer> tokenizer = openTokenizer(path);
  if (!tokenizer)
    return fail(tokenizer.message());
  std::string input = readStdin();

  if (decode) {
    fm::Expected<std::vector<fm::TokenId>> ids =
        fm::parseTokenIds(input, "stdin");
    if (!ids)
      return fail(ids.message());
    fm::Expected<std::string> text = tokenizer->decode(*ids);
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
