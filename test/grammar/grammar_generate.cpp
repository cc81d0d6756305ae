// Constrained random generation without a model: for each schema and seed, repeatedly draw a
// random token among those the mask allows until eos is drawn. Checks that every drawn token is
// accepted, that the mask never empties, that sampled masks equal a brute-force check of every
// token, and that the text matches the schema's grammar in both modes; writes the outputs as
// JSON lines for the independent validator (validate_generated.py).
#include "VocabLoader.h"

#include "fm/grammar.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string jsonQuote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

bool closes(const std::string &bytes) {
  return bytes.find_first_of("\"]}") != std::string::npos;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: grammar_generate TOKENIZER.json EOS[,EOS] OUT.jsonl SEEDS "
                         "VERIFY_STEPS SCHEMA.json...\n");
    return 2;
  }
  std::vector<std::string> eosNames;
  std::stringstream es(argv[2]);
  for (std::string e; std::getline(es, e, ',');)
    eosNames.push_back(e);
  auto vocab = fm::test::loadTokenizerJson(argv[1], eosNames);
  if (!vocab) {
    std::fprintf(stderr, "%s\n", vocab.message().c_str());
    return 2;
  }
  std::ofstream out(argv[3]);
  int seeds = std::atoi(argv[4]);
  int verifySteps = std::atoi(argv[5]);
  int failures = 0;
  int64_t totalTokens = 0, forcedSeen = 0, verified = 0;
  const int32_t n = int32_t(vocab->tokens.size());
  for (int si = 6; si < argc; ++si) {
    std::string path = argv[si], text = readFile(path);
    auto gen = fm::Grammar::fromJsonSchema(text, fm::GrammarMode::Generate);
    auto chk = fm::Grammar::fromJsonSchema(text, fm::GrammarMode::Check);
    if (!gen || !chk) {
      std::fprintf(stderr, "FAIL %s: %s\n", path.c_str(), (!gen ? gen : chk).message().c_str());
      ++failures;
      continue;
    }
    auto masker = fm::TokenMasker::create(*gen, *vocab);
    if (!masker) {
      std::fprintf(stderr, "FAIL %s: %s\n", path.c_str(), masker.message().c_str());
      return 2;
    }
    std::vector<uint32_t> mask(masker->maskWords());
    int64_t schemaTokens = 0;
    for (int seed = 0; seed < seeds; ++seed) {
      std::mt19937_64 rng(uint64_t(seed) * 7919 + uint64_t(si));
      fm::GrammarMatcher m(*masker);
      std::string output;
      std::vector<int32_t> allowed;
      int steps = 0;
      bool ok = true;
      std::vector<int> verifyAt;
      for (int v = 0; seed == 0 && v < verifySteps; ++v)
        verifyAt.push_back(int(rng() % 40));
      while (true) {
        fm::MaskInfo info = m.fillMask(mask.data());
        allowed.clear();
        for (int32_t t = 0; t < n; ++t)
          if ((mask[size_t(t) >> 5] >> (t & 31)) & 1)
            allowed.push_back(t);
        if (allowed.empty() || int64_t(allowed.size()) != info.allowed) {
          std::fprintf(stderr, "FAIL %s seed %d step %d: %zu tokens allowed (info %lld) after %s\n",
                       path.c_str(), seed, steps, allowed.size(), (long long)info.allowed,
                       output.c_str());
          ok = false;
          break;
        }
        if (std::find(verifyAt.begin(), verifyAt.end(), steps) != verifyAt.end()) {
          // Brute force: every token through the matcher, against the mask bit.
          int mismatches = 0;
          for (int32_t t = 0; t < n; ++t) {
            bool bit = (mask[size_t(t) >> 5] >> (t & 31)) & 1;
            if (bit != m.canAcceptToken(t) && mismatches++ < 5)
              std::fprintf(stderr, "FAIL %s step %d: token %d %s: mask %d, matcher %d\n",
                           path.c_str(), steps, t, jsonQuote(vocab->tokens[size_t(t)]).c_str(),
                           bit, !bit);
          }
          ++verified;
          if (mismatches) {
            ok = false;
            break;
          }
        }
        if (info.forced >= 0) {
          ++forcedSeen;
          if (allowed.size() != 1 || allowed[0] != info.forced) {
            std::fprintf(stderr, "FAIL %s: forced token %d but %zu allowed\n", path.c_str(),
                         info.forced, allowed.size());
            ok = false;
            break;
          }
        }
        // Past 150 tokens, prefer eos and tokens that close a string, array or object, so
        // recursion and long strings end.
        std::vector<int32_t> pool;
        if (steps > 150)
          for (int32_t t : allowed)
            if (std::find(vocab->eos.begin(), vocab->eos.end(), t) != vocab->eos.end() ||
                closes(vocab->tokens[size_t(t)]))
              pool.push_back(t);
        const std::vector<int32_t> &from = pool.empty() ? allowed : pool;
        int32_t t = from[rng() % from.size()];
        if (!m.acceptToken(t)) {
          std::fprintf(stderr, "FAIL %s seed %d: allowed token %d refused\n", path.c_str(), seed, t);
          ok = false;
          break;
        }
        ++steps;
        if (m.isFinished())
          break;
        output += vocab->tokens[size_t(t)];
        if (steps > 3000) {
          std::fprintf(stderr, "FAIL %s seed %d: no eos after 3000 tokens\n", path.c_str(), seed);
          ok = false;
          break;
        }
      }
      if (ok) {
        for (const fm::Grammar *g : {&*gen, &*chk}) {
          fm::GrammarMatcher bytes(*g);
          if (bytes.acceptBytes(output) != output.size() || !bytes.isAccepting()) {
            std::fprintf(stderr, "FAIL %s seed %d: the %s grammar refuses the output %s\n",
                         path.c_str(), seed, g == &*gen ? "generate" : "check", output.c_str());
            ok = false;
          }
        }
      }
      if (!ok) {
        ++failures;
        continue;
      }
      schemaTokens += steps;
      out << "{\"schema\": " << jsonQuote(path) << ", \"seed\": " << seed
          << ", \"tokens\": " << steps << ", \"text\": " << jsonQuote(output) << "}\n";
    }
    totalTokens += schemaTokens;
    std::printf("  %-40s %d outputs, %lld tokens, %zu cached positions\n", path.c_str(), seeds,
                (long long)schemaTokens, masker->cachedPositions());
  }
  std::printf("generated %lld tokens; %lld forced tokens seen; %lld masks checked against every "
              "token; %d failures\n",
              (long long)totalTokens, (long long)forcedSeen, (long long)verified, failures);
  return failures ? 1 : 0;
}
