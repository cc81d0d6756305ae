// What every function of the C API (fm/fm.h) does at its boundary: checks
// its handles against the set of live ones, checks pointers and struct
// sizes, turns fm::Status and C++ exceptions into an fm_status with a
// message, and records the message for fm_last_error() and the handle.
#pragma once

#include "fm/fm.h"
#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
#include <string>

namespace fm::capi {

/// The kinds of handle; the value is what the registry checks a pointer
/// against, so that an fm_session passed as an fm_model is refused.
enum class Kind : uint32_t {
  Model = 1,
  Session,
  Tokenizer,
  Sampler,
  Adapter,
  Constraint,
};
/// "fm_model", "fm_session", ...
const char *kindName(Kind kind);

/// The base of every handle: its kind and the message of the last call on
/// it that failed (guarded: a model is used by many threads).
struct Handle {
  explicit Handle(Kind k) : kind(k) {}
  virtual ~Handle() = default;
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;

  const Kind kind;
  void setError(const std::string &message) const;
  /// A copy of the message in the calling thread's buffer (fm_*_error).
  const char *error() const;

private:
  mutable std::mutex mutex_;
  mutable std::string error_;
};

/// Adds a new handle to the live set and returns it.
template <typename T> T *publish(T *handle);
void registerHandle(const Handle *handle);
/// Whether `p` is a live handle of `kind`.
bool isLive(const void *p, Kind kind);
/// Removes a live handle of `kind` from the set; false when it is not one.
bool retire(const void *p, Kind kind);

/// One call of the API: its name prefixes every message ("fm_session_decode:
/// tokens is NULL"), which goes to fm_last_error() and to the handle the
/// call is on, once checked.
class Call {
public:
  explicit Call(const char *function) : function_(function) {}

  const char *function() const { return function_; }
  fm_status fail(fm_status status, const std::string &message);
  /// A runtime error: FM_STATUS_ERROR, or `status`, with its message.
  fm_status fail(const Status &error, fm_status status = FM_STATUS_ERROR) {
    return fail(status, error.message());
  }
  /// FM_STATUS_INVALID_ARGUMENT: "`name` is NULL".
  fm_status null(const char *name) {
    return fail(FM_STATUS_INVALID_ARGUMENT, std::string(name) + " is NULL");
  }

  /// Checks that `p` is a live handle of `kind` named `name` in the
  /// signature; on success later failures are also recorded on it.
  fm_status handle(const void *p, Kind kind, const char *name);
  /// The same for an optional handle (NULL passes).
  fm_status optionalHandle(const void *p, Kind kind, const char *name);

  /// Checks a params struct's struct_size against the sizes this library
  /// knows (today only sizeof(T)).
  template <typename T> fm_status params(const T *p, const char *name) {
    if (!p)
      return null(name);
    return structSize(p->struct_size, sizeof(T), name);
  }

private:
  fm_status structSize(size_t got, size_t want, const char *name);
  const char *function_;
  const Handle *handle_ = nullptr;
};

/// Runs `body(call)` for the API function `function`; an exception that
/// escapes it becomes FM_STATUS_OUT_OF_MEMORY or FM_STATUS_INTERNAL.
template <typename F> fm_status guarded(const char *function, F &&body) noexcept {
  Call call(function);
  try {
    return body(call);
  } catch (const std::bad_alloc &) {
    return call.fail(FM_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return call.fail(FM_STATUS_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return call.fail(FM_STATUS_INTERNAL, "internal error: an unknown exception");
  }
}

/// fm_*_free: retires the handle (or reports that it is none) and deletes it.
fm_status freeHandle(const char *function, Handle *handle, Kind kind,
                     const char *name) noexcept;
/// fm_*_error: the handle's last message, or a sentence saying that `p` is
/// no live handle of `kind`.
const char *handleError(const void *p, const Handle *handle, Kind kind) noexcept;

/// Writes `bytes` and a NUL into a caller's buffer of `capacity` (the
/// contract of fm_tokenizer_decode and the like).
fm_status copyOut(Call &call, const std::string &bytes, char *text,
                  size_t capacity, size_t *size, const char *textName);

template <typename T> T *publish(T *handle) {
  registerHandle(handle);
  return handle;
}

} // namespace fm::capi
