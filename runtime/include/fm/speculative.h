// Speculative decoding: a drafter (a small draft model, or prompt lookup)
// proposes the next tokens, the target checks all of them in one pass and
// keeps the accepted prefix, so that decode reads the target's weights once
// per several tokens (docs/speculative.md).
//
//   fm::Session target(targetModel), draft(draftModel);
//   if (fm::Status s = fm::checkDraft(*targetModel, *draftModel); !s) ...
//   fm::Sampler sampler(0.8f, 40, 0.95f, seed);
//   fm::ModelDrafter drafter(draft, fm::Sampler(0.8f, 40, 0.95f, seed + 1));
//   fm::SpeculativeOptions options;
//   options.draftMax = 4;
//   auto r = fm::generateSpeculative(target, drafter, prompt, 64, sampler,
//                                    options);
//   printf("%lld of %lld drafted tokens accepted\n", r->stats.accepted,
//          r->stats.drafted);
//
// Each round the drafter proposes d0 … dk-1 after the last token taken; the
// target runs [last, d0 … dk-1] as one (k + 1)-row prefill with the logits of
// every row; position i takes d_i with probability min(1, p(d_i) / q(d_i)),
// p the target's distribution there and q the one d_i was drawn from, both
// as fm::Sampler defines them (temperature, top-k, top-p); the first
// rejected position draws from normalize(max(0, p − q)) instead, and when
// all are taken the last row gives one more token. The output is
// distributed exactly as the target's own sampling; greedy, it is the
// target's greedy output token for token (up to the rounding by which the
// target's k + 1-row pass differs from its 1-row pass). Both sessions
// forget the rejected positions with keepPrefix.
#pragma once

#include "fm/logits_processor.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/status.h"

#include <cstdint>
#include <vector>

namespace fm {

struct SpeculativeOptions {
  /// The most tokens drafted per round (k), >= 1: the target checks k + 1
  /// positions in one pass (llama.cpp's --draft-max).
  int64_t draftMax = 4;
  /// A round that drafts fewer tokens than this is not verified as a draft:
  /// the target decodes the one next token alone (llama.cpp's --draft-min);
  /// 0 ... draftMax.
  int64_t draftMin = 0;
  /// A draft model stops drafting when its most likely token has a smaller
  /// probability than this under the softmax of its logits (temperature 1,
  /// before top-k and top-p, so that it means the same when greedy; the
  /// constraint's edit applied), in [0, 1] (llama.cpp's --draft-p-min).
  float draftPMin = 0.0f;
  /// Prompt tokens per prefill call, of the target and of a draft model
  /// (Session::prefill's `chunk`; 0: the program's max rows).
  int64_t prefillChunk = 0;
  /// Keep the target's logits row of every token taken
  /// (SpeculativeResult::logits), as the verification passes computed them
  /// after the rollbacks before them, and, when the generation ran to
  /// maxNewTokens with room left, the row after the last token, which is
  /// then fed (with maxNewTokens 0: the prompt's last row): fm-run
  /// --logits-out's rows, to compare with plain decoding.
  bool keepLogits = false;
};

/// What speculative decoding did (as counted on rank 0, which drafts).
struct SpeculativeStats {
  /// Tokens proposed by the drafter and verified, and of them those taken.
  int64_t drafted = 0, accepted = 0;
  /// Verification passes (k + 1 rows, k >= 1).
  int64_t rounds = 0;
  /// Target runs after the prompt: the verification passes and the
  /// single-token decodes of rounds with too short a draft.
  int64_t targetPasses = 0;
  /// By position in the draft (0 ... draftMax − 1): the verified drafts
  /// that had a token there, and of them those whose token there was
  /// accepted (with the tokens before it). acceptedAt[i] / draftedAt[i] is
  /// the acceptance rate at position i; with every draft of draftMax
  /// tokens, acceptedAt[i] / acceptedAt[i − 1] is the rate given that the
  /// position was reached.
  std::vector<int64_t> draftedAt, acceptedAt;

