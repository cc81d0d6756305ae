// fm-run --prompt / --prompt-file: the artifact's tokenizer encodes the
// text, the model generates, and the text streams to stdout as it is
// produced (TextRun.h).
#include "TextRun.h"

#include "Adapters.h"

#include "fm/minisign.h"
#include "fm/tokenizer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace fmrun {

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-run: error: %s\n", message.c_str());
  return 1;
}

double peakRssMb() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0.0;
#if defined(__APPLE__)
  return usage.ru_maxrss / (1024.0 * 1024.0);
#else
  return usage.ru_maxrss / 1024.0;
#endif
}

std::string idsJson(const std::vector<int32_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string launchesJson(const fm::SessionStats &stats) {
  auto count = [](int64_t n) { return n < 0 ? std::string("null") : std::to_string(n); };
  return "\"graph_launches\": " + count(stats.graphLaunches) +
         ", \"direct_launches\": " + count(stats.directLaunches);
}

bool writeOut(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    return false;
  return std::fflush(stdout) == 0;
}

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

// --activations (checked by CLI11 to be one of fm::activationsName's names).
fm::SessionOptions::Activations activationsOf(const std::string &name) {
  fm::SessionOptions::Activations a = fm::SessionOptions::Activations::Int8x2;
  fm::parseActivations(name, &a);
  return a;
}

int localRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *value = std::getenv(name))
      if (int n = std::atoi(value); n > 0)
        return n;
  return 1;
}

bool readFile(const std::string &path, std::string *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

} // namespace

std::string loadModel(const TextArgs &args, const std::string &path,
                      bool leader, std::shared_ptr<fm::Model> *out) {
  fm::LoadOptions loadOptions;
  loadOptions.verifyHash = args.verifyHash;
  loadOptions.device = args.device;
  loadOptions.cudaGraphs = args.cudaGraphs;
  loadOptions.maxMemoryBytes = args.maxMemory;
  for (const std::string &key : args.trustedKeys) {
    std::string text;
    if (!readFile(key, &text))
      return "--trusted-key: " + key + ": cannot read it";
    // Checked here too, so that a bad key's message names its file.
    if (auto parsed = fm::minisign::parsePublicKey(text, key); !parsed)
      return "--trusted-key: " + parsed.message();
    loadOptions.trustedKeys.push_back(text);
  }
  auto loaded = fm::Model::load(path, loadOptions);
  if (!loaded)
    return loaded.message();
  *out = *loaded;
  const fm::Model &model = **out;
  if (leader)
    std::fprintf(stderr, "fm-run: device %s%s: %s\n", model.device().c_str(),
                 args.device.empty() ? " (default)" : "",
                 model.deviceDescription().c_str());
  if (leader && !model.signedBy().empty())
    std::fprintf(stderr, "fm-run: signed by trusted key %s\n",
                 model.signedBy().c_str());
  return {};
}

std::string makeSession(const TextArgs &args,
                        const std::shared_ptr<fm::Model> &model,
                        const std::vector<std::string> &adapters,
                        fm::Communicator *comm,
                        std::unique_ptr<fm::Session> *out) {
  const int ranks = comm ? comm->size() : 1;
  const bool leader = !comm || comm->rank() == 0;
  fm::SessionOptions sessionOptions;
  if (auto loaded = loadAdapters(model, adapters, leader); loaded)
    sessionOptions.adapters = std::move(*loaded);
  else
    return loaded.message();
  sessionOptions.activations = activationsOf(args.activations);
  sessionOptions.threads = args.threads;
  if (args.threads == 0 && ranks > 1)
    sessionOptions.threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                        std::max(1, localRanks()));
  sessionOptions.communicator = comm;
  *out = std::make_unique<fm::Session>(model, sessionOptions);
  if (!(*out)->status())
    return (*out)->status().message();
  return {};
}

std::string loadForText(const TextArgs &args, fm::Communicator *comm,
                        Loaded *out) {
  auto t0 = std::chrono::steady_clock::now();
  const bool leader = !comm || comm->rank() == 0;
  if (std::string e = loadModel(args, args.model, leader, &out->model); !e.empty())
    return e;
  // Parse the tokenizer now: an artifact without one fails before the
  // session is built.
  auto tokenizer = out->model->tokenizer();
  if (!tokenizer)
    return tokenizer.message() + "; fm-run --tokens takes ids";
  if (std::string e = makeSession(args, out->model, args.adapters, comm, &out->session);
      !e.empty())
    return e;
  out->loadMs = msSince(t0);
  return {};
}

fm::GenerateOptions generateOptions(const TextArgs &args) {
  fm::GenerateOptions o;
  o.maxNewTokens = args.maxNewTokens;
  o.stopStrings = args.stop;
  o.addSpecialTokens = !args.noSpecialTokens;
  o.prefillChunk = args.prefillChunk;
  return o;
}

