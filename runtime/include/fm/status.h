// fm::Status and fm::Expected<T>: the runtime API's error values (no
// exceptions cross the API; every error is a readable sentence).
#pragma once

#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace fm {

/// Success, or an error with a message that says what is wrong and where
/// ("model.fmb: program 'decode' command 12 (model.layers.3.self_attn):
/// weight index 99 out of range (61 weights)").
class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;

  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }

  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  /// The error message; empty on success.
  const std::string &message() const { return message_; }

private:
  bool failed_ = false;
  std::string message_;
};

/// A T, or the Status of why there is none. Constructed implicitly from
/// either, so a function returning Expected<T> can `return value;` or
/// `return Status::error("...");`.
template <typename T> class [[nodiscard]] Expected {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>,
                "Expected<Status> is meaningless: return Status");

public:
  Expected(const T &value) : hasValue_(true) { new (&storage_) T(value); }
  Expected(T &&value) : hasValue_(true) { new (&storage_) T(std::move(value)); }
  /// An error; `status` must not be ok.
  Expected(Status status) : status_(std::move(status)) {
    if (status_.isOk())
      status_ = Status::error("internal error: Expected built from an ok Status");
  }

  Expected(const Expected &other)
      : hasValue_(other.hasValue_), status_(other.status_) {
    if (hasValue_)
      new (&storage_) T(*other);
  }
  Expected(Expected &&other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : hasValue_(other.hasValue_), status_(std::move(other.status_)) {
    if (hasValue_)
      new (&storage_) T(std::move(*other));
  }
  Expected &operator=(Expected other) {
    destroy();
    hasValue_ = other.hasValue_;
    status_ = std::move(other.status_);
    if (hasValue_)
      new (&storage_) T(std::move(*other));
    return *this;
  }
  ~Expected() { destroy(); }

  bool isOk() const { return hasValue_; }
  explicit operator bool() const { return hasValue_; }

  /// Ok when there is a value.
  const Status &status() const { return status_; }
  /// The error message; empty when there is a value.
  const std::string &message() const { return status_.message(); }

  /// The value; only when isOk().
  T &value() & { return *ptr(); }
  const T &value() const & { return *ptr(); }
  T &&value() && { return std::move(*ptr()); }
  T &operator*() & { return *ptr(); }
  const T &operator*() const & { return *ptr(); }
  T &&operator*() && { return std::move(*ptr()); }
  T *operator->() { return ptr(); }
  const T *operator->() const { return ptr(); }

private:
  T *ptr() { return std::launder(reinterpret_cast<T *>(&storage_)); }
  const T *ptr() const {
    return std::launder(reinterpret_cast<const T *>(&storage_));
  }
  void destroy() {
    if (hasValue_)
      ptr()->~T();
    hasValue_ = false;
  }

  bool hasValue_ = false;
  Status status_;
  std::aligned_storage_t<sizeof(T), alignof(T)> storage_;
};

} // namespace fm

/// Returns the Status of `expr` from the enclosing function when it failed.
#define FM_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    ::fm::Status fmStatus_ = (expr);                                           \
    if (!fmStatus_.isOk())                                                     \
      return fmStatus_;                                                        \
  } while (0)
