// The per-token logits copy of Session::generate (text/Generate.cpp): when the
// model is wider than its tokenizer, or a logits processor is set, every step
// copies the row, sets the textless ids to -inf and (with a processor) scans
// it for an allowed id. Times that beside what every step does anyway, on the
// same row: sampling it, and with MODEL.fmb a decode step of that model.
// Prints numbers; asserts nothing.
//
//   fm-logits-copy-bench [VOCAB [TEXT_IDS [MODEL.fmb [STEPS]]]]
//   (default 151936 and 151669: Qwen3's model and tokenizer widths)
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `f` over `reps` calls.
template <typename F> double timeIt(int reps, F &&f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    t.push_back(since(t0));
  }
  return median(t);
}

} // namespace

int main(int argc, char **argv) {
  const int64_t vocab = argc > 1 ? std::atoll(argv[1]) : 151936;
  const int64_t textIds = argc > 2 ? std::atoll(argv[2]) : 151669;
  if (vocab <= 0 || textIds <= 0 || textIds > vocab) {
    std::fprintf(stderr, "usage: %s [VOCAB [TEXT_IDS [MODEL.fmb [STEPS]]]]\n", argv[0]);
    return 2;
  }
  std::vector<float> row(static_cast<size_t>(vocab));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float &x : row)
    x = normal(rng);
  std::vector<int32_t> textless;
  for (int64_t id = textIds; id < vocab; ++id)
    textless.push_back(static_cast<int32_t>(id));

  // Exactly Generate.cpp's work per step.
  std::vector<float> masked;
  volatile int32_t sink = 0;
  const int reps = 301;
  double copy = timeIt(reps, [&] {
    masked.assign(row.data(), row.data() + vocab);
    for (int32_t id : textless)
      masked[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
    sink = sink + static_cast<int32_t>(masked[0] > 0);
  });
  // The scan stops at the first allowed id: its worst case, a processor that
  // allows only the last id, is what is timed.
  std::vector<float> forbidden(static_cast<size_t>(vocab),
                               -std::numeric_limits<float>::infinity());
  forbidden.back() = 0.0f;
  double scan = timeIt(reps, [&] {
    sink = sink + std::none_of(forbidden.begin(), forbidden.end(), [](float x) {
      return x > -std::numeric_limits<float>::infinity();
    });
  });
  fm::Sampler greedy(0.0f, 0, 1.0f, 1), sampling(1.0f, 0, 1.0f, 1);
  double argmax = timeIt(reps, [&] { sink = sink + greedy.sample(row.data(), vocab); });
  double draw = timeIt(reps, [&] { sink = sink + sampling.sample(row.data(), vocab); });

  std::printf("vocab %lld (%lld textless ids), median of %d:\n", (long long)vocab,
              (long long)textless.size(), reps);
  std::printf("  copy + textless -inf: %.1f us; + a processor's allowed-id scan: <= %.1f us\n",
              copy * 1e6, scan * 1e6);
  std::printf("  beside sampling the same row: greedy %.1f us (copy = %.2fx), temperature 1 "
              "%.1f us (copy = %.2fx)\n",
              argmax * 1e6, copy / argmax, draw * 1e6, copy / draw);

  if (argc > 3) {
    const int steps = argc > 4 ? std::atoi(argv[4]) : 32;
    auto model = fm::Model::load(argv[3]);
    if (!model) {
      std::fprintf(stderr, "%s\n", model.message().c_str());
      return 1;
    }
    if ((*model)->vocabSize() != vocab) {
      std::fprintf(stderr, "%s: vocab %lld, not %lld\n", argv[3],
                   (long long)(*model)->vocabSize(), (long long)vocab);
      return 1;
    }
    fm::Session session(*model, fm::SessionOptions{});
    if (!session.status()) {
      std::fprintf(stderr, "%s\n", session.status().message().c_str());
      return 1;
    }
    const std::vector<int32_t> prompt = {1, 2, 3, 4};
    auto first = session.prefill(prompt);
    if (!first) {
      std::fprintf(stderr, "%s\n", first.message().c_str());
      return 1;
    }
    std::vector<double> t;
    for (int i = 0; i < steps; ++i) {
      auto t0 = Clock::now();
      auto next = session.decode(5 + i % 100);
      if (!next) {
        std::fprintf(stderr, "%s\n", next.message().c_str());
        return 1;
      }
      t.push_back(since(t0));
    }
    double step = median(t);
    std::printf("  decode step of %s (median of %d, %d threads): %.2f ms; copy = %.3f%% of it, "
                "copy + scan = %.3f%%\n",
                argv[3], steps, session.threads(), step * 1e3, 100 * copy / step,
                100 * (copy + scan) / step);
  }
  return 0;
}