fm::Sampler makeSampler(const TextArgs &args) {
  return fm::Sampler(args.temperature, args.topK, args.topP, args.seed);
}

TextGuide::TextGuide(Loaded &loaded, fm::GenerateOptions *options, bool leader)
    : guided_(loaded.guided.get()), leader_(leader) {
  fm::LogitsProcessor constraint;
  if (guided_) {
    guided_->restart();
    options->stopIds = guided_->eos();
    if (fm::TokenConstraint *c = guided_->constraint()) {
      constrained_ = std::make_unique<fm::ConstrainedLogits>(*c, guided_->eos());
      constraint = constrained_->hook();
    }
    if (guided_->tools()) {
      stream_.emplace(guided_->toolStream());
      // The constraint learns each token at the next step: the call is written from here.
      constraint = [this, inner = constraint](const std::vector<int32_t> &generated,
                                              float *logits, int64_t vocab) {
        fm::Status s = inner(generated, logits, vocab);
        if (s)
          followCall();
        return s;
      };
    }
  }
  if (loaded.bias.empty()) {
    options->logitsProcessor = constraint;
    return;
  }
  // The bias first: the constraint masks the biased logits.
  options->logitsProcessor = [bias = &loaded.bias, constraint](
                                 const std::vector<int32_t> &generated, float *logits,
                                 int64_t vocab) {
    bias->apply(logits);
    return constraint ? constraint(generated, logits, vocab) : fm::Status::ok();
  };
}

bool TextGuide::write(std::string_view piece) {
  if (!leader_)
    return true;
  if (!stream_)
    return writeOut(piece);
  return writeOut(stream_->push(piece)) && !writeFailed_;
}

void TextGuide::followCall() {
  const fm::ToolCallDecoder *tools = guided_->tools();
  if (!tools->inCall())
    return;
  stream_->close();
  if (tools->finished() && !callWritten_)
    writeCall();
}

void TextGuide::writeCall() {
  callWritten_ = true;
  if (!leader_)
    return;
  std::string line = stream_->atLineStart() ? "" : "\n";
  line += guided_->tools()->callText() + "\n";
  if (!writeOut(line))
    writeFailed_ = true;
}

fm::Expected<int> TextGuide::finish(const fm::Generation &generation) {
  if (!constrained_)
    return 0;
  if (fm::Status s = constrained_->follow(generation.tokens); !s)
    return s;
  if (stream_) {
    if (guided_->tools()->inCall()) {
      stream_->close();
      if (!callWritten_)
        writeCall(); // complete, or cut short (the note below says so)
    } else if (leader_ && !writeOut(stream_->rest() + "\n")) {
      writeFailed_ = true;
    }
    if (writeFailed_)
      return fm::Status::error("cannot write the output to stdout");
  }
  if (!leader_)
    return 0;
  return guided_->noteIfIncomplete(guided_->output(generation.tokens), generation.tokens.size());
}