  double acceptanceRate() const {
    return drafted > 0 ? double(accepted) / double(drafted) : 0.0;
  }
  /// Tokens taken per target pass (accepted drafts plus the one the target
  /// adds each pass).
  double tokensPerPass() const {
    return targetPasses > 0 ? double(accepted + targetPasses) / double(targetPasses)
                            : 0.0;
  }
};

/// The tokens a drafter proposes, with the distribution each was drawn
/// from (the q of the acceptance rule).
struct Draft {
  std::vector<int32_t> tokens;
  /// from[i] for tokens[i] (a point mass for a proposal made without
  /// sampling); at least tokens.size() entries, reused between rounds.
  std::vector<TokenDistribution> from;
};

/// Proposes the tokens that may follow a context. Called on rank 0 only.
class Drafter {
public:
  virtual ~Drafter() = default;
  /// Up to `max` tokens to follow `context` (the prompt and every token
  /// taken so far, the last not yet fed to the target) into `out`.
  /// `firstEdit`, when not null, holds vocab offsets the constraint puts on
  /// the logits of the first drafted position (−infinity: forbidden).
  virtual Status draft(const std::vector<int32_t> &context, int64_t max,
                       const float *firstEdit, Draft *out) = 0;
};

/// Whether `draft` can draft for `target`: the same vocabulary and
/// tokenizer (checkSameTokens), a decoder, and one rank (a draft runs on
/// rank 0 alone). The error names both files.
Status checkDraft(const Model &target, const Model &draft);

/// Drafts with a small model of the same vocabulary: its own session, with
/// its own sampler (the same temperature, top-k and top-p as the target's
/// make the best drafts; any settings keep the output exact).
class ModelDrafter final : public Drafter {
public:
  /// `draft` must outlive the drafter; it is rewound to the context each
  /// round (keepPrefix), and is the drafter's alone.
  ModelDrafter(Session &draft, Sampler sampler,
               const SpeculativeOptions &options = {});
  Status draft(const std::vector<int32_t> &context, int64_t max,
               const float *firstEdit, Draft *out) override;

private:
  Session &session_;
  Sampler sampler_;
  float pMin_;
  int64_t chunk_;
  std::vector<float> edited_;
};

/// Prompt lookup (n-gram drafting, llama.cpp's lookup decoding and Hugging
/// Face's prompt_lookup_num_tokens): the last n tokens of the context, for
/// n from ngramMax down to ngramMin, are looked for earlier in the context;
/// at the latest match, the tokens that followed it are proposed (point
/// masses: no model runs).
class LookupDrafter final : public Drafter {
public:
  /// `vocab`: the target's (Model::vocabSize). 1 <= ngramMin <= ngramMax.
  LookupDrafter(int64_t vocab, int64_t ngramMax, int64_t ngramMin = 1);
  Status draft(const std::vector<int32_t> &context, int64_t max,
               const float *firstEdit, Draft *out) override;

private:
  int64_t vocab_, ngramMax_, ngramMin_;
};

/// What generateSpeculative made.
struct SpeculativeResult {
  /// The tokens taken, in order; the session holds all but the last in its
  /// context (as Session::generate leaves it).
  std::vector<int32_t> tokens;
  /// MaxTokens, ContextFull, Callback; StopId when the constraint finished
  /// or said stop.
  StopReason stop = StopReason::MaxTokens;
  SpeculativeStats stats;
  /// Wall time of the prompt's prefill (without firstRunMs: the one-time
  /// GEMM repack) and of everything after it.
  double prefillMs = 0.0, decodeMs = 0.0, firstRunMs = 0.0;
  /// With SpeculativeOptions::keepLogits: [rows][vocab] raw target logits
  /// (before the constraint), row r the one token r was taken from.
  std::vector<float> logits;
};

/// Prefills `prompt` into `target` (at position()), takes its first token
/// from the target, then up to `maxNewTokens` in all in speculative rounds.
/// `constraint` (optional) sees every position in order, as in
/// Session::generate: its process() runs once per position on a vector of
/// zeros and what it writes there (−infinity for a forbidden id, an offset
/// for a biased one; a forced token forbids all others) is added to the
/// target's logits and to the draft's at the first drafted position, so it
/// must not depend on the logits' values; accept() gets each token taken.
/// `callback` gets each token taken (return false to stop after it). With
/// several ranks every rank calls this with the same arguments; rank 0
/// drafts and decides, and broadcasts the drafts and the decisions, and
/// the constraint and callback run on every rank. Errors name the target
/// (or the draft) and what went wrong.
Expected<SpeculativeResult>
generateSpeculative(Session &target, Drafter &drafter,
                    const std::vector<int32_t> &prompt, int64_t maxNewTokens,
                    Sampler &sampler, const SpeculativeOptions &options = {},
                    TokenConstraint *constraint = nullptr,
                    const Session::TokenCallback &callback = {});

/// Session::generateText with speculative decoding: the same stop ids,
/// stop strings, streamed text and options (options.logitsProcessor acts
/// as `constraint` above: an offset per id, applied to both models;
/// options.prefillChunk is the target's prompt chunk, in place of
/// speculative.prefillChunk). `stats` (optional) receives what the drafting
/// did; Generation::decodeTokens counts the tokens taken after the first.
Expected<Generation> generateTextSpeculative(
    Session &target, Drafter &drafter, const std::vector<int32_t> &prompt,
    Sampler &sampler, const GenerateOptions &options,
    const SpeculativeOptions &speculative, const TextCallback &callback = {},
    SpeculativeStats *stats = nullptr);

} // namespace fm
