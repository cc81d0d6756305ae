// fm.h: samplers and sessions (create, reset, prefill, decode, sample,
// cancel, stats, adapters).
#include "capi/Objects.h"

#include "base/JsonString.h"

#include <cstdio>

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

extern "C" {

fm_status fm_sampler_create(const fm_sampler_params *params, fm_sampler **sampler) {
  return guarded("fm_sampler_create", [&](Call &call) {
    if (!sampler)
      return call.null("sampler");
    fm_sampler_params p = fm_sampler_params_default();
    if (params) {
      if (fm_status s = call.params(params, "params"))
        return s;
      p = *params;
    }
    // The ranges fm-run's --temperature, --top-k and --top-p take.
    if (!(p.temperature >= 0.0f))
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->temperature " + std::to_string(p.temperature) +
                           ": must be >= 0 (0: greedy)");
    if (p.top_k < 0)
      return call.fail(FM_STATUS_INVALID_ARGUMENT, "params->top_k " +
                                                       std::to_string(p.top_k) +
                                                       ": must be >= 0 (0: all)");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->top_p " + std::to_string(p.top_p) +
                           ": must be in (0, 1]");
    *sampler = fm::capi::publish(new fm_sampler(p));
    return FM_STATUS_OK;
  });
}

fm_status fm_sampler_free(fm_sampler *sampler) {
  return fm::capi::freeHandle("fm_sampler_free", sampler, Kind::Sampler, "sampler");
}

const char *fm_sampler_error(const fm_sampler *sampler) {
  return fm::capi::handleError(sampler, sampler, Kind::Sampler);
}

fm_status fm_session_create(fm_model *model, const fm_session_params *params,
                            fm_session **session) {
  return guarded("fm_session_create", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (!session)
      return call.null("session");
    fm_session_params p = fm_session_params_default();
    if (params) {
      if (fm_status s = call.params(params, "params"))
        return s;
      p = *params;
    }
    fm::SessionOptions options;
    if (p.threads < 0)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "params->threads " + std::to_string(p.threads) +
                           ": must be >= 0 (0: one per core)");
    options.threads = p.threads;
    if (p.activations && !fm::parseActivations(p.activations, &options.activations))
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       std::string("params->activations '") + p.activations +
                           "': must be int11, int8x2, int8 or f32");
    auto handle = std::make_unique<fm_session>();
    handle->model = model->model;
    handle->session = std::make_unique<fm::Session>(model->model, options);
    if (!handle->session->status())
      return call.fail(handle->session->status());
    // fm_session_cancel stops a prefill between its chunks.
    handle->session->setInterrupt(&handle->cancel);
    *session = fm::capi::publish(handle.release());
    return FM_STATUS_OK;
  });
}

fm_status fm_session_free(fm_session *session) {
  return fm::capi::freeHandle("fm_session_free", session, Kind::Session, "session");
}

const char *fm_session_error(const fm_session *session) {
  return fm::capi::handleError(session, session, Kind::Session);
}

fm_status fm_session_reset(fm_session *session) {
  return guarded("fm_session_reset", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    session->chat.reset();
    if (fm::Status s = session->session->reset(); !s)
      return call.fail(s);
    return FM_STATUS_OK;
  });
}

fm_status fm_session_keep_prefix(fm_session *session, int64_t n) {
  return guarded("fm_session_keep_prefix", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    const int64_t position = session->session->position();
    if (n < 0 || n > position)
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "n " + std::to_string(n) + ": must be in [0, " +
                           std::to_string(position) + "], the position");
    if (fm::Status s = session->session->keepPrefix(n); !s)
      return call.fail(s);
    return FM_STATUS_OK;
  });
}

fm_status fm_session_position(const fm_session *session, int64_t *position) {
  return guarded("fm_session_position", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!position)
      return call.null("position");
    *position = session->session->position();
    return FM_STATUS_OK;
  });
}

