// fm-run: runs a compiled .fmb model on token ids: generates, scores
// (teacher-forced logits of every position) and reports speed, on the device
// it picks or is told (--device). Started by mpirun, it runs a model
// partitioned over ranks as one process per rank; rank 0 samples, prints
// and writes files.
#include "Guided.h"
#include "fm/npy.h"
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <CLI/CLI.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
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
  std::string activations = "int8x2";
  std::string device;
  bool listDevices = false;
  fmrun::GuidedArgs guided;
};

// --activations (checked by CLI11 to be one of these names).
fm::SessionOptions::Activations activationsOf(const std::string &name) {
  if (name == "int8")
    return fm::SessionOptions::Activations::Int8;
  if (name == "f32")
    return fm::SessionOptions::Activations::F32;
  return fm::SessionOptions::Activations::Int8x2;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-run: error: %s\n", message.c_str());
  return 1;
}

bool parseTokens(const std::string &text, std::vector<int32_t> *out,
                 std::string *error) {
  size_t i = 0;
  while (i <= text.size()) {
    size_t comma = text.find(',', i);
    if (comma == std::string::npos)
      comma = text.size();
    std::string item = text.substr(i, comma - i);
    // Spaces around ids are fine ("1, 2, 3").
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    char *end = nullptr;
    errno = 0;
    long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno == ERANGE || v < INT32_MIN ||
        v > INT32_MAX) {
      *error = "--tokens: '" + item +
               "' is not a token id (expected "
               "comma-separated integers like 1,17,42)";
      return false;
    }
    out->push_back(static_cast<int32_t>(v));
    i = comma + 1;
  }
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

int run(const Args &args, fm::Communicator *comm) {
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
  double loadMs = 0.0;
  std::string error = [&]() -> std::string {
    std::string e;
    if (args.tokens.empty())
      return "--tokens is required (comma-separated token ids)";
    if (!parseTokens(args.tokens, &tokens, &e))
      return e;
    if (args.score && args.logitsOut.empty())
      return "--score needs --logits-out FILE.npy";
    auto t0 = std::chrono::steady_clock::now();
    fm::LoadOptions loadOptions;
    loadOptions.verifyHash = args.verifyHash;
    loadOptions.device = args.device;
    auto loaded = fm::Model::load(args.model, loadOptions);
    if (!loaded)
      return loaded.message();
    model = *loaded;
    if (leader)
      std::fprintf(stderr, "fm-run: device %s%s: %s\n", model->device().c_str(),
                   args.device.empty() ? " (default)" : "",
                   model->deviceDescription().c_str());
    // What the session would reject, checked here so that under mpirun
    // every rank fails in the setup together rather than mid-run.
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= model->vocabSize())
        return model->name() + ": token " + std::to_string(tokens[i]) +
               " at index " + std::to_string(i) + " is out of range (vocab " +
               std::to_string(model->vocabSize()) + ")";
    if (model->contextLength() > 0 &&
        static_cast<int64_t>(tokens.size()) > model->contextLength())
      return model->name() + ": " + std::to_string(tokens.size()) +
             " tokens do not fit in the context of " +
             std::to_string(model->contextLength()) + " tokens";
    fm::SessionOptions sessionOptions;
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
    if (guided && args.score)
      return "--score does not generate: no --tokenizer or guided options with it";
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

  const int64_t vocab = model->vocabSize();
  std::vector<float> logitRows; // --logits-out, [rows][vocab]
  std::vector<int32_t> generated;
  double prefillMs = 0.0, decodeMs = 0.0;
  int64_t decodeTokens = 0;
  int exitStatus = 0; // fmrun::kIncomplete when a guided output is unfinished

  auto t0 = std::chrono::steady_clock::now();
  auto prefill =
      session->prefill(tokens.data(), static_cast<int64_t>(tokens.size()),
                       /*allLogits=*/args.score, args.prefillChunk);
  if (!prefill)
    return abortAll(prefill.message());
  prefillMs = msSince(t0);

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
    for (int64_t i = 0; i < args.maxNewTokens; ++i) {
      bool stop = false;
      auto token = guided ? guided->next(*session, sampler, logits, &stop)
                          : session->sample(sampler, logits);
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
    if (leader && guided) {
      exitStatus = guided->print(generated);
    } else if (leader) {
      for (size_t i = 0; i < generated.size(); ++i)
        std::printf("%s%d", i ? " " : "", generated[i]);
      std::printf("\n");
    }
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
    std::printf("{\"load_ms\": %.3f, \"prefill_tokens\": %lld, "
                "\"prefill_tokens_per_s\": %.3f, \"decode_tokens\": %lld, "
                "\"decode_tokens_per_s\": %.3f, \"peak_rss_mb\": %.1f, "
                "\"threads\": %d, \"ranks\": %d, "
                "\"collectives_per_token\": %.6g, \"collective_ms\": %.3f, "
                "\"activations\": \"%s\", \"device\": \"%s\"}\n",
                loadMs, static_cast<long long>(prefillTokens),
                perSecond(prefillTokens, prefillMs),
                static_cast<long long>(decodeTokens),
                perSecond(decodeTokens, decodeMs), peakRssMb(),
                session->threads(), st.ranks, perToken, st.collectiveMs,
                args.activations.c_str(), model->device().c_str());
  }
  std::fflush(stdout);
  return exitStatus;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"fm-run: run a compiled .fmb model on token ids"};
  Args args;
  app.add_option("model", args.model, "the .fmb artifact");
  app.add_option("--tokens", args.tokens,
                 "prompt token ids, comma-separated (1,17,42)");
  app.add_option("--max-new-tokens", args.maxNewTokens, "tokens to generate")
      ->check(CLI::NonNegativeNumber)
      ->default_val(16);
  app.add_option("--threads", args.threads,
                 "kernel threads per process (default: one per core, shared "
                 "by the ranks of an mpirun on one machine)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", args.temperature,
                 "sampling temperature (0: greedy)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0.0f);
  app.add_option("--top-k", args.topK, "keep the K most likely tokens (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  app.add_option("--top-p", args.topP, "nucleus probability mass (1: all)")
      ->default_val(1.0f);
  app.add_option("--seed", args.seed, "sampling seed")->default_val(0);
  app.add_flag("--stats", args.stats,
               "print one JSON line of load time, speed, peak RSS, threads, "
               "ranks and collectives (AllReduce per decode step, total ms)");
  app.add_flag("--score", args.score,
               "teacher forcing: logits of every position of --tokens "
               "(with --logits-out), no generation");
  app.add_option("--logits-out", args.logitsOut,
                 "write logits as float32 .npy: [tokens, vocab] with "
                 "--score, else the last prompt position and one row per "
                 "generated token");
  app.add_option("--prefill-chunk", args.prefillChunk,
                 "process the prompt K tokens at a time (0: the program's "
                 "max rows; 1: the decode path for every position)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  app.add_option("--activations", args.activations,
                 "how low-bit weights take their activations: int8x2 (two "
                 "int8 digits per input, ~16-bit; default), int8 (one digit, "
                 "ggml-like, less precise), f32 (exact, ~4x slower decode)")
      ->check(CLI::IsMember({"int8x2", "int8", "f32"}))
      ->default_str("int8x2");
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
  app.add_flag("--list-devices", args.listDevices,
               "print the devices this runtime knows and exit");
  fmrun::addGuidedOptions(app, args.guided);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return fail(e.what());
  }

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
  int rc = run(args, comm.get());
  comm.reset(); // MPI_Finalize
  return rc;
}
