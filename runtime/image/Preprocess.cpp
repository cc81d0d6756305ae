// Pixels into the encoder's input tensor (docs/vit.md): resize, /255,
// normalize, channels first.
#include "fm/image.h"

#include "fm/runtime.h"

namespace fm::image {

std::vector<float> toTensor(const RgbImage &image, const Preprocess &p) {
  const int64_t plane = image.width * image.height;
  std::vector<float> out(static_cast<size_t>(3 * plane));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < plane; ++i) {
      // The reference's float64 steps, in its order, rounded once.
      const double v = double(image.pixels[3 * i + c]) / 255.0;
      out[c * plane + i] = static_cast<float>((v - p.mean[c]) / p.std[c]);
    }
  return out;
}

Expected<Preprocess> preprocessFor(const ImageEncoderInfo &e) {
  if (e.channels != 3 || e.height != e.width)
    return Status::error("the image encoder takes a [" + std::to_string(e.channels) + ", " +
                         std::to_string(e.height) + ", " + std::to_string(e.width) +
                         "] tensor, not a square RGB image");
  Preprocess p;
  p.size = e.height;
  Expected<Resample> filter = parseResample(e.resample);
  if (!filter)
    return filter.status();
  p.resample = *filter;
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = e.mean[c];
    p.std[c] = e.std[c];
  }
  return p;
}

Expected<std::vector<float>> preprocessImageFile(const std::string &path,
                                                 const Preprocess &p) {
  if (p.size < 1)
    return Status::error(path + ": preprocessing needs a positive image size, not " +
                         std::to_string(p.size));
  for (int c = 0; c < 3; ++c)
    if (!(p.std[c] != 0.0))
      return Status::error(path + ": image_std[" + std::to_string(c) +
                           "] is 0");
  Expected<RgbImage> image = readImageFile(path);
  if (!image)
    return image.status();
  Expected<RgbImage> sized = resize(*image, p.size, p.size, p.resample);
  if (!sized)
    return Status::error(path + ": " + sized.message());
  return toTensor(*sized, p);
}

} // namespace fm::image
