// The registry of statically linked kernels (StaticKernels.h).
#include "hal/cpu/StaticKernels.h"

#include <map>
#include <mutex>

namespace fm::hal {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, StaticKernel>> byKey;
};

Registry &registry() {
  static Registry *r = new Registry(); // never destroyed: apps register at startup
  return *r;
}

bool validKey(const std::string &key) {
  if (key.size() != 16)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace

Status registerStaticKernels(const std::string &key, const char *const *names,
                             const StaticKernel *functions, size_t n) {
  if (!validKey(key))
    return Status::error("statically linked kernels: key '" + key +
                         "' is not fmc's (16 lower-case hex digits)");
  if (n > 0 && (!names || !functions))
    return Status::error("statically linked kernels " + key + ": names or functions is NULL");
  std::map<std::string, StaticKernel> table;
  for (size_t i = 0; i < n; ++i) {
    if (!names[i] || !functions[i])
      return Status::error("statically linked kernels " + key + ": entry " +
                           std::to_string(i) + " has no name or no function");
    table[names[i]] = functions[i];
  }
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, added] = r.byKey.emplace(key, table);
  if (!added && it->second != table)
    return Status::error("statically linked kernels " + key +
                         ": registered twice with different functions");
  return Status::ok();
}

Expected<std::vector<StaticKernel>> findStaticKernels(const std::string &key,
                                                      const std::vector<std::string> &names) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byKey.find(key);
  if (it == r.byKey.end()) {
    std::string have;
    for (const auto &k : r.byKey)
      have += (have.empty() ? "" : ", ") + k.first;
    return Status::error("its CPU kernels were compiled to link statically (key " + key +
                         ") and this program has not linked them (it has " +
                         (have.empty() ? std::string("none") : "the kernels of " + have) +
                         "): link the artifact's .kernels.o and .kernels.c, from the same "
                         "fmc compile");
  }
  std::vector<StaticKernel> out;
  for (const std::string &name : names) {
    auto f = it->second.find(name);
    if (f == it->second.end())
      return Status::error("the statically linked kernels " + key + " have no function " +
                           name + " (the artifact and its .kernels.c differ)");
    out.push_back(f->second);
  }
  return out;
}

} // namespace fm::hal
