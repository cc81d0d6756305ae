// The tools' option checks (OptionChecks.h).
#include "common/OptionChecks.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

namespace fm::cli {

namespace {

// "--top-p 2: must be in (0, 1]"; an empty value shows as ''.
[[noreturn]] void refuse(const CLI::Option *option, const std::string &value,
                         const std::string &why) {
  throw OptionValueError(option->get_name() + " " +
                         (value.empty() ? "''" : value) + ": " + why);
}

// The largest values of the options' types, in words.
std::string largest(int64_t max) {
  if (max == std::numeric_limits<int64_t>::max())
    return "2^63 - 1";
  if (max == std::numeric_limits<int32_t>::max())
    return "2^31 - 1";
  return std::to_string(max);
}

bool parseInteger(const std::string &text, long long *out, bool *overflow) {
  char *end = nullptr;
  errno = 0;
  *out = std::strtoll(text.c_str(), &end, 10);
  *overflow = errno == ERANGE;
  return !text.empty() && *end == '\0';
}

} // namespace

CLI::Option *checkInteger(CLI::Option *option, int64_t min, int64_t max,
                          std::string range) {
  return option->check(CLI::Validator(
      [option, min, max, range](std::string &value) -> std::string {
        long long n = 0;
        bool overflow = false;
        if (!parseInteger(value, &n, &overflow))
          refuse(option, value, "not an integer; " + range);
        if (overflow ? value[0] == '-' : n < min)
          refuse(option, value, range);
        if (overflow || n > max)
          refuse(option, value, "too large (at most " + largest(max) + ")");
        return {};
      },
      "", "integer range"));
}

CLI::Option *checkCount(CLI::Option *option, int64_t min) {
  return checkInteger(option, min, std::numeric_limits<int64_t>::max(),
                      "must be >= " + std::to_string(min));
}

CLI::Option *checkReal(CLI::Option *option, std::function<bool(double)> ok,
                       std::string range) {
  return option->check(CLI::Validator(
      [option, ok, range](std::string &value) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0')
          refuse(option, value, "not a number; " + range);
        if (std::isnan(v) || !ok(v))
          refuse(option, value, range);
        // The option is a float: 1e39 would be infinite.
        if (!std::isfinite(static_cast<float>(v)))
          refuse(option, value, "too large for a float (at most 3.4e38)");
        return {};
      },
      "", "real range"));
}

CLI::Option *checkUint64(CLI::Option *option) {
  return option->check(CLI::Validator(
      [option](std::string &value) -> std::string {
        const std::string range = "must be an integer in [0, 2^64 - 1]";
        char *end = nullptr;
        errno = 0;
        // strtoull takes "-1" as 2^64 - 1: only digits here.
        const bool digits =
            !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        std::strtoull(value.c_str(), &end, 10);
        if (!digits || errno == ERANGE)
          refuse(option, value, range);
        return {};
      },
      "", "uint64"));
}

CLI::Option *checkMemorySize(CLI::Option *option) {
  // A transform: CLI11 keeps what a check writes to `value` to itself.
  return option->transform(CLI::Validator(
      [option](std::string &value) -> std::string {
        const std::string range =
            "must be a size >= 0: bytes, or a number with K, M, G or T "
            "(1024-based), e.g. 512M or 8G (0: the physical memory)";
        char *end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || end == value.c_str() || !std::isfinite(v) ||
            v < 0.0 || value[0] == '-')
          refuse(option, value, range);
        std::string unit(end);
        for (char &c : unit)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        double scale = 0.0;
        for (const auto &[prefix, factor] :
             {std::pair<const char *, double>{"", 1.0}, {"k", 0x1p10},
              {"m", 0x1p20}, {"g", 0x1p30}, {"t", 0x1p40}})
          for (const char *suffix : {"", "b", "ib"})
            if (unit == std::string(prefix) + suffix &&
                !(unit == "ib")) // "iB" alone is no unit
              scale = factor;
        if (scale == 0.0)
          refuse(option, value, range);
        const double bytes = std::floor(v * scale);
        if (bytes >= 0x1p64)
          refuse(option, value, "too large (at most 16 EiB)");
        value = std::to_string(static_cast<unsigned long long>(bytes));
        return {};
      },
      "", "memory size"));
}

std::optional<int> parseCommandLine(CLI::App &app, int argc, char **argv,
                                    const char *tool, int errorCode) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return errorCode < 0 ? e.get_exit_code() : errorCode;
  }
  return std::nullopt;
}

int clampThreads(const char *tool, int threads, bool warn) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0 || threads <= cores)
    return threads;
  if (warn)
    std::fprintf(stderr,
                 "%s: warning: --threads %d: this machine has %d hardware "
                 "threads; using %d\n",
                 tool, threads, cores, cores);
  return cores;
}

} // namespace fm::cli
