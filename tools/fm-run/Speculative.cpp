// fm-run --draft / --lookup (Speculative.h).
#include "Speculative.h"

#include "TextRun.h"
#include "common/OptionChecks.h"

#include <climits>
#include <cstdio>

namespace fmrun {

void addSpeculativeOptions(CLI::App &app, SpeculativeArgs &args) {
  app.add_option("--draft", args.draft,
                 "speculative decoding with this draft artifact (the same "
                 "vocabulary and tokenizer as the model): it proposes up to "
                 "--draft-max tokens, the model checks them in one pass; the "
                 "output is distributed as the model's own (greedy: the same "
                 "tokens)")
      ->type_name("FILE.fmb");
  fm::cli::checkInteger(
      app.add_option("--lookup", args.lookup,
                     "speculative decoding by prompt lookup: the last N (down "
                     "to 1) tokens are looked for earlier in the prompt and "
                     "the output, and what followed them is proposed, >= 1")
          ->type_name("N"),
      1, INT64_MAX, "must be >= 1");
  fm::cli::checkInteger(
      app.add_option("--draft-max", args.draftMax,
                     "most tokens drafted per round, in [1, 1024] (default "
                     "4): the model checks K + 1 positions per pass")
          ->default_val(4),
      1, 1024, "must be in [1, 1024]");
  fm::cli::checkInteger(
      app.add_option("--draft-min", args.draftMin,
                     "a round that drafts fewer tokens decodes one token "
                     "instead, in [0, --draft-max] (default 0)")
          ->default_val(0),
      0, 1024, "must be in [0, 1024]");
  fm::cli::checkReal(
      app.add_option("--draft-p-min", args.draftPMin,
                     "--draft: stop drafting when the draft's most likely "
                     "token has less probability (softmax at temperature 1), "
                     "in [0, 1] (default 0: always --draft-max)")
          ->default_val(0.0f),
      [](double p) { return p >= 0.0 && p <= 1.0; }, "must be in [0, 1]");
  app.add_option("--draft-adapter", args.draftAdapters,
                 "attach a LoRA adapter compiled for the draft (fmc "
                 "compile-adapter --base draft.fmb) to the draft, as "
                 "FILE[:scale]; repeatable (--adapter attaches to the model)")
      ->allow_extra_args(false);
}

std::string speculativeConflicts(const CLI::App &app, const SpeculativeArgs &args) {
  if (!args.draft.empty() && args.lookup > 0)
    return "--draft and --lookup are two drafters: pick one";
  if (args.draft.empty() && app.count("--draft-adapter"))
    return "--draft-adapter is for --draft";
  if (!args.enabled()) {
    for (const char *name : {"--draft-max", "--draft-min", "--draft-p-min"})
      if (app.count(name))
        return std::string(name) + " is for --draft or --lookup";
    return {};
  }
  const char *drafter = args.draft.empty() ? "--lookup" : "--draft";
  if (app.count("--draft-p-min") && args.draft.empty())
    return "--draft-p-min is for --draft (prompt lookup proposes without probabilities)";
  if (args.draftMin > args.draftMax)
    return "--draft-min " + std::to_string(args.draftMin) +
           ": must be at most --draft-max (" + std::to_string(args.draftMax) + ")";
  // What speculative decoding does not do: score, chat turns, images.
  for (const char *name : {"--perplexity", "--score", "--chat",
                           "--chat-file", "--image", "--image-tensor",
                           "--image-tokens-out"})
    if (app.count(name))
      return std::string(drafter) + " generates with --tokens or --prompt: it takes no " +
             name;
  return {};
}

std::string makeDrafting(const SpeculativeArgs &args, const TextArgs &text,
                         const fm::Model &target, float temperature, int topK,
                         float topP, uint64_t seed, bool leader, Drafting *out) {
  out->options.draftMax = args.draftMax;
  out->options.draftMin = args.draftMin;
  out->options.draftPMin = args.draftPMin;
  out->options.prefillChunk = text.prefillChunk;
  if (args.lookup > 0) {
    out->drafter = std::make_unique<fm::LookupDrafter>(target.vocabSize(), args.lookup);
    return {};
  }
  if (std::string e = loadModel(text, args.draft, /*leader=*/false, &out->model); !e.empty())
    return "--draft: " + e;
  if (fm::Status s = fm::checkDraft(target, *out->model); !s)
    return "--draft: " + s.message();
  // The draft runs in this process alone, with its own adapters.
  if (std::string e = makeSession(text, out->model, args.draftAdapters, nullptr,
                                  &out->session);
      !e.empty())
    return "--draft: " + e;
  if (leader)
    std::fprintf(stderr, "fm-run: draft %s (%lld layers, %.1f MB of weights)\n",
                 out->model->name().c_str(),
                 static_cast<long long>(out->model->numLayers()),
                 double(out->model->weightBytes()) / 1e6);
  out->drafter = std::make_unique<fm::ModelDrafter>(
      *out->session, fm::Sampler(temperature, topK, topP, seed + 1), out->options);
  return {};
}

fm::Expected<fm::TokenConstraint::Step> BiasedConstraint::process(float *logits,
                                                                 int64_t vocab) {
  bias_.apply(logits);
  if (!inner_)
    return Step{};
  return inner_->process(logits, vocab);
}

fm::Status BiasedConstraint::accept(int32_t token) {
  return inner_ ? inner_->accept(token) : fm::Status::ok();
}

std::string speculativeJson(const Drafting *drafting, const fm::SpeculativeStats &st) {
  if (!drafting)
    return {};
  auto list = [](const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::string rates = "[";
  for (size_t i = 0; i < st.draftedAt.size(); ++i) {
    char x[32];
    std::snprintf(x, sizeof(x), "%s%.4f", i ? ", " : "",
                  st.draftedAt[i] ? double(st.acceptedAt[i]) / double(st.draftedAt[i]) : 0.0);
    rates += x;
  }
  rates += "]";
  char line[512];
  std::snprintf(line, sizeof(line),
                "\"drafter\": \"%s\", \"drafted\": %lld, \"accepted\": %lld, "
                "\"acceptance_rate\": %.4f, \"target_passes\": %lld, "
                "\"verify_passes\": %lld, \"tokens_per_pass\": %.4f, ",
                drafting->model ? "draft" : "lookup", static_cast<long long>(st.drafted),
                static_cast<long long>(st.accepted), st.acceptanceRate(),
                static_cast<long long>(st.targetPasses), static_cast<long long>(st.rounds),
                st.tokensPerPass());
  return line + std::string("\"acceptance_by_position\": ") + rates +
         ", \"drafted_by_position\": " + list(st.draftedAt) +
         ", \"accepted_by_position\": " + list(st.acceptedAt);
}

} // namespace fmrun
