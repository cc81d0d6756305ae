// llama.cpp as a yardstick: prefill and decode tokens/s of a GGUF model
// through libllama's C API, GGUF quantization through it, and perplexity /
// KL divergence of a GGUF on given token ids, as llama-perplexity computes
// them.
//
// Built by bench/llamacpp/fetch-llamacpp.sh against the headers of the
// llama.cpp release that node-llama-cpp pins (its npm package carries the
// source as a git bundle) and linked with that package's prebuilt
// libllama.so and ggml CPU backends (one per x86 level; ggml picks the best
// for this CPU at run time, AMX included). A benchmark peer only: nothing in
// fmc links it. Used by bench/llamacpp/side_by_side.py (speed) and
// bench/quality/llamacpp_quality.py (quality).
//
//   llama_yardstick bench GGUF --threads T --prompt N --gen N --reps R
//   llama_yardstick quantize IN.gguf OUT.gguf TYPE --threads T
//   llama_yardstick tokenize GGUF < TEXT
//   llama_yardstick score GGUF --ids FILE --ctx N [--chunks K]
//                   [--save-logits FILE | --base-logits FILE] --threads T
//
// bench prints one JSON line: the medians over R repetitions (after one
// warm-up: the prompt and 4 tokens) of the prefill of N prompt tokens in one
// llama_decode call and of N tokens decoded one at a time, in tokens/s, as
// llama-bench's pp/tg tests.
//
// quantize: llama_model_quantize to TYPE (q8_0, q4_0, q2_k, iq2_xxs, iq2_xs,
// iq2_s, iq2_m), with llama.cpp's own per-tensor choices and no importance
// matrix (llama.cpp refuses the types that need one, and says so).
//
// tokenize prints the ids libllama gives the text on stdin (add_special and
// parse_special, as a Hugging Face encode does), space-separated.
//
// score is llama-perplexity's method on the ids in FILE (integers separated
// by spaces, commas or newlines): non-overlapping windows of N ids (an
// incomplete last one dropped; the first K, or all when K is 0), each from an
// empty KV cache in one llama_decode, BOS in the first place where the
// vocabulary adds one; in each window, for j in [N/2, N - 1), the negative
// log-likelihood of id j + 1 under the log-softmax (in double) of row j.
// It prints one JSON line: ppl = exp(mean NLL) and ppl_err = ppl times the
// standard error of the mean NLL, as llama-perplexity's "PPL = x +/- e".
// --save-logits writes the scored rows' logits (float32) with the ids and
// the window shape; --base-logits reads such a file (the F16 model's) and
// adds what llama-perplexity --kl-divergence reports: the base's ppl, Δppl
// with its error (both errors and the covariance of the two mean NLLs), the
// mean KL(base || this) with its error, its 90/99/99.9th percentiles (linear
// interpolation), and top-1 agreement (the rows whose largest logit is the
// same id) with its binomial error. Unlike llama-perplexity, which stores
// the base's log-probabilities as 16-bit steps over the top 16 nats and
// drops the rest from the KL sum, the base logits are kept as float32 and
// the KL is summed in double over the whole vocabulary, as fmc's
// fm::perplexity does: both sides of the quality table measure the same way.
#include "llama.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
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

const char *stringFlag(int argc, char **argv, const char *name) {
  for (int i = 0; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name))
      return argv[i + 1];
  return nullptr;
}

int usage() {
  std::fprintf(stderr,
               "usage: llama_yardstick bench GGUF [--threads T] [--prompt N] "
               "[--gen N] [--reps R]\n"
               "       llama_yardstick quantize IN OUT "
               "q8_0|q4_0|q2_k|iq2_xxs|iq2_xs|iq2_s|iq2_m [--threads T]\n"
               "       llama_yardstick tokenize GGUF < TEXT\n"
               "       llama_yardstick score GGUF --ids FILE --ctx N "
               "[--chunks K] [--save-logits FILE | --base-logits FILE] "
               "[--threads T]\n");
  return 2;
}

llama_model *loadModel(const char *path, bool vocabOnly = false) {
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.vocab_only = vocabOnly;
  mp.progress_callback = [](float, void *) { return true; }; // no dots
  llama_model *model = llama_model_load_from_file(path, mp);
  if (!model)
    std::fprintf(stderr, "llama_yardstick: cannot load %s\n", path);
  return model;
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

  const double t0 = now();
  llama_model *model = loadModel(path);
  if (!model)
    return 1;
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
              desc, (unsigned long long)llama_model_size(model), threads, loadS,
              prompt, median(pp), gen, median(tg), llama_print_system_info());
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

