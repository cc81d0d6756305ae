// Tokenizer speed: tokenizer.json load time (median of 9, from the directory
// and from contents in memory) and single-thread encode MB/s of English text (the files given on the command line, concatenated). Prints
// numbers; asserts nothing (run.sh puts them beside @lenml/tokenizers').
//
//   fm-tokenizer-bench TOKENIZER_DIR TEXT_FILE...
#include "fm/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR TEXT_FILE...\n", argv[0]);
    return 2;
  }
  std::string text;
  for (int i = 2; i < argc; ++i)
    text += readAll(argv[i]);
  // Loads from the directory (fm-tokenize, --tokenizer) and from file
  // contents in memory (the tokenizer embedded in an .fmb: fm-run).
  const std::string dir = std::string(argv[1]) + "/";
  const std::string json = readAll(dir + "tokenizer.json");
  const std::string config = readAll(dir + "tokenizer_config.json");
  std::vector<double> loads, memoryLoads;
  fm::Expected<fm::Tokenizer> tok = fm::Tokenizer::open(argv[1]);
  for (int r = 0; r < 9; ++r) {
    double t0 = seconds();
    tok = fm::Tokenizer::open(argv[1]);
    loads.push_back(seconds() - t0);
    if (!tok) {
      std::fprintf(stderr, "%s\n", tok.message().c_str());
      return 1;
    }
    t0 = seconds();
    fm::Expected<fm::Tokenizer> fromMemory = fm::Tokenizer::fromJson(json, config);
    memoryLoads.push_back(seconds() - t0);
    if (!fromMemory) {
      std::fprintf(stderr, "%s\n", fromMemory.message().c_str());
      return 1;
    }
  }
  // A cold encode (empty cache) and warm ones.
  size_t tokens = 0;
  double t0 = seconds();
  tokens = tok->encode(text)->size();
  double cold = seconds() - t0;
  std::vector<double> warm;
  double total = 0;
  while (total < 2.0 || warm.size() < 3) {
    t0 = seconds();
    size_t n = tok->encode(text)->size();
    double dt = seconds() - t0;
    if (n != tokens)
      return 1;
    warm.push_back(dt);
    total += dt;
  }
  double mb = text.size() / 1e6;
  std::printf("{\"impl\": \"fmc\", \"bytes\": %zu, \"tokens\": %zu, "
              "\"load_ms\": %.1f, \"load_memory_ms\": %.1f, "
              "\"encode_cold_mb_s\": %.2f, "
              "\"encode_mb_s\": %.2f}\n",
              text.size(), tokens, median(loads) * 1e3,
              median(memoryLoads) * 1e3, mb / cold,
              mb / median(warm));
  return 0;
}
