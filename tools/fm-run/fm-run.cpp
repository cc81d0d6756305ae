// fm-run: runs a compiled .fmb model on token ids: generates, scores
// (teacher-forced logits of every position) and reports speed, on the device
// it picks or is told (--device); with text (--prompt, --chat: TextRun.h)
// through the artifact's tokenizer; the perplexity of a text file
// (--perplexity: Perplexity.h). Started by mpirun, it runs a model
// partitioned over ranks as one process per rank; rank 0 samples, prints
// and writes files. Images (--image, --image-tensor) go through the model's
// image encoder first: a VLM's prompt placeholders take their tokens, an
// encoder alone writes them (--image-tokens-out).
#include "Adapters.h"
#include "Guided.h"
#include "Images.h"
#include "LogitBias.h"
#include "Perplexity.h"
#include "Speculative.h"
#include "common/OptionChecks.h"
#include "TextRun.h"

#include "fm/adapter.h"
#include "fm/image.h"
#include "fm/minisign.h"
#include "fm/npy.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/speculative.h"
#include "fm/tokenizer.h"

#include <CLI/CLI.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::string model;
  std::string tokens;
  int64_t maxNewTokens = 16;
  int threads = 0;
  float temperature = 0.0f;
  int topK = 0;
  float topP = 1.0f;
  uint64_t seed = 0;
  bool stats = false;
  bool score = false;
  std::string logitsOut;
  int64_t prefillChunk = 0;
  bool verifyHash = false;
  std::string activations = "int11";
  std::string device;
  bool noCudaGraph = false;
  bool listDevices = false;
  std::vector<std::string> trustedKeys; // public key files
  uint64_t maxMemory = 0;               // bytes; 0: physical memory
  std::vector<std::string> adapters; // "a.fmba[:scale]"
  /// --image and --image-tensor, in the order given: (is a tensor, path).
  std::vector<std::pair<bool, std::string>> images;
  std::string imageTokensOut;
  fmrun::GuidedArgs guided;
  std::vector<std::string> logitBias; // --logit-bias ID=BIAS
};

// --activations (checked by CLI11 to be one of fm::activationsName's names).
fm::SessionOptions::Activations activationsOf(const std::string &name) {
  fm::SessionOptions::Activations a = fm::SessionOptions::Activations::Int8x2;
  fm::parseActivations(name, &a);
  return a;
}

// --stats' "activations": what ran (int11 is int8x2 without AMX, and for a
// model without weights that AMX takes in one tile per group).
std::string activationsReport(const std::string &name, const fm::Model &model) {
  return name == "int11" && !model.int11TakesEffect() ? "int8x2" : name;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-run: error: %s\n", message.c_str());
  return 1;
}

/// Ids separated by spaces, commas or newlines, as fm-tokenize prints them.
bool parseTokens(const std::string &text, std::vector<int32_t> *out,
                 std::string *error) {
  auto ids = fm::parseTokenIds(text, "--tokens");
  if (!ids) {
    *error = "--tokens: " + ids.message();
    return false;
  }
  if (ids->empty()) {
    *error = "--tokens: no token ids in '" + text + "'";
    return false;
  }
  *out = std::move(*ids);
  return true;
}

// Ranks of this job on this machine (from the MPI launcher), else 1.
int localRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *value = std::getenv(name))
      if (int n = std::atoi(value); n > 0)
        return n;
  return 1;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

// RssAnon of /proc/self/status in MiB: the process's anonymous memory
// (heap, caches, arena; not the mapped artifact), or -1 where unknown.
double anonRssMb() {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return -1.0;
  char line[256];
  double kb = -1.0;
  while (std::fgets(line, sizeof(line), f))
    if (std::strncmp(line, "RssAnon:", 8) == 0)
      kb = std::strtod(line + 8, nullptr);
  std::fclose(f);
  return kb < 0 ? -1.0 : kb / 1024.0;
}

// A whole file, or an error naming it.
bool readFile(const std::string &path, std::string *out, std::string *error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0 && out->size() < (1u << 20))
    out->append(buffer, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed)
    *error = path + ": cannot read";
  return !failed;
}

