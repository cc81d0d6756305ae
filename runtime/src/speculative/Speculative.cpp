// fm::generateSpeculative: the rounds of draft, verify and rollback
// (fm/speculative.h). Rank 0 drafts and decides; with several ranks it
// broadcasts the drafts and the tokens taken, and every rank follows.
#include "fm/speculative.h"

#include "base/Clock.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

namespace fm {

namespace {

constexpr float kForbidden = -std::numeric_limits<float>::infinity();

/// What the constraint does to one position: offsets to add to the logits
/// (−infinity: forbidden), a forced token, or the end of the generation.
struct Edit {
  bool stop = false;
  int32_t forced = -1;
  bool any = false; // offsets holds something (else the logits stand)
  std::vector<float> offsets;
};

/// Why a round ended the generation, as broadcast to the other ranks.
enum RoundEnd : int32_t { kGoOn = 0, kMaxTokens, kCallback, kConstraint };

StopReason stopOf(int32_t end) {
  switch (end) {
  case kCallback:
    return StopReason::Callback;
  case kConstraint:
    return StopReason::StopId;
  default:
    return StopReason::MaxTokens;
  }
}

class Rounds {
public:
  Rounds(Session &target, Drafter &drafter, Sampler &sampler,
         const SpeculativeOptions &options, TokenConstraint *constraint,
         const Session::TokenCallback &callback, int64_t maxNewTokens)
      : target_(target), drafter_(drafter), sampler_(sampler), options_(options),
        constraint_(constraint), callback_(callback), max_(maxNewTokens),
        comm_(target.communicator()), leader_(comm_.rank() == 0),
        vocab_(target.model().vocabSize()),
        draftMessage_(static_cast<size_t>(options.draftMax + 1)),
        takenMessage_(static_cast<size_t>(options.draftMax + 3)) {
    result_.stats.draftedAt.assign(static_cast<size_t>(options.draftMax), 0);
    result_.stats.acceptedAt.assign(static_cast<size_t>(options.draftMax), 0);
    feed_.reserve(static_cast<size_t>(options.draftMax + 1));
  }

  Expected<SpeculativeResult> run(const std::vector<int32_t> &prompt);

private:
  /// The constraint's edit of the next position (its state after every
  /// token taken), from process() on zeros.
  Status probe(Edit *edit);
  /// `row` with the edit applied, as the distribution the sampler draws from.
  void distributionAt(const float *row, const Edit &edit, TokenDistribution *d);
  /// Takes `token`: into the output and the context, to the constraint and
  /// the callback. kGoOn, or why the generation ends with it.
  Expected<int32_t> take(int32_t token);
  /// One round over `rows` (drafted + 1 rows of target logits: one per
  /// drafted token, then the next): rank 0 decides position by position and
  /// broadcasts the tokens taken; kGoOn or why the generation ended.
  Expected<int32_t> decide(const Logits &rows, int64_t drafted);
  /// Rank 0's acceptance at drafted position i: the token taken, and
  /// whether it is the draft's.
  int32_t judge(const float *row, const Edit &edit, int64_t i, bool *accepted);
  void keepRow(const float *row) {
    if (options_.keepLogits)
      result_.logits.insert(result_.logits.end(), row, row + vocab_);
  }
  std::string where() const {
    return target_.model().name() + ": speculative decoding: ";
  }

  Session &target_;
  Drafter &drafter_;
  Sampler &sampler_;
  const SpeculativeOptions &options_;
  TokenConstraint *constraint_;
  const Session::TokenCallback &callback_;
  const int64_t max_;
  Communicator &comm_;
  const bool leader_;
  const int64_t vocab_;

