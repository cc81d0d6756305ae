// fm.h: models (fm_model_load, fm_model_load_from_buffer, fm_model_info_get).
#include "capi/Objects.h"

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

namespace {

// fm_load_params as the C++ API's options.
fm_status loadOptions(Call &call, const fm_load_params *params,
                      fm::LoadOptions *out) {
  fm_load_params p = fm_load_params_default();
  if (params) {
    if (fm_status s = call.params(params, "params"))
      return s;
    p = *params;
  }
  if (p.device)
    out->device = p.device;
  if (p.n_trusted_keys > 0 && !p.trusted_keys)
    return call.fail(FM_STATUS_INVALID_ARGUMENT,
                     "params->trusted_keys is NULL but params->n_trusted_keys is " +
                         std::to_string(p.n_trusted_keys));
  for (size_t i = 0; i < p.n_trusted_keys; ++i) {
    if (!p.trusted_keys[i])
      return call.null(("params->trusted_keys[" + std::to_string(i) + "]").c_str());
    out->trustedKeys.push_back(p.trusted_keys[i]);
  }
  out->maxMemoryBytes = p.max_memory_bytes;
  out->verifyHash = p.verify_weights != 0;
  return FM_STATUS_OK;
}


} // namespace

extern "C" {

fm_status fm_model_load(const char *path, const fm_load_params *params,
                        fm_model **model) {
  return guarded("fm_model_load", [&](Call &call) {
    if (!path)
      return call.null("path");
    if (!model)
      return call.null("model");
    fm::LoadOptions options;
    if (fm_status s = loadOptions(call, params, &options))
      return s;
    return fm::capi::publishLoaded(call, fm::Model::load(path, options),
                                   &fm_model::model, model);
  });
}

fm_status fm_model_load_from_buffer(const void *data, size_t size,
                                    const char *name,
                                    const fm_load_params *params,
                                    fm_model **model) {
  return guarded("fm_model_load_from_buffer", [&](Call &call) {
    if (!data)
      return call.null("data");
    if (!model)
      return call.null("model");
    fm::LoadOptions options;
    if (fm_status s = loadOptions(call, params, &options))
      return s;
    return fm::capi::publishLoaded(call,
                        fm::Model::loadFromBuffer(static_cast<const uint8_t *>(data),
                                                  size, name ? name : "<buffer>",
                                                  options),
                        &fm_model::model, model);
  });
}

fm_status fm_model_free(fm_model *model) {
  return fm::capi::freeHandle("fm_model_free", model, Kind::Model, "model");
}

const char *fm_model_error(const fm_model *model) {
  return fm::capi::handleError(model, model, Kind::Model);
}

fm_status fm_model_info_get(const fm_model *model, fm_model_info *info) {
  return guarded("fm_model_info_get", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (fm_status s = call.params(info, "info"))
      return s;
    const fm::Model &m = *model->model;
    info->name = m.name().c_str();
    info->family = m.family().c_str();
    info->device = m.device().c_str();
    info->vocab_size = m.vocabSize();
    info->context_length = m.contextLength();
    info->hidden_size = m.hiddenSize();
    info->num_layers = m.numLayers();
    info->parameters = m.parameters();
    info->has_tokenizer = m.hasTokenizer();
    info->has_chat_template = 0;
    if (m.hasTokenizer())
      if (fm::Expected<fm::Tokenizer> t = m.tokenizer(); t)
        info->has_chat_template = !t->chatTemplate().empty();
    info->has_decoder = m.hasDecoder();
    const fm::ImageEncoderInfo *e = m.imageEncoder();
    info->has_image_encoder = e != nullptr;
    info->image_channels = e ? e->channels : 0;
    info->image_height = e ? e->height : 0;
    info->image_width = e ? e->width : 0;
    info->image_tokens = e ? e->tokens : 0;
    info->image_token_id = e ? e->imageTokenIndex : -1;
    info->stop_ids = m.stopIds().data();
    info->n_stop_ids = m.stopIds().size();
    info->signed_by = m.signedBy().c_str();
    return FM_STATUS_OK;
  });
}

} // extern "C"
