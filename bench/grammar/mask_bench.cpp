// Token-mask time per token for JSON-schema grammars at Qwen3's 151,669-token vocabulary,
// printed beside the time of unconstrained sampling (softmax + draw over the same number of
// logits, fm::Sampler) measured in the same run. Prints numbers, asserts none.
//
// Each schema is walked the way a model would be constrained: a random allowed token per step
// (deterministic seeds) until eos, repeated until --tokens tokens; every fillMask() is timed.
// "warm" runs after TokenMasker::precompute() (what a server does once per schema); "cold"
// fills the per-position cache lazily during the walk, so its misses land in the timings.
#include "VocabLoader.h"

#include "fm/grammar.h"
#include "fm/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Stats {
  double mean = 0, p50 = 0, p99 = 0, max = 0;
};

Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  for (double x : v)
    s.mean += x;
  s.mean /= double(v.size());
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.99))];
  s.max = v.back();
  return s;
}

bool closes(const std::string &b) { return b.find_first_of("\"]}") != std::string::npos; }

// Walks until `tokens` tokens; returns each fillMask time in microseconds.
std::vector<double> walk(fm::TokenMasker &masker, const fm::Vocabulary &vocab, int64_t tokens,
                         int64_t *outputs) {
  std::vector<double> times;
  std::vector<uint32_t> mask(masker.maskWords());
  std::vector<int32_t> allowed;
  for (uint64_t seed = 1; int64_t(times.size()) < tokens; ++seed) {
    std::mt19937_64 rng(seed);
    fm::GrammarMatcher m(masker);
    for (int step = 0; int64_t(times.size()) < tokens; ++step) {
      auto t0 = Clock::now();
      fm::MaskInfo info = m.fillMask(mask.data());
      times.push_back(micros(Clock::now() - t0));
      allowed.clear();
      for (size_t w = 0; w < mask.size(); ++w)
        for (uint32_t bits = mask[w]; bits; bits &= bits - 1)
          allowed.push_back(int32_t(w * 32 + size_t(__builtin_ctz(bits))));
      if (info.allowed == 0)
        break;
      std::vector<int32_t> pool;
      if (step > 150)
        for (int32_t t : allowed)
          if (std::find(vocab.eos.begin(), vocab.eos.end(), t) != vocab.eos.end() ||
              closes(vocab.tokens[size_t(t)]))
            pool.push_back(t);
      const auto &from = pool.empty() ? allowed : pool;
      m.acceptToken(from[rng() % from.size()]);
      if (m.isFinished())
        break;
    }
    ++*outputs;
  }
  return times;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fm-grammar-bench TOKENIZER.json TOKENS SCHEMA.json...\n");
    return 2;
  }
  auto vocab = fm::test::loadTokenizerJson(argv[1], {"<|endoftext|>", "<|im_end|>"});
  if (!vocab) {
    std::fprintf(stderr, "%s\n", vocab.message().c_str());
    return 2;
  }
  int64_t tokens = std::atoll(argv[2]);
  int64_t n = int64_t(vocab->tokens.size());

  // The peer: unconstrained sampling over the same vocabulary, same process, same run.
  std::vector<float> logits(static_cast<size_t>(n));
  std::mt19937 lr(5);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (float &x : logits)
    x = nd(lr);
  fm::Sampler sampler(1.0f, 0, 1.0f, 7);
  std::vector<double> sampleTimes;
  volatile int32_t sink = 0;
  for (int k = 0; k < 2000; ++k) {
    auto t0 = Clock::now();
    sink = sampler.sample(logits.data(), n);
    sampleTimes.push_back(micros(Clock::now() - t0));
  }
  (void)sink;
  Stats sampling = summarize(sampleTimes);
  // Applying a mask to the logits (what the logits-processor hook will add per token).
  std::vector<uint32_t> someMask((size_t(n) + 31) / 32, 0x55555555u);
  std::vector<double> applyTimes;
  for (int k = 0; k < 2000; ++k) {
    auto t0 = Clock::now();
    for (int64_t t = 0; t < n; ++t)
      if (!((someMask[size_t(t) >> 5] >> (t & 31)) & 1))
        logits[size_t(t)] = -INFINITY;
    applyTimes.push_back(micros(Clock::now() - t0));
    for (float &x : logits)
      x = x == -INFINITY ? 0.f : x;
  }
  Stats apply = summarize(applyTimes);

  std::printf("vocabulary %lld tokens; unconstrained sampling (softmax + draw): mean %.1f us, "
              "p99 %.1f us; applying a mask to the logits: mean %.1f us\n\n",
              (long long)n, sampling.mean, sampling.p99, apply.mean);
  std::printf("%-22s %5s %9s %9s %7s | %8s %7s %7s %8s %8s | %8s %8s %8s\n", "schema", "outs",
              "compile", "precomp", "cacheMB", "warm:mean", "p50", "p99", "max", "vs samp",
              "cold:mean", "p99", "max");
  std::vector<double> allWarm;
  for (int a = 3; a < argc; ++a) {
    std::string path = argv[a];
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto t0 = Clock::now();
    auto g = fm::Grammar::fromJsonSchema(text, fm::GrammarMode::Generate);
    double compileMs = micros(Clock::now() - t0) / 1000;
    if (!g) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), g.message().c_str());
      return 2;
    }
    auto cold = fm::TokenMasker::create(*g, *vocab);
    int64_t outsCold = 0;
    Stats c = summarize(walk(*cold, *vocab, tokens, &outsCold));

    auto warm = fm::TokenMasker::create(*g, *vocab);
    t0 = Clock::now();
    warm->precompute();
    double precomputeMs = micros(Clock::now() - t0) / 1000;
    int64_t outs = 0;
    std::vector<double> times = walk(*warm, *vocab, tokens, &outs);
    allWarm.insert(allWarm.end(), times.begin(), times.end());
    Stats w = summarize(times);
    std::string name = path.substr(path.rfind('/') + 1);
    std::printf("%-22s %5lld %7.1fms %7.0fms %7.1f | %7.1fus %6.1fus %6.1fus %7.1fus %7.2fx | "
                "%7.1fus %7.1fus %7.0fus\n",
                name.c_str(), (long long)outs, compileMs, precomputeMs,
                double(warm->cacheBytes()) / 1e6, w.mean, w.p50, w.p99, w.max,
                w.mean / sampling.mean, c.mean, c.p99, c.max);
  }
  Stats all = summarize(allWarm);
  std::printf("\nall schemas, warm: mean %.1f us, p99 %.1f us per token (goal: mean <= 50 us, "
              "p99 <= 500 us); unconstrained sampling mean %.1f us in this run (mask/sampling "
              "%.2fx)\n",
              all.mean, all.p99, sampling.mean, all.mean / sampling.mean);
  return 0;
}
