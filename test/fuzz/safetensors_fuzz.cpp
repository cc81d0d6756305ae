// libFuzzer target: SafeTensorsFile::parse must reject or accept any bytes
// without crashing, and every tensor it accepts must lie inside the input.
#include "import/weights/SafeTensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto file = fm::import::SafeTensorsFile::parse(bytes, "fuzz.safetensors");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  // Read every byte of every tensor so ASan sees any out-of-bounds range,
  // and check the invariants the rest of fmc relies on.
  volatile uint8_t sink = 0;
  for (const fm::import::TensorInfo &t : file->tensors()) {
    llvm::ArrayRef<uint8_t> d = file->data(t);
    if (d.size() != t.nbytes ||
        t.nbytes != t.numElements() * fm::import::dtypeSize(t.dtype) ||
        file->lookup(t.name) != &t)
      std::abort();
    for (uint8_t b : d)
      sink = sink ^ b;
  }
  (void)sink;
  return 0;
}
