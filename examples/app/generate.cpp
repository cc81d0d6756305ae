// The smallest complete use of the fm runtime API: load a compiled model,
// prefill a prompt and generate greedily.
//
//   fm-example-generate model.fmb 1 17 42
#include "fm/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.fmb TOKEN...\n", argv[0]);
    return 2;
  }
  std::vector<int32_t> prompt;
  for (int i = 2; i < argc; ++i)
    prompt.push_back(static_cast<int32_t>(std::atoi(argv[i])));

  // Load and verify the artifact; errors are readable sentences.
  auto model = fm::Model::load(argv[1]);
  if (!model) {
    std::fprintf(stderr, "error: %s\n", model.message().c_str());
    return 1;
  }
  std::printf("%s: %lld parameters, vocab %lld, context %lld\n",
              (*model)->family().c_str(),
              static_cast<long long>((*model)->parameters()),
              static_cast<long long>((*model)->vocabSize()),
              static_cast<long long>((*model)->contextLength()));

  // A session holds the KV caches; threads = 0 uses every core.
  fm::Session session(*model, fm::SessionOptions{});
  if (!session.status()) {
    std::fprintf(stderr, "error: %s\n", session.status().message().c_str());
    return 1;
  }

  auto prefill = session.prefill(prompt);
  if (!prefill) {
    std::fprintf(stderr, "error: %s\n", prefill.message().c_str());
    return 1;
  }
  const int64_t vocab = (*model)->vocabSize();
  const float *logits = prefill->last();
  for (int step = 0; step < 16; ++step) {
    int32_t best = 0; // Greedy: the most likely next token.
    for (int64_t t = 1; t < vocab; ++t)
      if (logits[t] > logits[best])
        best = static_cast<int32_t>(t);
    std::printf("%d ", best);
    auto next = session.decode(best);
    if (!next) {
      std::fprintf(stderr, "\nerror: %s\n", next.message().c_str());
      return 1;
    }
    logits = *next;
  }
  std::printf("\n");
  return 0;
}
