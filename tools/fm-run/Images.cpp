// fm-run's images (Images.h).
#include "Images.h"

#include "fm/image.h"
#include "fm/image_prompt.h"
#include "fm/npy.h"

#include <chrono>
#include <cstdio>

namespace fmrun {

fm::Expected<std::vector<float>> loadImage(const fm::ImageEncoderInfo &e,
                                           bool tensor, const std::string &path) {
  if (tensor) {
    fm::NpyArray a;
    std::string error;
    if (!fm::readNpyF32(path, &a, &error))
      return fm::Status::error("--image-tensor " + error);
    const std::vector<int64_t> want = {e.channels, e.height, e.width};
    if (a.shape != want) {
      std::string got;
      for (int64_t d : a.shape)
        got += (got.empty() ? "" : ", ") + std::to_string(d);
      return fm::Status::error("--image-tensor " + path + ": shape [" + got +
                               "], the image encoder takes [" +
                               std::to_string(e.channels) + ", " +
                               std::to_string(e.height) + ", " +
                               std::to_string(e.width) + "] float32");
    }
    return std::move(a.data);
  }
  auto p = fm::image::preprocessFor(e);
  if (!p)
    return fm::Status::error("--image " + path + ": " + p.message() +
                             (e.channels != 3 || e.height != e.width
                                  ? ": give it with --image-tensor"
                                  : ""));
  return fm::image::preprocessImageFile(path, *p);
}

std::string imageFlag(const std::pair<bool, std::string> &image) {
  return (image.first ? "--image-tensor " : "--image ") + image.second;
}

fm::Expected<std::string> promptWithImages(const std::string &prompt,
                                           const ImageArgs &images,
                                           fm::Session &session, bool leader,
                                           double *encodeMs) {
  const fm::Model &model = session.model();
  const int64_t given = static_cast<int64_t>(images.size());
  bool prepended = false;
  auto text = fm::imagePromptText(model, prompt, given, "--image/--image-tensor",
                                  &prepended);
  if (!text)
    return text.status();
  if (prepended && leader)
    std::fprintf(stderr,
                 "fm-run: note: the prompt holds no %s marker: the %lld "
                 "image%s go%s before its text\n",
                 std::string(fm::kImageMarker).c_str(), static_cast<long long>(given),
                 given == 1 ? "" : "s", given == 1 ? "es" : "");
  if (given == 0)
    return text;
  const fm::ImageEncoderInfo &e = *model.imageEncoder();
  session.clearImages();
  for (const auto &image : images) {
    auto input = loadImage(e, image.first, image.second);
    if (!input)
      return input.status();
    auto t0 = std::chrono::steady_clock::now();
    auto encoded =
        session.encodeImage(input->data(), static_cast<int64_t>(input->size()));
    if (!encoded)
      return fm::Status::error(imageFlag(image) + ": " + encoded.message());
    *encodeMs += std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
  }
  return text;
}

} // namespace fmrun