int quantize(const char *in, const char *out, const char *type, int argc,
             char **argv) {
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = flag(argc, argv, "--threads", 2);
  // side_by_side.py's input is Q8_0 (a disk budget); the quality table's
  // is F16.
  qp.allow_requantize = true;
  static const struct {
    const char *name;
    llama_ftype ftype;
  } types[] = {
      {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
      {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
      {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},
      {"iq2_xxs", LLAMA_FTYPE_MOSTLY_IQ2_XXS},
      {"iq2_xs", LLAMA_FTYPE_MOSTLY_IQ2_XS},
      {"iq2_s", LLAMA_FTYPE_MOSTLY_IQ2_S},
      {"iq2_m", LLAMA_FTYPE_MOSTLY_IQ2_M},
  };
  const auto *t =
      std::find_if(std::begin(types), std::end(types),
                   [&](const auto &e) { return !std::strcmp(e.name, type); });
  if (t == std::end(types))
    return usage();
  qp.ftype = t->ftype;
  if (llama_model_quantize(in, out, &qp)) {
    std::fprintf(stderr, "llama_yardstick: quantizing %s failed\n", in);
    return 1;
  }
  return 0;
}

int tokenize(const char *path) {
  llama_model *model = loadModel(path, true);
  if (!model)
    return 1;
  const llama_vocab *vocab = llama_model_get_vocab(model);
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  std::vector<llama_token> ids(text.size() + 16);
  const int32_t n = llama_tokenize(vocab, text.data(), int32_t(text.size()),
                                   ids.data(), int32_t(ids.size()), true, true);
  if (n < 0) {
    std::fprintf(stderr, "llama_yardstick: cannot tokenize stdin with %s\n",
                 path);
    return 1;
  }
  for (int32_t i = 0; i < n; ++i)
    std::printf(i ? " %d" : "%d", ids[i]);
  std::printf("\n");
  llama_model_free(model);
  return 0;
}

// Token ids from a text file: integers separated by spaces, commas or
// newlines (fm-tokenize's output).
bool readIds(const char *path, std::vector<llama_token> &ids) {
  FILE *f = std::fopen(path, "r");
  if (!f) {
    std::fprintf(stderr, "llama_yardstick: cannot read the ids in %s\n", path);
    return false;
  }
  long v;
  int c;
  while (true) {
    while ((c = std::fgetc(f)) != EOF && (c == ',' || std::isspace(c)))
      ;
    if (c == EOF)
      break;
    std::ungetc(c, f);
    if (std::fscanf(f, "%ld", &v) != 1) {
      std::fprintf(stderr,
                   "llama_yardstick: %s: id %zu is not an integer (ids are "
                   "integers separated by spaces, commas or newlines)\n",
                   path, ids.size() + 1);
      std::fclose(f);
      return false;
    }
    ids.push_back(llama_token(v));
  }
  std::fclose(f);
  return true;
}

// The saved logits: this header, the window's ids (chunks * ctx int32),
// then the scored rows' logits (chunks * (ctx - 1 - ctx / 2) * vocab
// float32), window after window.
struct LogitsHeader {
  char magic[8]; // "FMLOGITS"
  int32_t ctx, vocab, chunks;
};
static_assert(sizeof(LogitsHeader) == 20, "the header's bytes are the file's");

// log(sum exp(row)) in double, and the first index of the largest logit.
struct RowSoftmax {
  double logSumExp;
  int argmax;
};

RowSoftmax rowSoftmax(const float *logits, int vocab) {
  RowSoftmax r{0.0, 0};
  for (int i = 1; i < vocab; ++i)
    if (logits[i] > logits[r.argmax])
      r.argmax = i;
  const double max = logits[r.argmax];
  double sum = 0.0;
  for (int i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - max);
  r.logSumExp = max + std::log(sum);
  return r;
}

// A mean and its standard error from a sum, a sum of squares and a count.
struct MeanError {
  double mean = 0.0, error = 0.0;
};

MeanError meanAndError(double sum, double sum2, int64_t count) {
  MeanError m;
  if (count < 1)
    return m;
  m.mean = sum / double(count);
  const double variance = sum2 / double(count) - m.mean * m.mean;
  if (count > 1 && variance > 0.0)
    m.error = std::sqrt(variance / double(count - 1));
  return m;
}

double percentile(const std::vector<double> &sorted, double fraction) {
  const double at = fraction * double(sorted.size() - 1);
  const size_t i = size_t(at);
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return (1.0 - (at - double(i))) * sorted[i] + (at - double(i)) * sorted[j];
}

int score(const char *path, int argc, char **argv) {
  const char *idsPath = stringFlag(argc, argv, "--ids");
  const char *savePath = stringFlag(argc, argv, "--save-logits");
  const char *basePath = stringFlag(argc, argv, "--base-logits");
  const int n = flag(argc, argv, "--ctx", 512);
  const int threads = flag(argc, argv, "--threads", 2);
  if (!idsPath || n < 3 || (savePath && basePath))
    return usage();
  std::vector<llama_token> ids;
  if (!readIds(idsPath, ids))
    return 1;
  int chunks = flag(argc, argv, "--chunks", 0);
  const int most = int(ids.size() / size_t(n));
  if (most == 0) {
    std::fprintf(stderr,
                 "llama_yardstick: %s holds %zu ids, fewer than one window "
                 "of --ctx %d\n",
                 idsPath, ids.size(), n);
    return 1;
  }
  chunks = chunks <= 0 ? most : std::min(chunks, most);

  llama_model *model = loadModel(path);
  if (!model)
    return 1;
  const llama_vocab *vocabulary = llama_model_get_vocab(model);
  const int vocab = llama_vocab_n_tokens(vocabulary);
  for (size_t i = 0; i < size_t(chunks) * n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab) {
      std::fprintf(stderr,
                   "llama_yardstick: %s: id %d (number %zu) is outside %s's "
                   "vocabulary of %d\n",
                   idsPath, ids[i], i + 1, path, vocab);
      return 1;
    }
  if (llama_model_n_ctx_train(model) < n)
    std::fprintf(stderr,
                 "llama_yardstick: warning: --ctx %d is beyond %s's trained "
                 "context %d\n",
                 n, path, llama_model_n_ctx_train(model));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(n);
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.no_perf = true;
  llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr,
                 "llama_yardstick: cannot make a context of %d for %s\n", n,
                 path);
    return 1;
  }

  const int first = n / 2;
  const LogitsHeader header{
      {'F', 'M', 'L', 'O', 'G', 'I', 'T', 'S'}, n, vocab, chunks};
  FILE *save = nullptr, *base = nullptr;
  if (savePath) {
    save = std::fopen(savePath, "wb");
    if (!save || std::fwrite(&header, sizeof header, 1, save) != 1 ||
        std::fwrite(ids.data(), sizeof(llama_token), size_t(chunks) * n,
                    save) != size_t(chunks) * n) {
      std::fprintf(stderr, "llama_yardstick: cannot write %s\n", savePath);
      return 1;
    }
  }
  if (basePath) {
    base = std::fopen(basePath, "rb");
    LogitsHeader h{};
    if (!base || std::fread(&h, sizeof h, 1, base) != 1 ||
        std::memcmp(h.magic, header.magic, 8)) {
      std::fprintf(stderr, "llama_yardstick: %s is not a --save-logits file\n",
                   basePath);
      return 1;
    }
    if (h.ctx != n || h.vocab != vocab || h.chunks != chunks) {
      std::fprintf(
          stderr,
          "llama_yardstick: %s holds %d windows of %d over a vocabulary "
          "of %d; this run scores %d windows of %d over %d\n",
          basePath, h.chunks, h.ctx, h.vocab, chunks, n, vocab);
      return 1;
    }
    std::vector<llama_token> baseIds(size_t(chunks) * n);
    if (std::fread(baseIds.data(), sizeof(llama_token), baseIds.size(), base) !=
            baseIds.size() ||
        !std::equal(baseIds.begin(), baseIds.end(), ids.begin())) {
      std::fprintf(stderr,
                   "llama_yardstick: %s was scored on other ids than %s\n",
                   basePath, idsPath);
      return 1;
    }
  }

  const bool addBos = llama_vocab_get_add_bos(vocabulary);
  llama_batch batch = llama_batch_init(n, 0, 1);
  std::vector<float> baseRow(vocab);
  double nll = 0, nll2 = 0, baseNll = 0, baseNll2 = 0, nllBaseNll = 0, kl = 0,
         kl2 = 0;
  int64_t count = 0, sameTop = 0;
  std::vector<double> kls;
  const double t0 = now();
  for (int c = 0; c < chunks; ++c) {
    const llama_token *window = ids.data() + size_t(c) * n;
    llama_memory_clear(llama_get_memory(ctx), true);
    batch.n_tokens = n;
    for (int k = 0; k < n; ++k) {
      batch.token[k] =
          k == 0 && addBos ? llama_vocab_bos(vocabulary) : window[k];
      batch.pos[k] = k;
      batch.n_seq_id[k] = 1;
      batch.seq_id[k][0] = 0;
      batch.logits[k] = k >= first;
    }
    if (llama_decode(ctx, batch)) {
      std::fprintf(stderr,
                   "llama_yardstick: window %d of %s failed to decode\n", c + 1,
                   path);
      return 1;
    }
    for (int j = first; j < n - 1; ++j) {
      const float *row = llama_get_logits_ith(ctx, j);
      const RowSoftmax p = rowSoftmax(row, vocab);
      const double v = p.logSumExp - double(row[window[j + 1]]);
      nll += v;
      nll2 += v * v;
      ++count;
      if (save && std::fwrite(row, sizeof(float), size_t(vocab), save) !=
                      size_t(vocab)) {
        std::fprintf(stderr, "llama_yardstick: cannot write %s\n", savePath);
        return 1;
      }
      if (!base)
        continue;
      if (std::fread(baseRow.data(), sizeof(float), size_t(vocab), base) !=
          size_t(vocab)) {
        std::fprintf(stderr, "llama_yardstick: %s ends before window %d\n",
                     basePath, c + 1);
        return 1;
      }
      const RowSoftmax q = rowSoftmax(baseRow.data(), vocab);
      const double b = q.logSumExp - double(baseRow[window[j + 1]]);
      baseNll += b;
      baseNll2 += b * b;
      nllBaseNll += v * b;
      double d = 0.0;
      for (int i = 0; i < vocab; ++i) {
        const double logBase = double(baseRow[i]) - q.logSumExp;
        const double pBase = std::exp(logBase);
        if (pBase > 0.0)
          d += pBase * (logBase - (double(row[i]) - p.logSumExp));
      }
      kl += d;
      kl2 += d * d;
      kls.push_back(d);
      sameTop += p.argmax == q.argmax;
    }
    if ((c + 1) % std::max(1, chunks / 10) == 0 || c + 1 == chunks)
      std::fprintf(stderr, "llama_yardstick: %d/%d windows, ppl %.4f, %.1f s\n",
                   c + 1, chunks, std::exp(nll / double(count)), now() - t0);
  }
  if (save && std::fclose(save)) {
    std::fprintf(stderr, "llama_yardstick: cannot write %s\n", savePath);
    return 1;
  }

  const MeanError logPpl = meanAndError(nll, nll2, count);
  const double ppl = std::exp(logPpl.mean), pplErr = ppl * logPpl.error;
  char desc[128];
  llama_model_desc(model, desc, sizeof desc);
  std::printf("{\"model\": \"%s\", \"ctx\": %d, \"chunks\": %d, "
              "\"tokens_scored\": %lld, "
              "\"ppl\": %.6f, \"ppl_err\": %.6f",
              desc, n, chunks, (long long)count, ppl, pplErr);
  if (base) {
    std::fclose(base);
    const MeanError logBase = meanAndError(baseNll, baseNll2, count);
    const double basePpl = std::exp(logBase.mean),
                 basePplErr = basePpl * logBase.error;
    // The covariance of the two mean NLLs, as llama-perplexity's
    // "Mean PPL(Q)-PPL(base)" takes it.
    const double N = double(count);
    const double cov =
        count > 1 ? (nllBaseNll / N - (nll / N) * (baseNll / N)) / (N - 1.0)
                  : 0.0;
    const double var =
        pplErr * pplErr + basePplErr * basePplErr - 2.0 * ppl * basePpl * cov;
    const MeanError klMean = meanAndError(kl, kl2, count);
    std::sort(kls.begin(), kls.end());
    const double top = double(sameTop) / N;
    std::printf(
        ", \"base_ppl\": %.6f, \"base_ppl_err\": %.6f, \"delta_ppl\": %.6f, "
        "\"delta_ppl_err\": %.6f, \"kl_mean\": %.8f, \"kl_mean_err\": %.8f, "
        "\"kl_p90\": %.8f, \"kl_p99\": %.8f, \"kl_p999\": %.8f, \"kl_max\": "
        "%.8f, "
        "\"top1_agree\": %.6f, \"top1_agree_err\": %.6f",
        basePpl, basePplErr, ppl - basePpl, var > 0 ? std::sqrt(var) : 0.0,
        klMean.mean, klMean.error, percentile(kls, 0.90), percentile(kls, 0.99),
        percentile(kls, 0.999), kls.back(), top,
        count > 1 ? std::sqrt(top * (1.0 - top) / (N - 1.0)) : 0.0);
  }
  std::printf("}\n");
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
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
  else if (!std::strcmp(argv[1], "tokenize"))
    rc = tokenize(argv[2]);
  else if (!std::strcmp(argv[1], "score"))
    rc = score(argv[2], argc, argv);
  else
    rc = usage();
  llama_backend_free();
  return rc;
}