double peakRssMb() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0.0;
#if defined(__APPLE__)
  return usage.ru_maxrss / (1024.0 * 1024.0); // bytes
#else
  return usage.ru_maxrss / 1024.0; // KiB
#endif
}

// --draft / --lookup with --tokens: the ids (or, with guided options, the
// text) generated by fm::generateSpeculative, the --logit-bias and the guided
// constraint applied to every position of both models.
fm::Expected<fm::SpeculativeResult>
generateDrafted(const Args &args, fm::Session &session, fmrun::Drafting &drafting,
                const std::vector<int32_t> &prompt, const fmrun::LogitBias &bias,
                fmrun::Guided *guided) {
  fm::Sampler sampler(args.temperature, args.topK, args.topP, args.seed);
  fm::TokenConstraint *inner = guided ? guided->constraint() : nullptr;
  fmrun::BiasedConstraint constraint(bias, inner);
  // --tokenizer alone constrains nothing: the output ends at an end of
  // sequence, as Guided::next ends it.
  std::vector<int32_t> eos;
  if (guided && !inner)
    eos = guided->eos();
  auto taken = [&eos](int32_t token) {
    return std::find(eos.begin(), eos.end(), token) == eos.end();
  };
  return fm::generateSpeculative(session, *drafting.drafter, prompt, args.maxNewTokens,
                                 sampler, drafting.options,
                                 !bias.empty() || inner ? &constraint : nullptr, taken);
}

