// llama.cpp as a yardstick: prefill and decode tokens/s of a GGUF model
// through libllama's C API, and GGUF quantization through it.
//
// Built by bench/llamacpp/side_by_side.py against the headers of the
// llama.cpp release that node-llama-cpp pins (its npm package carries the
// source as a git bundle) and linked with that package's prebuilt
// libllama.so and ggml CPU backends (one per x86 level; ggml picks the best
// for this CPU at run time, AMX included). A benchmark peer only: nothing in
// fmc links it.
//
//   llama_yardstick bench GGUF --threads T --prompt N --gen N --reps R
//   llama_yardstick quantize IN.gguf OUT.gguf q4_0|q2_k --threads T
//
// bench prints one JSON line: the medians over R repetitions (after one
// warm-up: the prompt and 4 tokens) of the prefill of N prompt tokens in one llama_decode call and of
// N tokens decoded one at a time, in tokens/s, as llama-bench's pp/tg tests.
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void quietLog(ggml_log_level level, const char *text, void *) {
  if (level >= GGML_LOG_LEVEL_ERROR)
    std::fputs(text, stderr);
}

int flag(int argc, char **argv, const char *name, int fallback) {
  for (int i = 0; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name))
      return std::atoi(argv[i + 1]);
  return fallback;
}

int usage() {
  std::fprintf(stderr,
               "usage: llama_yardstick bench GGUF [--threads T] [--prompt N] "
               "[--gen N] [--reps R]\n"
               "       llama_yardstick quantize IN OUT q4_0|q2_k "
               "[--threads T]\n");
  return 2;
}

// One prompt of `n` ids, spread over the vocabulary (no tokenizer: the
// model's vocabulary is "none").
std::vector<llama_token> promptIds(int n, int vocab) {
  std::vector<llama_token> ids(n);
  for (int i = 0; i < n; ++i)
    ids[i] = llama_token((i * 7919 + 13) % vocab);
  return ids;
}

int bench(const char *path, int argc, char **argv) {
  const int threads = flag(argc, argv, "--threads", 2);
  const int prompt = flag(argc, argv, "--prompt", 64);
  const int gen = flag(argc, argv, "--gen", 32);
  const int reps = flag(argc, argv, "--reps", 3);

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  const double t0 = now();
  llama_model *model = llama_model_load_from_file(path, mp);
  if (!model) {
    std::fprintf(stderr, "llama_yardstick: cannot load %s\n", path);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(prompt + gen + 16);
  cp.n_batch = cp.n_ubatch = uint32_t(prompt);
  cp.n_threads = cp.n_threads_batch = threads;
  cp.no_perf = true;
  llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llama_yardstick: cannot make a context for %s\n",
                 path);
    return 1;
  }
  const double loadS = now() - t0;
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<llama_token> ids = promptIds(prompt, vocab);

  std::vector<double> pp, tg;
  for (int r = 0; r <= reps; ++r) { // r == 0: warm-up
    llama_memory_clear(llama_get_memory(ctx), true);
    double a = now();
    if (llama_decode(ctx, llama_batch_get_one(ids.data(), prompt))) {
      std::fprintf(stderr, "llama_yardstick: prefill failed\n");
      return 1;
    }
    llama_synchronize(ctx);
    const double ppS = now() - a;
    llama_token next = ids.back();
    a = now();
    // The warm-up decodes a few tokens only: enough to touch every weight.
    const int steps = r == 0 ? std::min(gen, 4) : gen;
    for (int i = 0; i < steps; ++i) {
      next = llama_token((next * 31 + 7) % vocab);
      if (llama_decode(ctx, llama_batch_get_one(&next, 1))) {
        std::fprintf(stderr, "llama_yardstick: decode failed\n");
        return 1;
      }
      llama_synchronize(ctx);
    }
    const double tgS = now() - a;
    if (r > 0) {
      pp.push_back(prompt / ppS);
      tg.push_back(gen / tgS);
    }
  }
  char desc[128];
  llama_model_desc(model, desc, sizeof desc);
  std::printf("{\"model\": \"%s\", \"bytes\": %llu, \"threads\": %d, "
              "\"load_s\": %.3f, \"prefill_tokens\": %d, "
              "\"prefill_tok_s\": %.3f, \"decode_tokens\": %d, "
              "\"decode_tok_s\": %.3f, \"system\": \"%s\"}\n",
              desc, (unsigned long long)llama_model_size(model), threads,
              loadS, prompt, median(pp), gen, median(tg),
              llama_print_system_info());
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

int quantize(const char *in, const char *out, const char *type, int argc,
             char **argv) {
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = flag(argc, argv, "--threads", 2);
  qp.allow_requantize = true; // the input is Q8_0 (a disk budget)
  if (!std::strcmp(type, "q4_0"))
    qp.ftype = LLAMA_FTYPE_MOSTLY_Q4_0;
  else if (!std::strcmp(type, "q2_k"))
    qp.ftype = LLAMA_FTYPE_MOSTLY_Q2_K;
  else
    return usage();
  if (llama_model_quantize(in, out, &qp)) {
    std::fprintf(stderr, "llama_yardstick: quantizing %s failed\n", in);
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  llama_log_set(quietLog, nullptr);
  const char *self = argv[0];
  std::string dir(self);
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  // The CPU backends (libggml-cpu-<level>.so) lie beside libllama.so.
  const char *backends = std::getenv("LLAMA_YARDSTICK_BACKENDS");
  ggml_backend_load_all_from_path(backends ? backends : dir.c_str());
  llama_backend_init();
  int rc;
  if (!std::strcmp(argv[1], "bench"))
    rc = bench(argv[2], argc, argv);
  else if (!std::strcmp(argv[1], "quantize") && argc >= 5)
    rc = quantize(argv[2], argv[3], argv[4], argc, argv);
  else
    rc = usage();
  llama_backend_free();
  return rc;
}
