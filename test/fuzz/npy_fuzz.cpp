// libFuzzer target for the .npy reader behind fm-run --image-tensor
// (fm::parseNpyF32): any bytes either parse to a shape whose element count
// matches the data, or give an error that names the input.
#include "fm/npy.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fm::NpyArray a;
  std::string error;
  // A small cap keeps an accepted input's allocation bounded.
  if (fm::parseNpyF32(data, size, "fuzz.npy", &a, &error, uint64_t(1) << 20)) {
    uint64_t n = 1;
    for (int64_t d : a.shape)
      n *= uint64_t(d);
    if (n != a.data.size())
      std::abort();
  } else if (error.rfind("fuzz.npy: ", 0) != 0) {
    std::abort();
  }
  return 0;
}
