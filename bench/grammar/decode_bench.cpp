// fm-guided-decode-bench: decode tokens/s with a JSON-schema constraint as a ratio of the same
// model's unconstrained decode, measured in one run, rounds interleaved (prints numbers,
// asserts none). Each step of either mode is sample + decode; the guided one adds the mask
// (GuidedDecoder::process on a copy of the logits) and the matcher's advance; a decoder that
// completes is replaced by a fresh one, so both modes decode the same number of tokens.
// Usage: fm-guided-decode-bench MODEL.fmb TOKENIZER_DIR SCHEMA.json [TOKENS] [ROUNDS] [THREADS]
#include "fm/guided.h"
#include "fm/guided_tokenizer.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int die(const std::string &m) {
  std::fprintf(stderr, "fm-guided-decode-bench: %s\n", m.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4)
    return die("usage: fm-guided-decode-bench MODEL.fmb TOKENIZER_DIR SCHEMA.json [TOKENS] "
               "[ROUNDS] [THREADS]");
  const int tokens = argc > 4 ? std::atoi(argv[4]) : 48;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 3;
  const int threads = argc > 6 ? std::atoi(argv[6]) : 0;
  auto model = fm::Model::load(argv[1]);
  if (!model)
    return die(model.message());
  auto tok = fm::Tokenizer::open(argv[2]);
  if (!tok)
    return die(tok.message());
  std::ifstream in(argv[3], std::ios::binary);
  std::string schema((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto grammar = fm::Grammar::fromJsonSchema(schema);
  if (!grammar)
    return die(std::string(argv[3]) + ": " + grammar.message());
  std::vector<int32_t> eos;
  if (auto e = tok->eosId())
    eos.push_back(*e);
  const int64_t vocab = (*model)->vocabSize();
  auto masker = fm::TokenMasker::create(*grammar, fm::grammarVocabulary(*tok, vocab, eos));
  if (!masker)
    return die(masker.message());
  auto t0 = Clock::now();
  size_t filled = masker->precompute();
  double precomputeS = seconds(t0, Clock::now());

  fm::SessionOptions so;
  so.threads = threads;
  fm::Session session(*model, so);
  if (!session.status())
    return die(session.status().message());
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  std::vector<float> masked(static_cast<size_t>(vocab));

  // One timed generation of `tokens` decode steps; guided or not. Returns seconds; adds the
  // mask time (process + accept) to *maskS.
  auto runOnce = [&](bool guided, uint64_t seed, double *maskS) -> fm::Expected<double> {
    if (fm::Status s = session.reset(); !s)
      return s;
    auto first = session.prefill(prompt);
    if (!first)
      return first.status();
    const float *logits = first->last();
    fm::Sampler sampler(1.0f, 0, 1.0f, seed);
    auto dec = std::make_unique<fm::GuidedDecoder>(*masker);
    auto start = Clock::now();
    for (int i = 0; i < tokens; ++i) {
      int32_t token;
      if (guided) {
        auto m0 = Clock::now();
        if (dec->finished() || dec->isComplete())
          dec = std::make_unique<fm::GuidedDecoder>(*masker);
        std::copy(logits, logits + vocab, masked.begin());
        auto step = dec->process(masked.data(), vocab);
        if (!step)
          return step.status();
        auto m1 = Clock::now();
        if (step->forced >= 0) {
          token = step->forced;
        } else {
          auto s = session.sample(sampler, masked.data());
          if (!s)
            return s.status();
          token = *s;
        }
        auto m2 = Clock::now();
        if (fm::Status s = dec->accept(token); !s)
          return s;
        *maskS += seconds(m0, m1) + seconds(m2, Clock::now());
        if (std::find(eos.begin(), eos.end(), token) != eos.end())
          token = prompt[0]; // feed something ordinary instead of eos, keep decoding
      } else {
        auto s = session.sample(sampler, logits);
        if (!s)
          return s.status();
        token = *s;
      }
      auto next = session.decode(token);
      if (!next)
        return next.status();
      logits = *next;
    }
    return seconds(start, Clock::now());
  };

  // A warm-up of each, then interleaved rounds.
  double maskS = 0.0;
  for (bool g : {false, true})
    if (auto w = runOnce(g, 99, &maskS); !w)
      return die(w.message());
  std::vector<double> plain, guided, ratios;
  maskS = 0.0;
  for (int r = 0; r < rounds; ++r) {
    auto a = runOnce(false, uint64_t(r), &maskS);
    if (!a)
      return die(a.message());
    auto b = runOnce(true, uint64_t(r), &maskS);
    if (!b)
      return die(b.message());
    plain.push_back(tokens / *a);
    guided.push_back(tokens / *b);
    ratios.push_back(*a / *b);
  }
  std::printf("model %s: vocab %lld, hidden %lld, %lld layers, %.2f bits/weight; %d threads\n",
              argv[1], (long long)vocab, (long long)(*model)->hiddenSize(),
              (long long)(*model)->numLayers(), (*model)->bitsPerWeight(), session.threads());
  std::printf("schema %s: %zu mask positions precomputed in %.2f s\n", argv[3], filled,
              precomputeS);
  std::printf("decode tok/s, median of %d rounds of %d tokens: unguided %.3f, guided %.3f\n",
              rounds, tokens, median(plain), median(guided));
  std::printf("guided / unguided: median %.4f (rounds:", median(ratios));
  for (double r : ratios)
    std::printf(" %.4f", r);
  std::printf(")\nmask + advance per guided token: %.1f us (decode step %.1f ms)\n",
              maskS / (rounds * tokens) * 1e6, 1e3 / median(plain));
  return 0;
}