fm_status fm_session_tokens(const fm_session *session, const int32_t **tokens,
                            size_t *n) {
  return guarded("fm_session_tokens", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!tokens)
      return call.null("tokens");
    if (!n)
      return call.null("n");
    const std::vector<int32_t> &context = session->session->tokens();
    *tokens = context.data();
    *n = context.size();
    return FM_STATUS_OK;
  });
}

fm_status fm_session_prefill(fm_session *session, const int32_t *tokens, size_t n,
                             int all_logits, const float **logits) {
  return guarded("fm_session_prefill", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!tokens)
      return call.null("tokens");
    if (n == 0)
      return call.fail(FM_STATUS_INVALID_ARGUMENT, "n is 0: there is nothing to prefill");
    if (session->cancel.exchange(false))
      return call.fail(FM_STATUS_CANCELLED,
                       "cancelled by fm_session_cancel before the prefill started");
    fm::Expected<fm::Logits> out =
        session->session->prefill(tokens, static_cast<int64_t>(n), all_logits != 0);
    if (!out)
      return call.fail(out.status(), session->cancel.exchange(false)
                                         ? FM_STATUS_CANCELLED
                                         : FM_STATUS_ERROR);
    if (logits)
      *logits = out->data;
    return FM_STATUS_OK;
  });
}

fm_status fm_session_decode(fm_session *session, int32_t token, const float **logits) {
  return guarded("fm_session_decode", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    fm::Expected<const float *> out = session->session->decode(token);
    if (!out)
      return call.fail(out.status());
    if (logits)
      *logits = *out;
    return FM_STATUS_OK;
  });
}

fm_status fm_session_sample(fm_session *session, fm_sampler *sampler,
                            const float *logits, int32_t *token) {
  return guarded("fm_session_sample", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (fm_status s = call.handle(sampler, Kind::Sampler, "sampler"))
      return s;
    if (!logits)
      return call.null("logits");
    if (!token)
      return call.null("token");
    fm::Expected<int32_t> out = session->session->sample(sampler->sampler, logits);
    if (!out)
      return call.fail(out.status());
    *token = *out;
    return FM_STATUS_OK;
  });
}

fm_status fm_session_cancel(fm_session *session) {
  return guarded("fm_session_cancel", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    session->cancel.store(true);
    return FM_STATUS_OK;
  });
}

fm_status fm_session_stats_json(const fm_session *session, const char **json) {
  return guarded("fm_session_stats_json", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!json)
      return call.null("json");
    const fm::Session &ss = *session->session;
    const fm::SessionStats st = ss.stats();
    auto number = [](double x) {
      char text[40];
      std::snprintf(text, sizeof(text), "%.17g", x);
      return std::string(text);
    };
    std::string out = "{\"position\": " + std::to_string(ss.position()) +
                      ", \"threads\": " + std::to_string(ss.threads()) +
                      ", \"memory_bytes\": " + std::to_string(ss.memoryBytes()) +
                      ", \"device\": ";
    fm::rt::appendJsonString(out, ss.model().device());
    out += ", \"ranks\": " + std::to_string(st.ranks) +
           ", \"decode_tokens\": " + std::to_string(st.decodeTokens) +
           ", \"collectives\": " + std::to_string(st.collectives) +
           ", \"collective_ms\": " + number(st.collectiveMs) +
           ", \"device_ms\": " + (st.deviceMs >= 0 ? number(st.deviceMs) : "null") +
           ", \"first_run_ms\": " + number(st.firstRunMs) +
           ", \"adapters\": " + std::to_string(ss.adapters().size());
    if (const auto &spec = session->speculativeStats)
      out += ", \"drafted\": " + std::to_string(spec->drafted) +
             ", \"accepted\": " + std::to_string(spec->accepted) +
             ", \"target_passes\": " + std::to_string(spec->targetPasses) +
             ", \"acceptance_rate\": " + number(spec->acceptanceRate());
    out += "}";
    // A const call that hands out a string: the session keeps it.
    const_cast<fm_session *>(session)->statsJson = std::move(out);
    *json = session->statsJson.c_str();
    return FM_STATUS_OK;
  });
}

} // extern "C"
