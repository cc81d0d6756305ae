// The C API's boundary (Handles.h): the live handles, the messages.
#include "capi/Handles.h"

#include <cstring>
#include <unordered_map>

namespace fm::capi {

namespace {

// fm_last_error()'s message and fm_*_error()'s copies, per thread.
thread_local std::string lastError;
thread_local std::string handleErrorCopy;

// Every live handle and its kind. A pointer that is not in it is never
// dereferenced, so a double free or a stray pointer is reported, not a crash.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void *, Kind> live;
};
Registry &registry() {
  static Registry *r = new Registry; // never destroyed: handles may outlive statics
  return *r;
}

} // namespace

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Model:
    return "fm_model";
  case Kind::Session:
    return "fm_session";
  case Kind::Tokenizer:
    return "fm_tokenizer";
  case Kind::Sampler:
    return "fm_sampler";
  case Kind::Adapter:
    return "fm_adapter";
  case Kind::Constraint:
    return "fm_constraint";
  }
  return "handle";
}

void Handle::setError(const std::string &message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  error_ = message;
}

const char *Handle::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  handleErrorCopy = error_;
  return handleErrorCopy.c_str();
}

void registerHandle(const Handle *handle) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[handle] = handle->kind;
}

bool isLive(const void *p, Kind kind) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(p);
  return it != r.live.end() && it->second == kind;
}

bool retire(const void *p, Kind kind) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(p);
  if (it == r.live.end() || it->second != kind)
    return false;
  r.live.erase(it);
  return true;
}

fm_status Call::fail(fm_status status, const std::string &message) {
  std::string text = std::string(function_) + ": " + message;
  if (handle_)
    handle_->setError(text);
  lastError = std::move(text);
  return status;
}

namespace {

std::string notLive(const char *name, Kind kind) {
  const char *what = kindName(kind);
  return std::string(name) + " is not a live " + what + " (freed already, or not made by this library)";
}

} // namespace

fm_status Call::handle(const void *p, Kind kind, const char *name) {
  if (!p)
    return null(name);
  if (!isLive(p, kind))
    return fail(FM_STATUS_INVALID_HANDLE, notLive(name, kind));
  if (!handle_)
    handle_ = static_cast<const Handle *>(p);
  return FM_STATUS_OK;
}

fm_status Call::optionalHandle(const void *p, Kind kind, const char *name) {
  return p ? handle(p, kind, name) : FM_STATUS_OK;
}

fm_status Call::structSize(size_t got, size_t want, const char *name) {
  if (got == want)
    return FM_STATUS_OK;
  return fail(FM_STATUS_INVALID_ARGUMENT,
              std::string(name) + "->struct_size is " + std::to_string(got) +
                  ", but this library (ABI " + std::to_string(FM_ABI_VERSION) +
                  ") knows only " + std::to_string(want) +
                  ": initialize the struct with its *_default() function");
}

fm_status freeHandle(const char *function, Handle *handle, Kind kind,
                     const char *name) noexcept {
  return guarded(function, [&](Call &call) {
    if (!handle)
      return FM_STATUS_OK;
    if (!retire(handle, kind))
      return call.fail(FM_STATUS_INVALID_HANDLE, notLive(name, kind));
    delete handle;
    return FM_STATUS_OK;
  });
}

const char *handleError(const void *p, const Handle *handle, Kind kind) noexcept {
  try {
    if (!p || !isLive(p, kind)) {
      handleErrorCopy = notLive("the argument", kind);
      return handleErrorCopy.c_str();
    }
    return handle->error();
  } catch (...) {
    return "out of memory";
  }
}

fm_status copyOut(Call &call, const std::string &bytes, char *text,
                  size_t capacity, size_t *size, const char *textName) {
  *size = bytes.size();
  if (capacity < bytes.size() + 1)
    return call.fail(FM_STATUS_BUFFER_TOO_SMALL,
                     std::string(textName) + " needs " +
                         std::to_string(bytes.size() + 1) +
                         " bytes (the NUL included); capacity is " +
                         std::to_string(capacity));
  if (!text)
    return call.null(textName);
  std::memcpy(text, bytes.data(), bytes.size());
  text[bytes.size()] = '\0';
  return FM_STATUS_OK;
}

} // namespace fm::capi

extern "C" const char *fm_last_error(void) { return fm::capi::lastError.c_str(); }