int run(const Args &args, const fmrun::TextArgs &text, fm::Communicator *comm) {
  const int rank = comm ? comm->rank() : 0;
  const int ranks = comm ? comm->size() : 1;
  const bool leader = rank == 0;
  // Errors name the rank when there are several; after the setup, an error
  // on one rank ends all of them (the others would wait in a collective).
  auto report = [&](const std::string &message) {
    return fail(ranks > 1 ? "rank " + std::to_string(rank) + ": " + message
                          : message);
  };
  auto abortAll = [&](const std::string &message) {
    int rc = report(message);
    if (ranks > 1)
      comm->abort(rc);
    return rc;
  };

  // Setup: every rank either succeeds or says why; then they agree.
  std::vector<int32_t> tokens;
  std::shared_ptr<fm::Model> model;
  std::unique_ptr<fm::Session> session;
  std::unique_ptr<fmrun::Guided> guided;
  fmrun::LogitBias bias;
  std::unique_ptr<fmrun::Drafting> drafting; // --draft, --lookup
  double loadMs = 0.0;
  std::string error = [&]() -> std::string {
    std::string e;
    const bool imagesOnly = args.tokens.empty() && !args.images.empty();
    if (args.tokens.empty() && args.images.empty())
      return "--tokens (token ids), --prompt/--prompt-file or --chat (text) "
             "is required, or --image / --image-tensor for an image encoder";
    if (!args.imageTokensOut.empty() && args.images.empty())
      return "--image-tokens-out needs an --image or --image-tensor";
    if (imagesOnly && args.imageTokensOut.empty())
      return "images without --tokens: say where their tokens go with "
             "--image-tokens-out FILE.npy";
    if (!args.tokens.empty() && !parseTokens(args.tokens, &tokens, &e))
      return e;
    if (args.score && args.logitsOut.empty())
      return "--score needs --logits-out FILE.npy";
    auto t0 = std::chrono::steady_clock::now();
    fm::LoadOptions loadOptions;
    loadOptions.verifyHash = args.verifyHash;
    loadOptions.device = args.device;
    loadOptions.cudaGraphs = !args.noCudaGraph;
    loadOptions.maxMemoryBytes = args.maxMemory;
    for (const std::string &path : args.trustedKeys) {
      std::string text;
      if (!readFile(path, &text, &e))
        return "--trusted-key: " + e;
      // Checked here too, so that a bad key's message names its file.
      if (auto key = fm::minisign::parsePublicKey(text, path); !key)
        return "--trusted-key: " + key.message();
      loadOptions.trustedKeys.push_back(text);
    }
    auto loaded = fm::Model::load(args.model, loadOptions);
    if (!loaded)
      return loaded.message();
    model = *loaded;
    if (leader)
      std::fprintf(stderr, "fm-run: device %s%s: %s\n", model->device().c_str(),
                   args.device.empty() ? " (default)" : "",
                   model->deviceDescription().c_str());
    if (leader && !model->signedBy().empty())
      std::fprintf(stderr, "fm-run: signed by trusted key %s\n",
                   model->signedBy().c_str());
    if (!args.images.empty() && !model->imageEncoder())
      return model->name() + " has no image encoder (no encode_image program): "
                             "it takes no --image";
    if (!tokens.empty() && !model->hasDecoder())
      return model->name() + " is an image encoder alone (no decoder): it runs "
                             "on --image or --image-tensor, not on --tokens";
    if (model->imageEncoder() && !tokens.empty() &&
        model->imageEncoder()->imageTokenIndex >= 0) {
      const fm::ImageEncoderInfo &ie = *model->imageEncoder();
      int64_t placeholders = 0;
      for (int32_t t : tokens)
        placeholders += t == ie.imageTokenIndex;
      const int64_t want = ie.tokens * int64_t(args.images.size());
      if (placeholders != want)
        return model->name() + ": --tokens holds " +
               std::to_string(placeholders) + " image placeholders (token " +
               std::to_string(ie.imageTokenIndex) + ") for " +
               std::to_string(args.images.size()) + " --image: each image takes " +
               std::to_string(ie.tokens) + " consecutive placeholders";
    }
    // What the session would reject, checked here so that under mpirun
    // every rank fails in the setup together rather than mid-run.
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= model->vocabSize())
        return model->name() + ": token " + std::to_string(tokens[i]) +
               " at index " + std::to_string(i) + " is out of range (vocab " +
               std::to_string(model->vocabSize()) + ")";
    if (model->contextLength() > 0 &&
        static_cast<int64_t>(tokens.size()) > model->contextLength())
      return "--tokens (" + std::to_string(tokens.size()) +
             " ids): must be at most " +
             std::to_string(model->contextLength()) + ", the context of " +
             model->name() + " (fmc compile --context sets it)";
    fm::SessionOptions sessionOptions;
    if (auto loaded = fmrun::loadAdapters(model, args.adapters, leader); loaded)
      sessionOptions.adapters = std::move(*loaded);
    else
      return loaded.message();
    sessionOptions.activations = activationsOf(args.activations);
    sessionOptions.threads = args.threads;
    // By default the ranks on one machine share its cores.
    if (args.threads == 0 && ranks > 1)
      sessionOptions.threads =
          std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                          std::max(1, localRanks()));
    sessionOptions.communicator = comm;
    session = std::make_unique<fm::Session>(model, sessionOptions);
    if (!session->status())
      return session->status().message();
    auto g = fmrun::Guided::create(args.guided, model->vocabSize());
    if (!g)
      return g.message();
    guided = std::move(*g);
    auto b = fmrun::LogitBias::parse(args.logitBias, model->vocabSize());
    if (!b)
      return b.message();
    bias = std::move(*b);
    if (!bias.empty() && args.score)
      return "--score does not sample: no --logit-bias with it";
    if (guided && args.score)
      return "--score does not generate: no --tokenizer or guided options with it";
    if (text.speculative.enabled()) {
      drafting = std::make_unique<fmrun::Drafting>();
      if (std::string e = fmrun::makeDrafting(text.speculative, text, *model,
                                              args.temperature, args.topK, args.topP,
                                              args.seed, leader, drafting.get());
          !e.empty())
        return e;
      drafting->options.keepLogits = !args.logitsOut.empty();
    }
    loadMs = msSince(t0);
    return {};
  }();
  if (ranks > 1) {
    float failed = error.empty() ? 0.0f : 1.0f;
    if (fm::Status s = comm->allReduceSum(&failed, 1); !s)
      return abortAll(s.message());
    // When every rank failed (a bad file, a rank count that does not match
    // the partition), rank 0 speaks for all; else each failed rank does.
    if (failed >= float(ranks))
      return leader ? fail(error) : 1;
    if (failed > 0.0f)
      return error.empty() ? 1 : report(error);
  } else if (!error.empty()) {
    return report(error);
  }

  // The images first: a VLM's session keeps their tokens for the prompt.
  std::vector<float> imageTokens; // --image-tokens-out, [images · N][D]
  double encodeMs = 0.0;
  int64_t tokenWidth = 0;
  for (const auto &[tensor, path] : args.images) {
    auto input = fmrun::loadImage(*model->imageEncoder(), tensor, path);
    if (!input)
      return abortAll(input.message());
    auto t0 = std::chrono::steady_clock::now();
    auto encoded = session->encodeImage(input->data(),
                                        static_cast<int64_t>(input->size()));
    if (!encoded)
      return abortAll(encoded.message());
    encodeMs += msSince(t0);
    tokenWidth = encoded->width;
    imageTokens.insert(imageTokens.end(), encoded->data,
                       encoded->data + encoded->rows * encoded->width);
  }
  if (leader && !args.imageTokensOut.empty()) {
    const int64_t rows = tokenWidth ? int64_t(imageTokens.size()) / tokenWidth : 0;
    if (!fm::writeNpyF32(args.imageTokensOut, imageTokens.data(),
                         {rows, tokenWidth}, &error))
      return report(args.imageTokensOut + ": " + error);
  }
  if (tokens.empty()) {
    if (leader && args.stats)
      std::printf("{\"load_ms\": %.3f, \"images\": %zu, \"encode_ms\": %.3f, "
                  "\"threads\": %d, \"device\": \"%s\"}\n",
                  loadMs, args.images.size(), encodeMs, session->threads(),
                  model->device().c_str());
    return 0;
  }

  const int64_t vocab = model->vocabSize();
  std::vector<float> logitRows; // --logits-out, [rows][vocab]
  std::vector<int32_t> generated;
  double prefillMs = 0.0, decodeMs = 0.0;
  int64_t decodeTokens = 0;
  int exitStatus = 0; // fmrun::kIncomplete when a guided output is unfinished

  // The one-time GEMM repack of the prefill programs' first run is timed
  // apart (SessionStats::firstRunMs): prefill speed is without it.
  double repackMs = 0.0;
  std::string speculative; // --stats fields of --draft / --lookup
  if (drafting) {
    auto r = generateDrafted(args, *session, *drafting, tokens, bias, guided.get());
    if (!r)
      return abortAll(r.message());
    generated = std::move(r->tokens);
    if (leader)
      logitRows = std::move(r->logits);
    prefillMs = r->prefillMs;
    repackMs = r->firstRunMs;
    decodeMs = r->decodeMs;
    decodeTokens = std::max<int64_t>(0, int64_t(generated.size()) - 1);
    speculative = fmrun::speculativeJson(drafting.get(), r->stats);
    if (leader && r->stop == fm::StopReason::ContextFull)
      std::fprintf(stderr, "fm-run: note: the context of %lld tokens is full\n",
                   static_cast<long long>(model->contextLength()));
  } else {
    const double firstRunMs0 = session->stats().firstRunMs;
    auto t0 = std::chrono::steady_clock::now();
    auto prefill =
        session->prefill(tokens.data(), static_cast<int64_t>(tokens.size()),
                         /*allLogits=*/args.score, args.prefillChunk);
    if (!prefill)
      return abortAll(prefill.message());
    repackMs = session->stats().firstRunMs - firstRunMs0;
    prefillMs = msSince(t0) - repackMs;

    if (args.score) {
      if (leader)
        logitRows.assign(prefill->data, prefill->data + prefill->rows * vocab);
    } else {
      fm::Sampler sampler(args.temperature, args.topK, args.topP, args.seed);
      const bool keepLogits = leader && !args.logitsOut.empty();
      // Every rank decodes the same steps (the collectives pair up), so the
      // choice to feed the last token back must not depend on the rank.
      const bool feedLast = !args.logitsOut.empty();
      const float *logits = prefill->last();
      if (keepLogits)
        logitRows.insert(logitRows.end(), logits, logits + vocab);
      const int64_t context = model->contextLength();
      std::vector<float> biased; // --logit-bias: a copy of the logits, biased
      for (int64_t i = 0; i < args.maxNewTokens; ++i) {
        bool stop = false;
        const float *from = logits;
        if (!bias.empty()) {
          biased.assign(logits, logits + vocab);
          bias.apply(biased.data());
          from = biased.data();
        }
        auto token = guided ? guided->next(*session, sampler, from, &stop)
                            : session->sample(sampler, from);
        if (!token)
          return abortAll(token.message());
        if (stop)
          break;
        generated.push_back(*token);
        if (guided && guided->finished())
          break; // end of sequence, or the tool call is complete: not fed back
        // The last token is fed back only for its logits row.
        if (i + 1 == args.maxNewTokens && !feedLast)
          break;
        if (context > 0 && session->position() >= context) {
          if (leader)
            std::fprintf(stderr,
                         "fm-run: note: the context of %lld tokens is full\n",
                         static_cast<long long>(context));
          break;
        }
        auto t1 = std::chrono::steady_clock::now();
        auto next = session->decode(*token);
        if (!next)
          return abortAll(next.message());
        decodeMs += msSince(t1);
        ++decodeTokens;
        logits = *next;
        if (keepLogits)
          logitRows.insert(logitRows.end(), logits, logits + vocab);
      }
    }
  }
  if (leader && guided) {
    exitStatus = guided->print(generated);
  } else if (leader && !args.score) {
    for (size_t i = 0; i < generated.size(); ++i)
      std::printf("%s%d", i ? " " : "", generated[i]);
    std::printf("\n");
  }

  if (!leader)
    return 0;
  if (!args.logitsOut.empty()) {
    int64_t rows =
        vocab > 0 ? static_cast<int64_t>(logitRows.size()) / vocab : 0;
    if (!fm::writeNpyF32(args.logitsOut, logitRows.data(), {rows, vocab},
                             &error))
      return report(args.logitsOut + ": " + error);
  }

  if (args.stats) {
    auto perSecond = [](int64_t n, double ms) {
      return ms > 0.0 ? n * 1000.0 / ms : 0.0;
    };
    const fm::SessionStats st = session->stats();
    // Collectives of one decode step: as counted, or (no decode ran) those
    // of the program a decode step would run.
    double perToken = 0.0;
    if (st.decodeTokens > 0) {
      perToken = double(st.decodeCollectives) / double(st.decodeTokens);
    } else {
      for (const char *phase : {"decode", "prefill_last", "prefill"})
        if (const fm::ProgramInfo *p = model->program(phase)) {
          perToken = double(p->collectives);
          break;
        }
    }
    const int64_t prefillTokens = static_cast<int64_t>(tokens.size());
    // Nothing to say when the artifact holds the copies (fmc compile's
    // "cpu gemm" line), or no prefill ran as a GEMM.
    if (model->prefillCopiesMade() > 0)
      std::fprintf(stderr,
                   "fm-run: prefill's one-time GEMM repack: %.3f ms (not in "
                   "prefill_tokens_per_s)\n",
                   repackMs);
    // How the ranks' sums travel ("host", "NCCL 2.x.y"); null for one rank.
    const std::string transport =
        st.collectiveTransport.empty() ? "null" : "\"" + st.collectiveTransport + "\"";
    // GPU time from the device's timestamps, where it measures them.
    char deviceMs[32] = "null";
    if (st.deviceMs >= 0.0)
      std::snprintf(deviceMs, sizeof(deviceMs), "%.3f", st.deviceMs);
    std::printf("{\"load_ms\": %.3f, \"prefill_tokens\": %lld, "
                "\"prefill_tokens_per_s\": %.3f, \"decode_tokens\": %lld, "
                "\"decode_tokens_per_s\": %.3f, \"peak_rss_mb\": %.1f, "
                "\"threads\": %d, \"ranks\": %d, "
                "\"collectives_per_token\": %.6g, \"collective_ms\": %.3f, "
                "\"activations\": \"%s\", \"device\": \"%s\", "
                "\"anon_rss_mb\": %.1f, \"session_mb\": %.1f, "
                "\"copied_weights_mb\": %.1f, \"device_ms\": %s, "
                "\"images\": %zu, \"encode_ms\": %.3f, "
                "\"gemm_repack_ms\": %.3f, \"collective_transport\": %s, %s%s%s}\n",
                loadMs, static_cast<long long>(prefillTokens),
                perSecond(prefillTokens, prefillMs),
                static_cast<long long>(decodeTokens),
                perSecond(decodeTokens, decodeMs), peakRssMb(),
                session->threads(), st.ranks, perToken, st.collectiveMs,
                activationsReport(args.activations, *model).c_str(),
                model->device().c_str(), anonRssMb(),
                double(session->memoryBytes()) / (1024.0 * 1024.0),
                double(model->copiedWeightBytes()) / (1024.0 * 1024.0), deviceMs,
                args.images.size(), encodeMs, repackMs, transport.c_str(),
                fmrun::launchesJson(st).c_str(), speculative.empty() ? "" : ", ",
                speculative.c_str());
  }
  std::fflush(stdout);
  return exitStatus;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"fm-run: run a compiled .fmb model on token ids or text"};
  Args args;
  fmrun::TextArgs text;
  app.add_option("model", args.model, "the .fmb artifact");
  app.add_option("--tokens", args.tokens,
                 "prompt token ids, separated by spaces, commas or newlines "
                 "(1,17,42)");
  app.add_option("--prompt", text.prompt,
                 "prompt text: encoded with the artifact's tokenizer (BOS "
                 "added as the tokenizer does), the generated text streams "
                 "to stdout");
  app.add_option("--prompt-file", text.promptFile, "the prompt text from a file");
  app.add_flag("--chat", text.chat,
               "chat: each stdin line is a user turn, rendered with the "
               "checkpoint's chat template; replies stream to stdout");
  app.add_option("--system", text.system, "--chat: a system message first");
  app.add_option("--chat-file", text.chatFile,
                 "--chat: the user turns from a file, separated by lines "
                 "holding only ---");
  app.add_option("--stop", text.stop,
                 "text modes: stop when the text reaches this string (not "
                 "printed); repeatable")
      ->expected(1)
      ->take_all();
  app.add_flag("--no-special-tokens", text.noSpecialTokens,
               "--prompt: do not add the tokenizer's BOS/EOS to the prompt");
  // Ranges are checked as the options are parsed (common/OptionChecks.h): a bad
  // value is one line that names the option, the value and the range.
  auto *maxNew = fm::cli::checkInteger(
      app.add_option("--max-new-tokens", args.maxNewTokens,
                     "tokens to generate, >= 0 (default 16 with --tokens, 256 "
                     "with text; 0: the prompt alone, e.g. for --logits-out of "
                     "its last position); generation also ends when the "
                     "model's context is full")
          ->default_val(16),
      0, INT64_MAX, "must be >= 0");
  fm::cli::checkInteger(
      app.add_option("--threads", args.threads,
                     "kernel threads per process, >= 0 (0, the default: one "
                     "per core, shared by the ranks of an mpirun on one "
                     "machine); more than the machine's hardware threads "
                     "come down to them, with a warning"),
      0, INT32_MAX, "must be >= 0 (0: one per core)");
  fm::cli::checkReal(
      app.add_option("--temperature", args.temperature,
                     "sampling temperature, >= 0 (0: greedy)")
          ->default_val(0.0f),
      [](double t) { return t >= 0.0; }, "must be >= 0 (0: greedy)");
  fm::cli::checkInteger(
      app.add_option("--top-k", args.topK,
                     "keep the K most likely tokens, >= 0 (0, or the "
                     "vocabulary size or more: all)")
          ->default_val(0),
      0, INT32_MAX, "must be >= 0 (0: all)");
  fm::cli::checkReal(
      app.add_option("--top-p", args.topP,
                     "nucleus probability mass, in (0, 1] (1: all)")
          ->default_val(1.0f),
      [](double p) { return p > 0.0 && p <= 1.0; }, "must be in (0, 1]");
  fm::cli::checkUint64(
      app.add_option("--seed", args.seed,
                     "sampling seed, an integer in [0, 2^64 - 1]")
          ->default_val(0));
  app.add_flag("--stats", args.stats,
               "print one JSON line of load time, speed, peak RSS, threads, "
               "ranks and collectives (AllReduce per decode step, total ms), "
               "and the anonymous memory (RssAnon) beside what the session "
               "allocated and the device copied, and the CUDA device's kernel "
               "launches (graph_launches, direct_launches; null elsewhere); "
               "text modes: on stderr, "
               "--chat one line per turn (tokens reused from the KV cache "
               "and prefilled)");
  app.add_flag("--score", args.score,
               "teacher forcing: logits of every position of --tokens "
               "(with --logits-out), no generation");
  app.add_option("--logits-out", args.logitsOut,
                 "write logits as float32 .npy: [tokens, vocab] with "
                 "--score, else the last prompt position and one row per "
                 "generated token");
  fm::cli::checkInteger(
      app.add_option("--prefill-chunk", args.prefillChunk,
                     "process the prompt K tokens at a time, >= 0 (0, or more "
                     "than the program's max rows: its max rows, fmc compile "
                     "--max-prefill; 1: the decode path for every position)")
          ->default_val(0),
      0, INT64_MAX, "must be >= 0 (0: the program's max rows)");
  app.add_option("--activations", args.activations,
                 "how low-bit weights take their activations: int11 "
                 "(default: int8x2, except that the prefill GEMMs of w2/w4 "
                 "g32 weights on AMX take x to 13/12 bits in one tile per "
                 "group: ~1.3x faster prefill), int8x2 (two int8 digits per "
                 "input, ~16-bit, everywhere), int8 (one digit, ggml-like, "
                 "less precise), f32 (exact, ~4x slower decode)")
      ->check(CLI::IsMember({"int8x2", "int11", "int8", "f32"}))
      ->default_str("int11");
  app.add_flag_callback(
      "--exact-activations", [&args] { args.activations = "f32"; },
      "same as --activations f32");
  app.add_flag("--verify-hash", args.verifyHash,
               "check the weights against the artifact's weights digest (the "
               "program digest is checked at every load)");
  app.add_option("--device", args.device,
                 "run on this device: cpu, vulkan, metal or cuda (default: "
                 "the best hardware device present that the artifact has "
                 "code for, never a software one such as lavapipe; the "
                 "choice is printed on stderr)");
  app.add_flag("--no-cuda-graph", args.noCudaGraph,
               "cuda: launch every kernel directly instead of replaying each "
               "run's launches as a CUDA graph (--stats counts both)");
  app.add_flag("--list-devices", args.listDevices,
               "print the devices this runtime knows and exit");
  app.add_option("--trusted-key", args.trustedKeys,
                 "a minisign public key file (fmc keygen, minisign -G); with "
                 "it, only artifacts signed by one of the given keys load "
                 "(checked before any generated code is loaded; add "
                 "--verify-hash to check the weights too)");
  fm::cli::checkMemorySize(app.add_option("--max-memory", args.maxMemory,
                                        "refuse an artifact whose session "
                                        "would need more memory (KV caches, "
                                        "arena, weights a GPU copies): bytes "
                                        "or 512M, 1.5G, ... (1024-based; "
                                        "default, or 0: the physical memory)")
                             ->type_name("SIZE"));
  app.add_option("--adapter", args.adapters,
                 "attach a LoRA adapter (.fmba from fmc compile-adapter) as "
                 "FILE[:scale]; scale multiplies its alpha/r (default 1); "
                 "repeatable: the adapters are summed")
      ->allow_extra_args(false); // one file per --adapter
  app.add_option("--image", "a PNG or JPEG file for the image encoder, "
                            "decoded and preprocessed as the model says "
                            "(repeatable: one per run of image placeholders "
                            "in --tokens, or per <image> marker in --prompt "
                            "and --chat turns, in order)")
      ->each([&args](const std::string &p) { args.images.push_back({false, p}); })
      ->trigger_on_parse() // in command-line order with --image-tensor
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FILE");
  app.add_option("--image-tensor", "a preprocessed [3, H, W] float32 .npy "
                                   "image (repeatable, in order with --image)")
      ->each([&args](const std::string &p) { args.images.push_back({true, p}); })
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FILE.npy");
  app.add_option("--image-tokens-out", args.imageTokensOut,
                 "write the image encoder's tokens as float32 .npy: [images x "
                 "tokens per image, width]");
  fmrun::addGuidedOptions(app, args.guided);
  fmrun::addSpeculativeOptions(app, text.speculative);
  fmrun::PerplexityArgs perplexity;
  fmrun::addPerplexityOptions(app, perplexity);
  app.add_option("--logit-bias", args.logitBias,
                 "ID=BIAS: add BIAS to token ID's logit before every sample (and "
                 "before a --json-schema/--grammar/--regex/--tools constraint "
                 "masks them); repeatable, as llama.cpp's --logit-bias")
      ->allow_extra_args(false);
  if (auto code = fm::cli::parseCommandLine(app, argc, argv, "fm-run", 1))
    return *code;

  if (args.model.empty() && !args.listDevices)
    return fail("model: the .fmb artifact to run is required (--help)");
  if (args.listDevices) {
    for (const fm::DeviceInfo &d : fm::probeDevices())
      std::printf("%-7s %-11s %s\n", d.name.c_str(),
                  d.present ? (d.hardware ? "present" : "software")
                            : (d.builtIn ? "absent" : "not built"),
                  d.description.c_str());
    return 0;
  }
  if (std::string e = fmrun::perplexityConflicts(app, perplexity); !e.empty())
    return fail(e);
  if (std::string e = fmrun::speculativeConflicts(app, text.speculative); !e.empty())
    return fail(e);
  // Under mpirun: one process per rank of a partitioned model. MPI is
  // started only then (a plain run never touches it).
  std::unique_ptr<fm::Communicator> comm;
  if (int launched = fm::mpiLaunchSize(); launched > 0) {
    if (fm::mpiAvailable()) {
      auto world = fm::initMpi(&argc, &argv);
      if (!world)
        return fail(world.message());
      comm = std::move(*world);
    } else if (launched > 1) {
      return fail("mpirun started " + std::to_string(launched) +
                  " ranks, but this fm-run was built without MPI");
    }
  }
  args.threads = fm::cli::clampThreads("fm-run", args.threads, !comm || comm->rank() == 0);
  // The options the text modes and --perplexity share with --tokens.
  text.model = args.model;
  text.device = args.device;
  text.cudaGraphs = !args.noCudaGraph;
  text.activations = args.activations;
  text.threads = args.threads;
  text.verifyHash = args.verifyHash;
  text.trustedKeys = args.trustedKeys;
  text.maxMemory = args.maxMemory;
  text.stats = args.stats;
  text.prefillChunk = args.prefillChunk;
  text.adapters = args.adapters;
  int rc;
  if (!perplexity.file.empty()) {
    rc = fmrun::runPerplexity(perplexity, text, comm.get());
  } else if (fmrun::isTextMode(text)) {
    if (!args.tokens.empty() || args.score || !args.logitsOut.empty())
      return fail("--tokens, --score and --logits-out work on token ids, not "
                  "with --prompt or --chat");
    text.maxNewTokens = maxNew->count() ? args.maxNewTokens : 256;
    text.temperature = args.temperature;
    text.topK = args.topK;
    text.topP = args.topP;
    text.seed = args.seed;
    text.guided = args.guided;
    text.logitBias = args.logitBias;
    text.images = args.images;
    rc = fmrun::runText(text, comm.get());
  } else {
    if (!text.stop.empty() || text.noSpecialTokens || !text.system.empty())
      return fail("--stop, --no-special-tokens and --system are for --prompt "
                  "and --chat");
    rc = run(args, text, comm.get());
  }
  comm.reset(); // MPI_Finalize
  return rc;
}
