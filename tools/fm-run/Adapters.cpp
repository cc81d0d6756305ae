// fm-run --adapter (Adapters.h).
#include "Adapters.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fmrun {

namespace {

// "a.fmba[:scale]": the scale after the last ':' when it is a number (a
// path that itself holds a ':' and exists is taken whole).
bool parseAdapter(const std::string &text, std::string *path, float *scale,
                  std::string *error) {
  *path = text;
  *scale = 1.0f;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return true;
  const std::string tail = text.substr(colon + 1);
  char *end = nullptr;
  errno = 0;
  const float v = tail.empty() ? 0.0f : std::strtof(tail.c_str(), &end);
  if (!tail.empty() && *end == '\0' && errno == 0 && std::isfinite(v)) {
    *path = text.substr(0, colon);
    *scale = v;
    return true;
  }
  if (FILE *f = std::fopen(text.c_str(), "rb")) {
    std::fclose(f);
    return true;
  }
  *error = "--adapter '" + text + "': the scale after ':' ('" + tail +
           "') is not a number";
  return false;
}
} // namespace

fm::Expected<std::vector<fm::AdapterUse>> loadAdapters(const std::shared_ptr<fm::Model> &model,
                                                       const std::vector<std::string> &values,
                                                       bool leader) {
  std::vector<fm::AdapterUse> out;
  for (const std::string &arg : values) {
    std::string path, e;
    float scale = 1.0f;
    if (!parseAdapter(arg, &path, &scale, &e))
      return fm::Status::error(e);
    auto adapter = fm::Adapter::load(model, path);
    if (!adapter)
      return adapter.status();
    if (leader)
      std::fprintf(stderr,
                   "fm-run: adapter %s: %lld projections, rank %lld, "
                   "scale %g x alpha/r\n",
                   path.c_str(), static_cast<long long>((*adapter)->loras()),
                   static_cast<long long>((*adapter)->maxRank()), scale);
    out.push_back({*adapter, scale});
  }
  return out;
}

} // namespace fmrun
