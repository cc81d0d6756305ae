// libFuzzer target: the ELF check that runs before an artifact's generated
// code is mapped (hal/cpu/ElfImage.h), and fmc's loader behind it
// (hal/cpu/ElfLoader.h). Any bytes must be refused with a sentence or
// accepted; an accepted image is then really mapped, relocated against the
// runtime's import table and protected, and its functions resolved (never
// called): the check promises that the loader can do all of that with what
// it lets through, without a signal and without running any of its code.
#include "hal/cpu/CpuExecutable.h"
#include "hal/cpu/ElfImage.h"

#include <cstdint>
#include <string>
#include <vector>

namespace {

// Functions of the seed images (test/fuzz/corpus/elf_image: the runtime
// tests' stand-in kernels and fmc's generated code for a tiny llama).
const char *const kNames[] = {"fmt_record",   "fmt_write_kv", "fmt_thread_tag",
                              "fmk_k0_entry", "fmk_k1_entry", "fmk_k2_entry",
                              "fmk_k3_entry", "fmk_k4_entry", "fmk_k5_entry"};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fm::hal::elfMachineProblem(data, size).empty())
    return 0;
  if (!fm::hal::elfImageProblem(data, size, {}).empty())
    return 0;
  std::vector<std::string> functions;
  for (const char *name : kNames)
    if (fm::hal::elfImageProblem(data, size, {name}).empty())
      functions.push_back(name);
  const std::vector<uint8_t> image(data, data + size);
  auto exe = fm::hal::CpuExecutable::loadImage(image, functions, "fuzz");
  // An error (the loader's own: a failed mmap or mprotect) is fine; a signal is not.
  (void)exe;
  return 0;
}