  SpeculativeResult result_;
  std::vector<int32_t> context_; // the prompt and every token taken
  Draft draft_;
  std::vector<int32_t> feed_; // [last, d0 … dk-1]
  std::vector<int32_t> draftMessage_, takenMessage_;
  Edit edit_, nextEdit_;
  std::vector<float> edited_;
  TokenDistribution targetP_, residual_;
};

Status Rounds::probe(Edit *edit) {
  edit->stop = false;
  edit->forced = -1;
  edit->any = false;
  if (!constraint_)
    return Status::ok();
  edit->offsets.assign(static_cast<size_t>(vocab_), 0.0f);
  Expected<TokenConstraint::Step> step =
      constraint_->process(edit->offsets.data(), vocab_);
  if (!step)
    return step.status();
  edit->stop = step->stop;
  edit->forced = step->forced;
  if (edit->stop)
    return Status::ok();
  if (edit->forced >= 0) {
    if (edit->forced >= vocab_)
      return Status::error(where() + "the constraint forced token " +
                           std::to_string(edit->forced) +
                           ", out of range (vocab " + std::to_string(vocab_) +
                           ")");
    std::fill(edit->offsets.begin(), edit->offsets.end(), kForbidden);
    edit->offsets[static_cast<size_t>(edit->forced)] = 0.0f;
  }
  bool open = false;
  for (float x : edit->offsets) {
    edit->any = edit->any || x != 0.0f;
    open = open || x > kForbidden;
  }
  // The sampler needs one id to pick (all −inf would give NaNs).
  if (!open)
    return Status::error(target_.model().name() +
                         ": the logits processor forbade every id at "
                         "generated token " +
                         std::to_string(result_.tokens.size()));
  return Status::ok();
}

void Rounds::distributionAt(const float *row, const Edit &edit,
                            TokenDistribution *d) {
  if (edit.forced >= 0) {
    d->setPoint(edit.forced, vocab_);
    return;
  }
  const float *from = row;
  if (edit.any) {
    edited_.resize(static_cast<size_t>(vocab_));
    for (int64_t i = 0; i < vocab_; ++i)
      edited_[i] = row[i] + edit.offsets[i];
    from = edited_.data();
  }
  sampler_.distribution(from, vocab_, d);
}

Expected<int32_t> Rounds::take(int32_t token) {
  result_.tokens.push_back(token);
  context_.push_back(token);
  if (constraint_)
    FM_RETURN_IF_ERROR(constraint_->accept(token));
  if (callback_ && !callback_(token))
    return int32_t(kCallback);
  if (constraint_ && constraint_->finished())
    return int32_t(kConstraint);
  if (static_cast<int64_t>(result_.tokens.size()) >= max_)
    return int32_t(kMaxTokens);
  return int32_t(kGoOn);
}

int32_t Rounds::judge(const float *row, const Edit &edit, int64_t i,
                      bool *accepted) {
  const int32_t d = draft_.tokens[i];
  const TokenDistribution &q = draft_.from[i];
  distributionAt(row, edit, &targetP_);
  const double p = targetP_.probability(d), qd = q.probability(d);
  // min(1, p / q): no random number where the answer is sure (greedy).
  *accepted = p >= qd || (p > 0.0 && sampler_.uniform() * qd < p);
  if (*accepted) {
    result_.stats.acceptedAt[i] += 1;
    result_.stats.accepted += 1;
    return d;
  }
  residual_.setResidual(targetP_, q);
  return sampler_.draw(residual_);
}

Expected<int32_t> Rounds::decide(const Logits &rows, int64_t drafted) {
  int32_t *taken = takenMessage_.data() + 2;
  int32_t count = 0, end = kGoOn;
  if (!leader_) {
    // Rank 0 decided: follow the tokens it took (the constraint and the
    // callback see them here too), and end as it did.
    FM_RETURN_IF_ERROR(comm_.broadcast(takenMessage_.data(),
                                       static_cast<int64_t>(takenMessage_.size()), 0));
    count = takenMessage_[0];
    for (int32_t i = 0; i < count; ++i) {
      if (i > 0)
        FM_RETURN_IF_ERROR(probe(&nextEdit_));
      keepRow(rows.row(i));
      Expected<int32_t> after = take(taken[i]);
      if (!after)
        return after.status();
    }
    return takenMessage_[1];
  }
  // Position by position: the constraint's state at position i is after
  // the tokens taken before it, so each position is judged, then taken.
  for (int64_t i = 0; i <= drafted; ++i) {
    Edit &edit = i == 0 ? edit_ : nextEdit_;
    if (i > 0)
      FM_RETURN_IF_ERROR(probe(&edit));
    if (edit.stop) {
      end = kConstraint;
      break;
    }
    bool accepted = false;
    int32_t token;
    if (i < drafted) {
      token = judge(rows.row(i), edit, i, &accepted);
    } else {
      distributionAt(rows.row(i), edit, &targetP_);
      token = sampler_.draw(targetP_);
    }
    taken[count++] = token;
    keepRow(rows.row(i));
    Expected<int32_t> after = take(token);
    if (!after)
      return after.status();
    end = *after;
    if (end != kGoOn || !accepted)
      break;
  }
  if (comm_.size() > 1) {
    takenMessage_[0] = count;
    takenMessage_[1] = end;
    FM_RETURN_IF_ERROR(comm_.broadcast(takenMessage_.data(),
                                       static_cast<int64_t>(takenMessage_.size()), 0));
  }
  return end;
}

Expected<SpeculativeResult> Rounds::run(const std::vector<int32_t> &prompt) {
  const double firstRun0 = target_.stats().firstRunMs;
  auto t0 = std::chrono::steady_clock::now();
  Expected<Logits> first =
      target_.prefill(prompt.data(), static_cast<int64_t>(prompt.size()),
                      /*allLogits=*/false, options_.prefillChunk);
  if (!first)
    return first.status();
  result_.firstRunMs = target_.stats().firstRunMs - firstRun0;
  result_.prefillMs = msSince(t0) - result_.firstRunMs;
  if (max_ == 0) {
    keepRow(first->last()); // the row after the prompt, as plain decoding keeps it
    return std::move(result_);
  }
  auto t1 = std::chrono::steady_clock::now();
  context_ = prompt;

  // The first token, from the prompt's last row.
  FM_RETURN_IF_ERROR(probe(&edit_));
  Expected<int32_t> end = decide(*first, 0);
  if (!end)
    return end.status();

  const int64_t capacity = target_.model().contextLength();
  const bool several = comm_.size() > 1;
  SpeculativeStats &st = result_.stats;
  while (*end == kGoOn) {
    // The target holds the context but its last token.
    const int64_t at = static_cast<int64_t>(context_.size()) - 1;
    if (capacity > 0 && at >= capacity) {
      result_.stop = StopReason::ContextFull;
      break;
    }
    FM_RETURN_IF_ERROR(probe(&edit_));
    if (edit_.stop) {
      *end = kConstraint;
      break;
    }
    // Drafts beyond the tokens still wanted, or the room left, are wasted.
    int64_t k = std::min<int64_t>(options_.draftMax,
                                  max_ - static_cast<int64_t>(result_.tokens.size()) - 1);
    if (capacity > 0)
      k = std::min<int64_t>(k, capacity - at - 1);
    int64_t drafted = 0;
    if (leader_) {
      draft_.tokens.clear();
      if (k > 0)
        FM_RETURN_IF_ERROR(drafter_.draft(context_, k,
                                          edit_.any ? edit_.offsets.data() : nullptr,
                                          &draft_));
      drafted = std::min<int64_t>(static_cast<int64_t>(draft_.tokens.size()), k);
      if (drafted < options_.draftMin)
        drafted = 0;
      for (int64_t i = 0; i < drafted; ++i) {
        const int32_t d = draft_.tokens[i];
        if (d < 0 || d >= vocab_ || static_cast<int64_t>(draft_.from.size()) <= i ||
            !(draft_.from[i].probability(d) > 0.0))
          return Status::error(where() + "the drafter proposed token " +
                               std::to_string(d) + " at draft position " +
                               std::to_string(i) +
                               " without a distribution that gives it a "
                               "probability (vocab " +
                               std::to_string(vocab_) + ")");
      }
      draftMessage_[0] = static_cast<int32_t>(drafted);
      std::copy(draft_.tokens.begin(), draft_.tokens.begin() + drafted,
                draftMessage_.begin() + 1);
    }
    if (several) {
      FM_RETURN_IF_ERROR(comm_.broadcast(draftMessage_.data(),
                                         static_cast<int64_t>(draftMessage_.size()), 0));
      drafted = draftMessage_[0];
    }

    feed_.assign(1, context_.back());
    feed_.insert(feed_.end(), draftMessage_.begin() + 1,
                 draftMessage_.begin() + 1 + drafted);
    Logits rows;
    if (drafted == 0) {
      Expected<const float *> row = target_.decode(feed_[0]);
      if (!row)
        return row.status();
      rows.data = *row;
      rows.rows = 1;
      rows.vocab = vocab_;
    } else {
      Expected<Logits> verified =
          target_.prefill(feed_.data(), drafted + 1, /*allLogits=*/true);
      if (!verified)
        return verified.status();
      rows = *verified;
      st.rounds += 1;
      st.drafted += drafted;
      for (int64_t i = 0; i < drafted; ++i)
        st.draftedAt[i] += 1;
    }
    st.targetPasses += 1;
    end = decide(rows, drafted);
    if (!end)
      return end.status();
    // Forget the rejected positions: the target keeps the context but its
    // last token (which the next round feeds).
    const int64_t keep = static_cast<int64_t>(context_.size()) - 1;
    if (target_.position() > keep)
      FM_RETURN_IF_ERROR(target_.keepPrefix(keep));
  }
  if (*end != kGoOn)
    result_.stop = stopOf(*end);
  // The row after the last token, as plain decoding computes it.
  if (options_.keepLogits && *end == kMaxTokens &&
      (capacity == 0 || static_cast<int64_t>(context_.size()) <= capacity)) {
    Expected<const float *> row = target_.decode(context_.back());
    if (!row)
      return row.status();
    keepRow(*row);
  }
  result_.decodeMs = msSince(t1);
  return std::move(result_);
}

} // namespace

Expected<SpeculativeResult>
generateSpeculative(Session &target, Drafter &drafter,
                    const std::vector<int32_t> &prompt, int64_t maxNewTokens,
                    Sampler &sampler, const SpeculativeOptions &options,
                    TokenConstraint *constraint,
                    const Session::TokenCallback &callback) {
  FM_RETURN_IF_ERROR(target.status());
  const std::string name = target.model().name() + ": speculative decoding: ";
  if (prompt.empty())
    return Status::error(name + "the prompt is empty (no tokens)");
  if (maxNewTokens < 0)
    return Status::error(name + "maxNewTokens " + std::to_string(maxNewTokens) +
                         " is negative");
  if (options.draftMax < 1)
    return Status::error(name + "draftMax " + std::to_string(options.draftMax) +
                         " must be >= 1");
  if (options.draftMin < 0 || options.draftMin > options.draftMax)
    return Status::error(name + "draftMin " + std::to_string(options.draftMin) +
                         " must be in [0, draftMax = " +
                         std::to_string(options.draftMax) + "]");
  if (!(options.draftPMin >= 0.0f && options.draftPMin <= 1.0f))
    return Status::error(name + "draftPMin " + std::to_string(options.draftPMin) +
                         " must be in [0, 1]");
  if (options.prefillChunk < 0)
    return Status::error(name + "prefill chunk " +
                         std::to_string(options.prefillChunk) + " is negative");
  Rounds rounds(target, drafter, sampler, options, constraint, callback,
                maxNewTokens);
  return rounds.run(prompt);
}

} // namespace fm
