// A library the CUDA device loads at run time with dlopen (the driver,
// NCCL): its entry points bound by name, the table loaded once per process
// on first use, and a table a test puts in its place.
#pragma once

#include "fm/status.h"

#include <dlfcn.h>
#include <atomic>
#include <mutex>
#include <string>

namespace fm::hal::cuda {

/// A table of entry points and why there is none (ok when loaded).
template <typename Api> struct LoadedLibrary {
  Api api{};
  Status status;
};

/// Binds `fn` to `symbol` of `lib`; a missing one is appended to `missing`
/// ("a, b").
template <typename F> void bindSymbol(void *lib, const char *symbol, F &fn, std::string &missing) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn)
    missing += (missing.empty() ? "" : ", ") + std::string(symbol);
}

/// `forTests` when a test set one, else the table `load` made the first
/// time (once per process, never freed), or its error.
template <typename Api>
Expected<const Api *> loadOnce(const std::atomic<const Api *> &forTests,
                               LoadedLibrary<Api> (*load)()) {
  if (const Api *api = forTests.load())
    return api;
  static LoadedLibrary<Api> *loaded = nullptr;
  static std::once_flag once;
  std::call_once(once, [load] { loaded = new LoadedLibrary<Api>(load()); });
  if (!loaded->status)
    return loaded->status;
  return &loaded->api;
}

} // namespace fm::hal::cuda