namespace {

/// --prompt with --draft / --lookup: the prompt encoded as Session::generate
/// encodes it, then fm::generateTextSpeculative.
fm::Expected<fm::Generation> generateDrafted(Loaded &loaded, const std::string &prompt,
                                             fm::Sampler &sampler,
                                             const fm::GenerateOptions &options,
                                             const fm::TextCallback &streamed,
                                             fm::SpeculativeStats *stats) {
  fm::Expected<fm::Tokenizer> tokenizer = loaded.model->tokenizer();
  if (!tokenizer)
    return tokenizer.status();
  fm::Expected<std::vector<fm::TokenId>> ids =
      tokenizer->encode(prompt, options.addSpecialTokens);
  if (!ids)
    return ids.status();
  return fm::generateTextSpeculative(*loaded.session, *loaded.drafting->drafter, *ids,
                                     sampler, options, loaded.drafting->options, streamed,
                                     stats);
}

int runPrompt(const TextArgs &args, Loaded &loaded, fm::Communicator *comm) {
  const bool leader = !comm || comm->rank() == 0;
  std::string prompt = args.prompt;
  if (!args.promptFile.empty() && !readFile(args.promptFile, &prompt))
    return fail("--prompt-file " + args.promptFile + ": cannot read it");
  fm::Sampler sampler = makeSampler(args);
  fm::GenerateOptions options = generateOptions(args);
  TextGuide guide(loaded, &options, leader);
  bool written = true;
  auto streamed = [&](std::string_view piece) {
    written = guide.write(piece) && written;
    return true;
  };
  auto abortAll = [&](const std::string &message) {
    if (comm && comm->size() > 1)
      comm->abort(1);
    return fail(message);
  };
  double encodeMs = 0.0;
  auto withImages = promptWithImages(prompt, args.images, *loaded.session,
                                     leader, &encodeMs);
  if (!withImages)
    return abortAll(withImages.message());
  prompt = std::move(*withImages);
  auto t0 = std::chrono::steady_clock::now();
  fm::SpeculativeStats drafted; // --draft, --lookup
  auto g = loaded.drafting ? generateDrafted(loaded, prompt, sampler, options, streamed,
                                             &drafted)
                           : loaded.session->generate(prompt, sampler, options, streamed);
  if (!g)
    return abortAll(g.message());
  const double totalMs = msSince(t0);
  if (leader && !guide.endsLine() && isatty(STDOUT_FILENO))
    writeOut("\n");
  auto guided = guide.finish(*g);
  if (!guided)
    return abortAll(guided.message());
  if (!leader)
    return 0;
  if (!written)
    return fail("cannot write the text to stdout");
  if (args.stats) {
    auto perSecond = [](int64_t n, double ms) {
      return ms > 0.0 ? n * 1000.0 / ms : 0.0;
    };
    std::fprintf(stderr,
                 "{\"load_ms\": %.3f, \"prompt_tokens\": %lld, "
                 "\"prefill_tokens_per_s\": %.3f, \"generated_tokens\": %lld, "
                 "\"decode_tokens_per_s\": %.3f, \"total_ms\": %.3f, "
                 "\"stop\": \"%s\", \"peak_rss_mb\": %.1f, \"threads\": %d, "
                 "\"ranks\": %d, \"device\": \"%s\", \"prompt_ids\": %s, "
                 "\"generated_ids\": %s, \"images\": %zu, \"encode_ms\": %.3f, "
                 "\"gemm_repack_ms\": %.3f, %s%s%s}\n",
                 loaded.loadMs, static_cast<long long>(g->promptTokens),
                 perSecond(g->promptTokens, g->prefillMs),
                 static_cast<long long>(g->tokens.size()),
                 perSecond(g->decodeTokens, g->decodeMs), totalMs,
                 fm::stopReasonName(g->stop), peakRssMb(),
                 loaded.session->threads(), comm ? comm->size() : 1,
                 loaded.model->device().c_str(), idsJson(g->prompt).c_str(),
                 idsJson(g->tokens).c_str(), args.images.size(), encodeMs,
                 g->firstRunMs, launchesJson(loaded.session->stats()).c_str(),
                 loaded.drafting ? ", " : "",
                 speculativeJson(loaded.drafting.get(), drafted).c_str());
  }
  return *guided;
}

} // namespace

int runText(const TextArgs &args, fm::Communicator *comm) {
  const int ranks = comm ? comm->size() : 1;
  // The setup fails on every rank together (as fm-run --tokens does).
  std::string error;
  if (args.chat + (!args.prompt.empty() || !args.promptFile.empty()) > 1)
    error = "--chat and --prompt/--prompt-file are two modes: pick one";
  else if (!args.prompt.empty() && !args.promptFile.empty())
    error = "--prompt and --prompt-file both give the prompt: pick one";
  else if (!args.chatFile.empty() && !args.chat)
    error = "--chat-file is for --chat";
  else if (!args.system.empty() && !args.chat)
    error = "--system is for --chat";
  else if (args.chat && ranks > 1 && args.chatFile.empty())
    error = "an interactive --chat reads stdin, which only rank 0 sees: use "
            "--chat-file under mpirun";
  for (const std::string &s : args.stop)
    if (error.empty() && s.empty())
      error = "--stop: a stop string must not be empty";
  Loaded loaded;
  if (error.empty())
    error = loadForText(args, comm, &loaded);
  if (error.empty()) {
    // Guided options over the artifact's tokenizer (loadForText checked that it has one).
    auto guided = Guided::forText(args.guided, *loaded.model->tokenizer(),
                                  loaded.model->vocabSize(), loaded.model->stopIds());
    if (guided)
      loaded.guided = std::move(*guided);
    else
      error = guided.message();
  }
  if (error.empty()) {
    auto bias = LogitBias::parse(args.logitBias, loaded.model->vocabSize());
    if (bias)
      loaded.bias = std::move(*bias);
    else
      error = bias.message();
  }
  if (error.empty() && args.speculative.enabled()) {
    loaded.drafting = std::make_unique<Drafting>();
    error = makeDrafting(args.speculative, args, *loaded.model, args.temperature, args.topK,
                         args.topP, args.seed, !comm || comm->rank() == 0,
                         loaded.drafting.get());
  }
  if (ranks > 1) {
    float failed = error.empty() ? 0.0f : 1.0f;
    if (fm::Status s = comm->allReduceSum(&failed, 1); !s)
      return fail(s.message());
    if (failed > 0.0f)
      return error.empty() ? 1 : fail(error);
  } else if (!error.empty()) {
    return fail(error);
  }
  return args.chat ? runChat(args, loaded, comm) : runPrompt(args, loaded, comm);
}

} // namespace fmrun
