// fm.h: the library's version, status names, devices and the params
// structs' initializers.
#include <cstring>
#include "capi/Handles.h"

#include "fm/perplexity.h"
#include "fm/runtime.h"
#include "hal/cpu/StaticKernels.h"

#include <vector>

using fm::capi::Call;
using fm::capi::guarded;

#define FM_STRINGIFY_(x) #x
#define FM_STRINGIFY(x) FM_STRINGIFY_(x)

extern "C" {

const char *fm_version(void) {
  return FM_STRINGIFY(FM_VERSION_MAJOR) "." FM_STRINGIFY(
      FM_VERSION_MINOR) "." FM_STRINGIFY(FM_VERSION_PATCH);
}

int fm_abi_version(void) { return FM_ABI_VERSION; }

const char *fm_status_name(fm_status status) {
  // Any int may come from C; C++ may not load one that is no enumerator.
  static_assert(sizeof(fm_status) == sizeof(int));
  int code = 0;
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
  case FM_STATUS_OK:
    return "FM_STATUS_OK";
  case FM_STATUS_INVALID_ARGUMENT:
    return "FM_STATUS_INVALID_ARGUMENT";
  case FM_STATUS_INVALID_HANDLE:
    return "FM_STATUS_INVALID_HANDLE";
  case FM_STATUS_LOAD_FAILED:
    return "FM_STATUS_LOAD_FAILED";
  case FM_STATUS_UNSUPPORTED:
    return "FM_STATUS_UNSUPPORTED";
  case FM_STATUS_BUFFER_TOO_SMALL:
    return "FM_STATUS_BUFFER_TOO_SMALL";
  case FM_STATUS_CANCELLED:
    return "FM_STATUS_CANCELLED";
  case FM_STATUS_OUT_OF_MEMORY:
    return "FM_STATUS_OUT_OF_MEMORY";
  case FM_STATUS_ERROR:
    return "FM_STATUS_ERROR";
  case FM_STATUS_INTERNAL:
    return "FM_STATUS_INTERNAL";
  }
  return "FM_STATUS_UNKNOWN";
}

fm_device_info fm_device_info_default(void) {
  fm_device_info d = {};
  d.struct_size = sizeof(d);
  return d;
}

} // extern "C"

namespace {

// The machine's devices, probed once (probing may load a driver).
const std::vector<fm::DeviceInfo> &devices() {
  static const std::vector<fm::DeviceInfo> *probed =
      new std::vector<fm::DeviceInfo>(fm::probeDevices());
  return *probed;
}

} // namespace

extern "C" {

int fm_static_kernels_register(const char *key, const char *const *names,
                               const fm_kernel_function *functions, size_t n) {
  return guarded("fm_static_kernels_register", [&](Call &call) {
    if (!key)
      return call.null("key");
    if (n > 0 && !names)
      return call.null("names");
    if (n > 0 && !functions)
      return call.null("functions");
    if (fm::Status s = fm::hal::registerStaticKernels(key, names, functions, n); !s)
      return call.fail(s, FM_STATUS_INVALID_ARGUMENT);
    return FM_STATUS_OK;
  });
}

fm_status fm_device_count(size_t *count) {
  return guarded("fm_device_count", [&](Call &call) {
    if (!count)
      return call.null("count");
    *count = devices().size();
    return FM_STATUS_OK;
  });
}

fm_status fm_device_get(size_t index, fm_device_info *info) {
  return guarded("fm_device_get", [&](Call &call) {
    if (fm_status s = call.params(info, "info"))
      return s;
    const std::vector<fm::DeviceInfo> &all = devices();
    if (index >= all.size())
      return call.fail(FM_STATUS_INVALID_ARGUMENT,
                       "index " + std::to_string(index) + " is out of range (" +
                           std::to_string(all.size()) + " devices)");
    const fm::DeviceInfo &d = all[index];
    info->name = d.name.c_str();
    info->built_in = d.builtIn;
    info->present = d.present;
    info->hardware = d.hardware;
    info->description = d.description.c_str();
    return FM_STATUS_OK;
  });
}

fm_load_params fm_load_params_default(void) {
  fm_load_params p = {};
  p.struct_size = sizeof(p);
  return p;
}

fm_model_info fm_model_info_default(void) {
  fm_model_info p = {};
  p.struct_size = sizeof(p);
  return p;
}

fm_sampler_params fm_sampler_params_default(void) {
  fm_sampler_params p = {};
  p.struct_size = sizeof(p);
  p.top_p = 1.0f;
  return p;
}

fm_session_params fm_session_params_default(void) {
  fm_session_params p = {};
  p.struct_size = sizeof(p);
  return p;
}

fm_generate_params fm_generate_params_default(void) {
  fm_generate_params p = {};
  p.struct_size = sizeof(p);
  fm::GenerateOptions o;
  p.max_new_tokens = o.maxNewTokens;
  p.use_model_stop_ids = o.useModelStopIds;
  p.add_special_tokens = o.addSpecialTokens;
  p.skip_special_tokens = o.skipSpecialTokens;
  return p;
}

fm_generation fm_generation_default(void) {
  fm_generation g = {};
  g.struct_size = sizeof(g);
  g.text = "";
  g.stop_name = "";
  g.complete = 1;
  return g;
}

fm_perplexity_params fm_perplexity_params_default(void) {
  fm_perplexity_params p = {};
  p.struct_size = sizeof(p);
  fm::PerplexityOptions o;
  p.ctx = o.ctx;
  p.bos = o.bos;
  return p;
}

fm_perplexity_result fm_perplexity_result_default(void) {
  fm_perplexity_result r = {};
  r.struct_size = sizeof(r);
  return r;
}

fm_tokenizer_info fm_tokenizer_info_default(void) {
  fm_tokenizer_info t = {};
  t.struct_size = sizeof(t);
  t.bos_id = t.eos_id = -1;
  return t;
}

fm_constraint_params fm_constraint_params_default(void) {
  fm_constraint_params p = {};
  p.struct_size = sizeof(p);
  p.kind = FM_CONSTRAINT_JSON_SCHEMA;
  return p;
}

} // extern "C"
