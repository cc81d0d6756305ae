// fm-run's guided generation (see Guided.h).
#include "Guided.h"

#include "fm/guided_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace fmrun {

namespace {

fm::Expected<std::string> readFile(const std::string &path, const char *option) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fm::Status::error(std::string(option) + ": cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// End-of-turn tokens of common chat formats: generation may end at any of them.
const char *const kEndTokens[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>",
                                  "<|end_of_text|>", "</s>", "<end_of_turn>", "<|end|>"};

} // namespace

void addGuidedOptions(CLI::App &app, GuidedArgs &args) {
  app.add_option("--tokenizer", args.tokenizer,
                 "the model's tokenizer.json (or a directory with it and "
                 "tokenizer_config.json): print the generated text instead of ids; needed by "
                 "the guided options");
  auto *schema = app.add_option("--json-schema", args.jsonSchema,
                                "constrain the output to JSON valid against this JSON Schema "
                                "file (written without whitespace, properties in schema order)");
  auto *gbnf = app.add_option("--grammar", args.grammar,
                              "constrain the output to this GBNF grammar file (llama.cpp's "
                              "syntax, start rule 'root')");
  auto *regex = app.add_option("--regex", args.regex,
                               "constrain the output to match this ECMA-262 regex as a whole");
  auto *tools = app.add_option("--tools", args.tools,
                               "an OpenAI-style tools list (JSON): the model writes text (streamed "
                               "by --prompt/--chat), then possibly one call, printed as one line "
                               "{\"name\": ..., \"arguments\": {...}}");
  schema->excludes(gbnf)->excludes(regex)->excludes(tools);
  gbnf->excludes(regex)->excludes(tools);
  regex->excludes(tools);
  app.add_option("--tool-choice", args.toolChoice,
                 "with --tools: auto (text until the model opens a call, then the call is "
                 "constrained), required (a call from the first token), none (text only)")
      ->check(CLI::IsMember({"auto", "required", "none"}))
      ->default_str("auto")
      ->needs(tools); // alone it would change nothing
  app.add_option("--eos", args.eos,
                 "end-of-sequence token (repeatable; default: the tokenizer's eos_token and "
                 "the end-of-turn tokens of common chat formats it has)");
  app.footer("Exit status: 0 done; 1 error; " + std::to_string(kIncomplete) +
             ": generation stopped (--max-new-tokens or a full context) before the "
             "--json-schema/--grammar/--regex/--tools output was complete (what was generated "
             "is printed).");
}

namespace {

bool isConstrained(const GuidedArgs &args) {
  return !args.jsonSchema.empty() || !args.grammar.empty() || !args.regex.empty() ||
         !args.tools.empty();
}

// The ids of the --eos tokens, added to `eos` (no repeats).
fm::Status addEos(const GuidedArgs &args, const fm::Tokenizer &t, const std::string &name,
                  std::vector<int32_t> *eos) {
  for (const std::string &e : args.eos) {
    auto id = t.tokenToId(e);
    if (!id)
      return fm::Status::error("--eos: '" + e + "' is not a token of " + name);
    if (std::find(eos->begin(), eos->end(), *id) == eos->end())
      eos->push_back(*id);
  }
  return fm::Status::ok();
}

} // namespace

fm::Expected<std::unique_ptr<Guided>> Guided::create(const GuidedArgs &args,
                                                     int64_t modelVocab) {
  const bool constrained = isConstrained(args);
  if (args.tokenizer.empty()) {
    if (constrained)
      return fm::Status::error("--json-schema, --grammar, --regex and --tools need --tokenizer "
                               "(the model's tokenizer.json)");
    return std::unique_ptr<Guided>();
  }
  auto g = std::unique_ptr<Guided>(new Guided);
  auto tok = fm::Tokenizer::open(args.tokenizer);
  if (!tok)
    return tok.status();
  g->tokenizer_ = *tok;
  const fm::Tokenizer &t = g->tokenizer_;
  if (int64_t(t.vocabSize()) > modelVocab)
    return fm::Status::error(args.tokenizer + ": the tokenizer has " +
                             std::to_string(t.vocabSize()) + " ids but the model only " +
                             std::to_string(modelVocab) + " logits");

  // End-of-sequence ids.
  if (!args.eos.empty()) {
    if (fm::Status s = addEos(args, t, args.tokenizer, &g->eos_); !s)
      return s;
  } else {
    if (auto id = t.eosId())
      g->eos_.push_back(*id);
    for (const char *name : kEndTokens)
      if (auto id = t.tokenToId(name))
        if (std::find(g->eos_.begin(), g->eos_.end(), *id) == g->eos_.end())
          g->eos_.push_back(*id);
  }
  if (fm::Status s = g->buildConstraint(args, modelVocab); !s)
    return s;
  return g;
}

fm::Expected<std::unique_ptr<Guided>> Guided::forText(const GuidedArgs &args,
                                                      const fm::Tokenizer &tokenizer,
                                                      int64_t modelVocab,
                                                      const std::vector<int32_t> &stopIds) {
  if (!args.tokenizer.empty())
    return fm::Status::error("--tokenizer is for --tokens: --prompt and --chat use the "
                             "tokenizer the artifact embeds");
  const bool constrained =
      isConstrained(args) && !(!args.tools.empty() && args.toolChoice == "none");
  if (!constrained && args.eos.empty())
    return std::unique_ptr<Guided>();
  auto g = std::unique_ptr<Guided>(new Guided);
  g->tokenizer_ = tokenizer;
  g->eos_ = stopIds;
  if (fm::Status s = addEos(args, tokenizer, "the artifact's tokenizer", &g->eos_); !s)
    return s;
  if (fm::Status s = g->buildConstraint(args, modelVocab); !s)
    return s;
  return g;
}

fm::Status Guided::buildConstraint(const GuidedArgs &args, int64_t modelVocab) {
  if (!isConstrained(args) || (!args.tools.empty() && args.toolChoice == "none"))
    return fm::Status::ok(); // text only
  const fm::Tokenizer &t = tokenizer_;
  fm::Vocabulary vocab = fm::grammarVocabulary(t, modelVocab, eos_);

  fm::Expected<fm::Grammar> grammar = fm::Status::error("no grammar");
  fm::ToolSet toolSet;
  if (!args.jsonSchema.empty()) {
    auto text = readFile(args.jsonSchema, "--json-schema");
    if (!text)
      return text.status();
    grammar = fm::Grammar::fromJsonSchema(*text);
    if (!grammar)
      return fm::Status::error(args.jsonSchema + ": " + grammar.message());
  } else if (!args.grammar.empty()) {
    auto text = readFile(args.grammar, "--grammar");
    if (!text)
      return text.status();
    grammar = fm::Grammar::fromGbnf(*text);
    if (!grammar)
      return fm::Status::error(args.grammar + ": " + grammar.message());
  } else if (!args.regex.empty()) {
    grammar = fm::Grammar::fromRegex(args.regex);
    if (!grammar)
      return fm::Status::error("--regex: " + grammar.message());
  } else {
    auto text = readFile(args.tools, "--tools");
    if (!text)
      return text.status();
    auto set = fm::parseTools(*text, args.tools);
    if (!set)
      return set.status();
    toolSet = std::move(*set);
    grammar = fm::Grammar::fromJsonSchema(toolSet.callSchema);
    if (!grammar)
      return fm::Status::error(fm::toolSchemaMessage(toolSet, args.tools, grammar.message()));
  }
  if (grammar->isEmpty())
    return fm::Status::error("the grammar admits no text at all");
  auto masker = fm::TokenMasker::create(*grammar, std::move(vocab));
  if (!masker)
    return masker.status();
  masker_ = std::make_unique<fm::TokenMasker>(std::move(*masker));

  if (!args.tools.empty()) {
    // How the chat template opens a call: Qwen's <tool_call> marker, else bare JSON.
    auto syntax = fm::toolCallSyntax(t);
    if (!syntax)
      return syntax.status();
    syntax_ = std::move(*syntax);
    choice_ = args.toolChoice == "required" ? fm::ToolChoice::Required : fm::ToolChoice::Auto;
    isTools_ = true;
  }
  restart();
  return fm::Status::ok();
}

void Guided::restart() {
  if (!masker_)
    return;
  if (isTools_) {
    tools_ = std::make_unique<fm::ToolCallDecoder>(*masker_, syntax_, choice_);
    processor_ = tools_.get();
  } else {
    decoder_ = std::make_unique<fm::GuidedDecoder>(*masker_);
    processor_ = decoder_.get();
  }
}

fm::Expected<int32_t> Guided::next(fm::Session &session, fm::Sampler &sampler,
                                   const float *logits, bool *stop) {
  *stop = false;
  if (!processor_) {
    auto token = session.sample(sampler, logits);
    if (token && std::find(eos_.begin(), eos_.end(), *token) != eos_.end())
      textOnlyDone_ = true;
    return token;
  }
  const int64_t vocab = session.model().vocabSize();
  masked_.assign(logits, logits + vocab);
  auto step = processor_->process(masked_.data(), vocab);
  if (!step)
    return step.status();
  if (step->stop) {
    *stop = true;
    return -1;
  }
  int32_t token = step->forced;
  if (token < 0) {
    auto sampled = session.sample(sampler, masked_.data());
    if (!sampled)
      return sampled.status();
    token = *sampled;
  }
  if (fm::Status s = processor_->accept(token); !s)
    return s;
  return token;
}

bool Guided::finished() const { return processor_ ? processor_->finished() : textOnlyDone_; }

Guided::Output Guided::output(const std::vector<int32_t> &generated) const {
  Output out;
  if (tools_ && tools_->inCall()) {
    out.text = tools_->callText();
    out.complete = tools_->callComplete();
  } else if (decoder_) {
    out.text = decoder_->text();
    out.complete = decoder_->isComplete();
  } else if (tools_) {
    out.text = tools_->freeText(); // a call was never opened: the free text
  } else {
    auto text = tokenizer_.decode(generated, /*skipSpecial=*/true);
    out.text = text ? *text : "";
  }
  return out;
}

int Guided::noteIfIncomplete(const Output &out, size_t tokens) const {
  if (out.complete)
    return 0;
  std::fprintf(stderr, "fm-run: note: generation stopped after %zu tokens before the %s was "
                       "complete (exit status %d)\n",
               tokens, tools_ ? "tool call" : "grammar", kIncomplete);
  return kIncomplete;
}

int Guided::print(const std::vector<int32_t> &generated) const {
  const Output out = output(generated);
  std::printf("%s\n", out.text.c_str());
  std::fflush(stdout);
  return noteIfIncomplete(out, generated.size());
}

} // namespace fmrun
