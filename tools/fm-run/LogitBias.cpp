// fm-run --logit-bias (LogitBias.h).
#include "LogitBias.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace fmrun {

fm::Expected<LogitBias> LogitBias::parse(const std::vector<std::string> &values,
                                         int64_t vocab) {
  LogitBias out;
  for (const std::string &value : values) {
    auto bad = [&](const std::string &why) {
      return fm::Status::error("--logit-bias '" + value + "': " + why);
    };
    const size_t eq = value.find('=');
    if (eq == std::string::npos)
      return bad("expected ID=BIAS (a token id, '=', a number)");
    const std::string id = value.substr(0, eq), bias = value.substr(eq + 1);
    char *end = nullptr;
    errno = 0;
    const long long n = id.empty() ? 0 : std::strtoll(id.c_str(), &end, 10);
    if (id.empty() || *end != '\0' || errno != 0)
      return bad("the token id '" + id + "' is not an integer");
    if (n < 0 || n >= vocab)
      return bad("token id " + id + " is out of range (the model has " +
                 std::to_string(vocab) + " logits)");
    errno = 0;
    const float b = bias.empty() ? 0.0f : std::strtof(bias.c_str(), &end);
    if (bias.empty() || *end != '\0' || errno != 0 || !std::isfinite(b))
      return bad("the bias '" + bias + "' is not a finite number");
    bool merged = false;
    for (auto &[token, sum] : out.biases_)
      if (token == int32_t(n)) {
        sum += b;
        merged = true;
      }
    if (!merged)
      out.biases_.push_back({int32_t(n), b});
  }
  return out;
}

void LogitBias::apply(float *logits) const {
  for (const auto &[token, bias] : biases_)
    logits[token] += bias;
}

} // namespace fmrun
