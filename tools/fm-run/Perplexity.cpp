// fm-run --perplexity (Perplexity.h): loads the model (and the --kl-base),
// tokenizes the file, runs fm::perplexity with a progress report on stderr,
// and prints the results on stdout (--stats: one JSON line more).
#include "Perplexity.h"

#include "common/OptionChecks.h"

#include "fm/perplexity.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace fmrun {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string str(int64_t n) { return std::to_string(n); }

/// All of `path`, or an error naming it.
std::string readText(const std::string &path, std::string *out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return "--perplexity " + path + ": cannot open it: " + std::strerror(errno);
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    out->append(buffer, n);
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (error)
    return "--perplexity " + path + ": cannot read it: " + std::strerror(error);
  if (out->empty())
    return "--perplexity " + path + ": the file is empty: there is no text to score";
  return {};
}

/// "12.5 s", "3 min 20 s".
std::string duration(double seconds) {
  char text[32];
  if (seconds < 60.0)
    std::snprintf(text, sizeof(text), "%.1f s", seconds);
  else
    std::snprintf(text, sizeof(text), "%d min %02d s", int(seconds) / 60,
                  int(seconds) % 60);
  return text;
}

/// The progress of the windows on stderr: on a terminal a bar redrawn in
/// place after every window; otherwise (a log, a test) a line after the
/// first window and at every tenth of the way, so that a long run shows it
/// is alive in at most 11 lines.
class Progress {
public:
  Progress() : terminal_(isatty(STDERR_FILENO)), t0_(Clock::now()) {}

  void operator()(int64_t done, int64_t total, double ppl) {
    const double elapsed = secondsSince(t0_);
    const double left = elapsed / double(done) * double(total - done);
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = int(kWidth * done / total);
      std::fprintf(stderr, "\rfm-run: perplexity [%s%s] %lld/%lld windows, ppl %.4f, %s left   ",
                   std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(),
                   static_cast<long long>(done), static_cast<long long>(total), ppl,
                   duration(left).c_str());
      if (done == total)
        std::fprintf(stderr, "\n");
      std::fflush(stderr);
      return;
    }
    const int64_t tenth = done * 10 / total;
    if (done != 1 && tenth == lastTenth_)
      return;
    lastTenth_ = tenth;
    std::fprintf(stderr, "fm-run: perplexity: %lld/%lld windows, ppl %.4f, %s, %s left\n",
                 static_cast<long long>(done), static_cast<long long>(total), ppl,
                 duration(elapsed).c_str(), duration(left).c_str());
  }

private:
  bool terminal_;
  Clock::time_point t0_;
  int64_t lastTenth_ = -1;
};

/// A JSON number; null for a value JSON cannot write (inf, NaN).
std::string number(double x) {
  if (!std::isfinite(x))
    return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", x);
  return text;
}

void printResults(const fm::PerplexityResult &r, const std::string &basePath) {
  std::printf("ppl %.4f ± %.4f over %lld tokens (%lld windows of %lld, the "
              "last %lld of each scored)\n",
              r.ppl, r.pplError, static_cast<long long>(r.tokensScored),
              static_cast<long long>(r.chunks), static_cast<long long>(r.ctx),
              static_cast<long long>(r.ctx - r.ctx / 2 - 1));
  if (!r.hasBase)
    return;
  std::printf("base ppl %.4f ± %.4f (%s)\n", r.basePpl, r.basePplError,
              basePath.c_str());
  std::printf("Δppl %.4f ± %.4f\n", r.deltaPpl, r.deltaPplError);
  std::printf("mean KL %.6f ± %.6f (90%%: %.6f, 99%%: %.6f, 99.9%%: %.6f)\n",
              r.klMean, r.klMeanError, r.klP90, r.klP99, r.klP999);
  std::printf("top-1 agreement %.2f%% ± %.2f%%\n", 100.0 * r.top1Agree,
              100.0 * r.top1AgreeError);
}

} // namespace

