// Kernels linked into the application instead of loaded (fmc compile
// --cpu-code static): the registry the generated registration source fills
// (fm_static_kernels_register, fm/fm.h) and the CPU device reads when an
// artifact's executable is "static". Keys are fmc's digest of the code.
#pragma once

#include "fm/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fm::hal {

using StaticKernel = void (*)(void **args, int64_t rows, int64_t pos);

/// Registers `n` functions under `key` (16 lower-case hex digits). The same
/// key again with the same functions is fine (a second registration call);
/// with others it is an error naming the key.
Status registerStaticKernels(const std::string &key, const char *const *names,
                             const StaticKernel *functions, size_t n);

/// The functions registered under `key`, in the order of `names`; an error
/// that says which key or function is missing, and which keys there are.
Expected<std::vector<StaticKernel>> findStaticKernels(const std::string &key,
                                                      const std::vector<std::string> &names);

} // namespace fm::hal
