// The C API's handles (fm/fm.h): each wraps the C++ API's object and keeps
// what it hands out (strings, arrays) alive for as long as fm.h promises.
#pragma once

#include "capi/Handles.h"

#include "fm/chat_template.h"
#include "fm/conversation.h"
#include "fm/guided.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/speculative.h"
#include "fm/tokenizer.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct fm_model : fm::capi::Handle {
  fm_model() : Handle(fm::capi::Kind::Model) {}
  std::shared_ptr<fm::Model> model;
};

struct fm_sampler : fm::capi::Handle {
  explicit fm_sampler(const fm_sampler_params &p)
      : Handle(fm::capi::Kind::Sampler),
        sampler(p.temperature, p.top_k, p.top_p, p.seed) {}
  fm::Sampler sampler;
};

struct fm_tokenizer : fm::capi::Handle {
  explicit fm_tokenizer(fm::Tokenizer t)
      : Handle(fm::capi::Kind::Tokenizer), tokenizer(std::move(t)) {}
  fm::Tokenizer tokenizer;
  /// Its chat template, compiled on first use (shared by threads).
  std::once_flag templateOnce;
  std::optional<fm::Expected<fm::ChatTemplate>> chatTemplate;
};

struct fm_adapter : fm::capi::Handle {
  fm_adapter() : Handle(fm::capi::Kind::Adapter) {}
  std::shared_ptr<fm::Adapter> adapter;
};

/// A compiled constraint: the token masks of its grammar over the model's
/// tokenizer (shared by the generations that use it), and how to start one
/// generation's decoder.
struct fm_constraint : fm::capi::Handle {
  fm_constraint() : Handle(fm::capi::Kind::Constraint) {}
  std::shared_ptr<fm::Model> model;
  std::optional<fm::TokenMasker> masker;
  std::vector<int32_t> eos;
  bool tools = false;
  fm::ToolCallSyntax syntax;
  fm::ToolChoice choice = fm::ToolChoice::Auto;
};

struct fm_session : fm::capi::Handle {
  fm_session() : Handle(fm::capi::Kind::Session) {}
  std::shared_ptr<fm::Model> model;
  std::unique_ptr<fm::Session> session;
  /// fm_session_cancel's request, from any thread.
  std::atomic<bool> cancel{false};
  /// fm_session_chat_start's conversation (over *session).
  std::optional<fm::Conversation> chat;
  /// fm_session_set_speculative: the drafter's settings (a draft session,
  /// checked live at each generation, or prompt lookup), and the last
  /// speculative generation's counts for fm_session_stats_json.
  struct Speculative {
    fm_session *draft = nullptr;
    fm::Sampler draftSampler{0.0f, 0, 1.0f, 0}; // greedy
    fm::SpeculativeOptions options;
    int64_t lookupNgram = 3;
  };
  std::optional<Speculative> speculative;
  std::optional<fm::SpeculativeStats> speculativeStats;
  /// What the last call handed out (valid until the next call).
  std::vector<int32_t> tokens, prompt, context;
  std::string text, constrained;
  mutable std::string statsJson;
};

namespace fm::capi {

/// What a load made (fm::Model::load, fm::Adapter::load), as a new handle
/// in *out; or the load's error, FM_STATUS_LOAD_FAILED.
template <typename H, typename T>
fm_status publishLoaded(Call &call, Expected<std::shared_ptr<T>> loaded,
                        std::shared_ptr<T> H::*field, H **out) {
  if (!loaded)
    return call.fail(loaded.status(), FM_STATUS_LOAD_FAILED);
  auto handle = std::make_unique<H>();
  handle.get()->*field = std::move(*loaded);
  *out = publish(handle.release());
  return FM_STATUS_OK;
}

/// One generation's decoder of a constraint (fm_generate_params.constraint).
struct Guide {
  std::unique_ptr<GuidedDecoder> decoder;
  std::unique_ptr<ToolCallDecoder> tools;
  TokenConstraint *constraint() const {
    return tools ? static_cast<TokenConstraint *>(tools.get()) : decoder.get();
  }
};
Guide startGuide(const fm_constraint &c);
/// What the guided generation produced: the grammar's text, or the tool call
/// (or, without one, the free text); whether it is complete; whether it is a
/// call.
void guideOutput(const Guide &guide, std::string *text, int *complete,
                 int *isToolCall);

} // namespace fm::capi