void addPerplexityOptions(CLI::App &app, PerplexityArgs &args) {
  app.add_option("--perplexity", args.file,
                 "score the text of FILE as llama.cpp's llama-perplexity "
                 "does: the artifact's tokenizer encodes it (BOS first where "
                 "the tokenizer adds one, also at each window's start), "
                 "windows of --ctx tokens that do not overlap (an incomplete "
                 "last one dropped) each run from an empty cache, the second "
                 "half of each scored; prints ppl with its error (--stats: "
                 "one JSON line more); progress on stderr")
      ->type_name("FILE");
  fm::cli::checkInteger(
      app.add_option("--ctx", args.ctx,
                     "--perplexity: tokens per window, >= 3 (default: " +
                         std::to_string(kDefaultPerplexityCtx) +
                         ", or the context of the artifacts when it is "
                         "smaller: fmc compile --context)"),
      3, INT64_MAX, "must be >= 3 (a window scores the tokens after its middle)");
  fm::cli::checkInteger(
      app.add_option("--chunks", args.chunks,
                     "--perplexity: score only the first K windows, >= 0 (0, "
                     "the default: all)"),
      0, INT64_MAX, "must be >= 0 (0: all)");
  app.add_option("--kl-base", args.klBase,
                 "--perplexity: compare with this artifact (the same "
                 "vocabulary and tokenizer, e.g. the f32 compile of the same "
                 "checkpoint) on the same windows, as llama-perplexity "
                 "--kl-divergence: base ppl, Δppl, mean KL(base || model) and "
                 "its 90/99/99.9% percentiles, top-1 agreement")
      ->type_name("BASE.fmb");
}

std::string perplexityConflicts(const CLI::App &app, const PerplexityArgs &args) {
  if (args.file.empty()) {
    for (const char *name : {"--ctx", "--chunks", "--kl-base"})
      if (app.count(name))
        return std::string(name) + " is for --perplexity FILE";
    return {};
  }
  // The options of the other modes: generating, scoring ids, images.
  for (const char *name :
       {"--tokens", "--prompt", "--prompt-file", "--chat", "--chat-file",
        "--system", "--stop", "--no-special-tokens", "--score", "--logits-out",
        "--max-new-tokens", "--temperature", "--top-k", "--top-p", "--seed",
        "--logit-bias", "--tokenizer", "--json-schema", "--grammar", "--regex",
        "--tools", "--tool-choice", "--eos", "--image", "--image-tensor",
        "--image-tokens-out"})
    if (app.count(name))
      return std::string("--perplexity FILE scores a text file: it takes no ") +
             name + " (another mode of fm-run)";
  return {};
}

