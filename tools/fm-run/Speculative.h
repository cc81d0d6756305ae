// fm-run --draft FILE / --lookup N: speculative decoding (fm/speculative.h)
// for --tokens and --prompt, its options and its --stats fields.
#pragma once

#include "Guided.h"
#include "LogitBias.h"

#include "fm/communicator.h"
#include "fm/runtime.h"
#include "fm/speculative.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fmrun {

struct TextArgs;

struct SpeculativeArgs {
  std::string draft;      // --draft FILE.fmb
  int64_t lookup = 0;     // --lookup N: prompt lookup with n-grams up to N
  int64_t draftMax = 4;   // --draft-max K
  int64_t draftMin = 0;   // --draft-min M
  float draftPMin = 0.0f; // --draft-p-min P
  std::vector<std::string> draftAdapters; // --draft-adapter FILE[:scale]

  bool enabled() const { return !draft.empty() || lookup > 0; }
};

/// Adds --draft, --lookup, --draft-max, --draft-min, --draft-p-min,
/// --draft-adapter.
void addSpeculativeOptions(CLI::App &app, SpeculativeArgs &args);

/// The options that do not go together with a drafter, and the drafter
/// options without one: an error message, or "".
std::string speculativeConflicts(const CLI::App &app, const SpeculativeArgs &args);

/// A drafter for the target `target`: --draft loads the draft artifact with
/// the load options of `text` (checked against the target: fm::checkDraft)
/// and builds its session (--threads, --activations, --draft-adapter; one
/// process), sampling with the target's settings and seed + 1; --lookup
/// needs nothing.
struct Drafting {
  std::shared_ptr<fm::Model> model; // --draft
  std::unique_ptr<fm::Session> session;
  std::unique_ptr<fm::Drafter> drafter;
  fm::SpeculativeOptions options;
};
std::string makeDrafting(const SpeculativeArgs &args, const TextArgs &text,
                         const fm::Model &target, float temperature, int topK,
                         float topP, uint64_t seed, bool leader, Drafting *out);

/// --logit-bias, then the guided constraint (either may be absent), as the
/// one constraint that fm::generateSpeculative applies to every position.
class BiasedConstraint final : public fm::TokenConstraint {
public:
  BiasedConstraint(const LogitBias &bias, fm::TokenConstraint *inner)
      : bias_(bias), inner_(inner) {}
  fm::Expected<Step> process(float *logits, int64_t vocab) override;
  fm::Status accept(int32_t token) override;
  bool finished() const override { return inner_ && inner_->finished(); }

private:
  const LogitBias &bias_;
  fm::TokenConstraint *inner_;
};

/// The --stats fields of speculative decoding (`"drafted": …`, no braces),
/// or "" without a drafter.
std::string speculativeJson(const Drafting *drafting, const fm::SpeculativeStats &stats);

} // namespace fmrun
