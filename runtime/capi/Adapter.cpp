// fm.h: LoRA adapters (.fmba) bound to a model and attached to sessions.
#include "capi/Objects.h"

#include "fm/adapter.h"

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

extern "C" {

fm_status fm_adapter_load(const fm_model *model, const char *path, fm_adapter **adapter) {
  return guarded("fm_adapter_load", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (!path)
      return call.null("path");
    if (!adapter)
      return call.null("adapter");
    return fm::capi::publishLoaded(call, fm::Adapter::load(model->model, path),
                                   &fm_adapter::adapter, adapter);
  });
}

fm_status fm_adapter_load_from_buffer(const fm_model *model, const void *data,
                                      size_t size, const char *name,
                                      fm_adapter **adapter) {
  return guarded("fm_adapter_load_from_buffer", [&](Call &call) {
    if (fm_status s = call.handle(model, Kind::Model, "model"))
      return s;
    if (!data)
      return call.null("data");
    if (!adapter)
      return call.null("adapter");
    return fm::capi::publishLoaded(call,
                          fm::Adapter::loadFromBuffer(model->model,
                                                      static_cast<const uint8_t *>(data),
                                                      size, name ? name : "<buffer>"),
                          &fm_adapter::adapter, adapter);
  });
}

fm_status fm_adapter_free(fm_adapter *adapter) {
  return fm::capi::freeHandle("fm_adapter_free", adapter, Kind::Adapter, "adapter");
}

const char *fm_adapter_error(const fm_adapter *adapter) {
  return fm::capi::handleError(adapter, adapter, Kind::Adapter);
}

fm_status fm_session_set_adapters(fm_session *session, const fm_adapter *const *adapters,
                                  const float *scales, size_t n) {
  return guarded("fm_session_set_adapters", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (n > 0 && !adapters)
      return call.null("adapters");
    if (n > 0 && !scales)
      return call.null("scales");
    std::vector<fm::AdapterUse> uses;
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "adapters[" + std::to_string(i) + "]";
      if (fm_status s = call.handle(adapters[i], Kind::Adapter, name.c_str()))
        return s;
      uses.push_back({adapters[i]->adapter, scales[i]});
    }
    if (fm::Status s = session->session->setAdapters(uses); !s)
      return call.fail(s);
    return FM_STATUS_OK;
  });
}

} // extern "C"