int runPerplexity(const PerplexityArgs &args, const TextArgs &shared,
                  fm::Communicator *comm) {
  if (comm && comm->size() > 1)
    return fail("--perplexity runs in one process, not under mpirun");
  std::string text;
  if (std::string e = readText(args.file, &text); !e.empty())
    return fail(e);

  auto t0 = Clock::now();
  std::shared_ptr<fm::Model> model, base;
  std::unique_ptr<fm::Session> session, baseSession;
  if (std::string e = loadModel(shared, shared.model, true, &model); !e.empty())
    return fail(e);
  auto tokenizer = model->tokenizer();
  if (!tokenizer)
    return fail(tokenizer.message() + " (--perplexity encodes " + args.file +
                " with it)");
  if (std::string e = makeSession(shared, model, shared.adapters, nullptr, &session);
      !e.empty())
    return fail(e);
  if (!args.klBase.empty()) {
    if (std::string e = loadModel(shared, args.klBase, true, &base); !e.empty())
      return fail("--kl-base: " + e);
    if (fm::Status s = fm::checkPerplexityBase(*model, *base); !s)
      return fail("--kl-base: " + s.message());
    if (std::string e = makeSession(shared, base, {}, nullptr, &baseSession);
        !e.empty())
      return fail("--kl-base: " + e);
  }
  const double loadMs = secondsSince(t0) * 1000.0;

  // The window: --ctx, which must fit both artifacts, or the default (no
  // larger than their contexts).
  int64_t ctx = args.ctx > 0 ? args.ctx : kDefaultPerplexityCtx;
  for (const fm::Model *m : {model.get(), base.get()}) {
    if (!m || m->contextLength() <= 0)
      continue;
    if (args.ctx > m->contextLength())
      return fail("--ctx " + str(args.ctx) + ": must be at most " +
                  str(m->contextLength()) + ", the context of " + m->name() +
                  " (fmc compile --context sets it)");
    if (args.ctx == 0)
      ctx = std::min(ctx, m->contextLength());
  }

  auto t1 = Clock::now();
  auto encoded = fm::perplexityTokens(*tokenizer, text);
  if (!encoded)
    return fail("--perplexity " + args.file + ": " + encoded.message());
  const int64_t n = static_cast<int64_t>(encoded->tokens.size());
  if (n < ctx)
    return fail("--perplexity " + args.file + ": " + str(n) +
                " tokens, fewer than one window of " + str(ctx) +
                " (--ctx): give a longer text or a smaller --ctx");
  const int64_t windows =
      args.chunks > 0 ? std::min(args.chunks, n / ctx) : n / ctx;
  std::string bos = "no BOS";
  if (encoded->bos >= 0)
    bos = "BOS " + tokenizer->tokenString(encoded->bos) + " (id " +
          str(encoded->bos) + ") first in each window";
  std::fprintf(stderr,
               "fm-run: perplexity of %s: %lld tokens (%.0f ms to encode); %lld "
               "windows of %lld, the last %lld of each scored; %s\n",
               args.file.c_str(), static_cast<long long>(n),
               secondsSince(t1) * 1000.0, static_cast<long long>(windows),
               static_cast<long long>(ctx),
               static_cast<long long>(ctx - ctx / 2 - 1), bos.c_str());

  fm::PerplexityOptions options;
  options.ctx = ctx;
  options.chunks = windows;
  options.bos = encoded->bos;
  options.prefillChunk = shared.prefillChunk;
  Progress progress;
  options.progress = [&progress](int64_t done, int64_t total, double ppl) {
    progress(done, total, ppl);
  };
  auto t2 = Clock::now();
  auto result = fm::perplexity(*session, encoded->tokens, options, baseSession.get());
  if (!result)
    return fail(result.message());
  const double evalSeconds = secondsSince(t2);

  printResults(*result, args.klBase);
  if (shared.stats) {
    const fm::PerplexityResult &r = *result;
    // Tokens run through the model(s) per second of the evaluation.
    const int64_t run = r.chunks * (r.ctx - 1) * (r.hasBase ? 2 : 1);
    const std::string activations =
        shared.activations == "int11" && !model->int11TakesEffect()
            ? "int8x2"
            : shared.activations;
    std::string json =
        "{\"ppl\": " + number(r.ppl) + ", \"ppl_err\": " + number(r.pplError) +
        ", \"tokens_scored\": " + str(r.tokensScored) +
        ", \"chunks\": " + str(r.chunks) + ", \"ctx\": " + str(r.ctx) +
        ", \"tokens\": " + str(n) + ", \"bos\": " +
        (encoded->bos >= 0 ? str(encoded->bos) : "null");
    if (r.hasBase)
      json += ", \"base_ppl\": " + number(r.basePpl) +
              ", \"base_ppl_err\": " + number(r.basePplError) +
              ", \"delta_ppl\": " + number(r.deltaPpl) +
              ", \"delta_ppl_err\": " + number(r.deltaPplError) +
              ", \"kl_mean\": " + number(r.klMean) +
              ", \"kl_mean_err\": " + number(r.klMeanError) +
              ", \"kl_p90\": " + number(r.klP90) +
              ", \"kl_p99\": " + number(r.klP99) +
              ", \"kl_p999\": " + number(r.klP999) +
              ", \"top1_agree\": " + number(r.top1Agree) +
              ", \"top1_agree_err\": " + number(r.top1AgreeError);
    json += ", \"load_ms\": " + number(loadMs) +
            ", \"eval_ms\": " + number(evalSeconds * 1000.0) +
            ", \"tokens_per_s\": " +
            number(evalSeconds > 0.0 ? double(run) / evalSeconds : 0.0) +
            ", \"threads\": " + str(session->threads()) + ", \"device\": \"" +
            model->device() + "\", \"activations\": \"" + activations + "\"}";
    std::printf("%s\n", json.c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : fail("cannot write the results to stdout");
}

} // namespace fmrun
