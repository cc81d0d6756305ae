// libFuzzer target: arbitrary bytes through decodeImage (PNG, JPEG and the
// signature check), and what decodes through resize and toTensor. Every
// input must give an image or a clear error, never a crash or a leak.
#include "fm/image.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fm::image::DecodeLimits limits;
  limits.maxPixels = int64_t(1) << 20; // keeps each input fast under ASan
  auto image = fm::image::decodeImage(data, size, "fuzz input", limits);
  if (!image) {
    if (image.message().rfind("fuzz input: ", 0) != 0)
      __builtin_trap(); // every error names the file
    return 0;
  }
  if (int64_t(image->pixels.size()) != image->width * image->height * 3)
    __builtin_trap();
  const auto filter =
      size % 2 ? fm::image::Resample::Bicubic : fm::image::Resample::Bilinear;
  auto sized = fm::image::resize(*image, 17, 13, filter);
  if (!sized)
    __builtin_trap();
  fm::image::Preprocess p;
  p.size = 17;
  (void)fm::image::toTensor(*sized, p);
  return 0;
}
