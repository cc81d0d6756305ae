// Recognizes an image file by its signature and hands it to the PNG or
// JPEG decoder; reads files; names the file in every error.
#include "Decoders.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace fm::image {
namespace {

bool startsWith(const uint8_t *data, size_t size, const char *magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

/// Names a format we recognize but do not decode, or returns null.
const char *otherFormat(const uint8_t *data, size_t size) {
  if (startsWith(data, size, "GIF8", 4))
    return "GIF";
  if (startsWith(data, size, "BM", 2))
    return "BMP";
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 &&
      std::memcmp(data + 8, "WEBP", 4) == 0)
    return "WebP";
  if (startsWith(data, size, "II*\0", 4) || startsWith(data, size, "MM\0*", 4))
    return "TIFF";
  if (size >= 12 && std::memcmp(data + 4, "ftyp", 4) == 0)
    return "HEIF/AVIF";
  return nullptr;
}

} // namespace

const char *resampleName(Resample r) {
  return r == Resample::Bilinear ? "bilinear" : "bicubic";
}

Expected<Resample> parseResample(const std::string &name) {
  if (name == "bicubic")
    return Resample::Bicubic;
  if (name == "bilinear")
    return Resample::Bilinear;
  return Status::error("resample '" + name +
                       "' is not supported (bicubic or bilinear)");
}

Expected<RgbImage> decodeImage(const uint8_t *data, size_t size,
                               const std::string &name,
                               const DecodeLimits &limits) {
  if (size == 0)
    return Status::error(name + ": the file is empty");
  RgbImage image;
  std::string error;
  bool ok;
  if (startsWith(data, size, "\x89PNG\r\n\x1a\n", 8)) {
    ok = detail::decodePng(data, size, limits, image, error);
  } else if (startsWith(data, size, "\xff\xd8\xff", 3)) {
    ok = detail::decodeJpeg(data, size, limits, image, error);
  } else if (const char *other = otherFormat(data, size)) {
    return Status::error(name + ": " + other +
                         " images are not supported (PNG and JPEG are)");
  } else {
    char start[64];
    std::snprintf(start, sizeof(start), "%02x %02x %02x %02x", data[0],
                  size > 1 ? data[1] : 0, size > 2 ? data[2] : 0,
                  size > 3 ? data[3] : 0);
    return Status::error(name + ": not a PNG or JPEG file (it starts with bytes " +
                         start + ")");
  }
  if (!ok)
    return Status::error(name + ": " + error);
  if (image.width <= 0 || image.height <= 0)
    return Status::error(name + ": the image has no pixels");
  return image;
}

Expected<RgbImage> readImageFile(const std::string &path,
                                 const DecodeLimits &limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open the image file: " +
                         std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    return Status::error(path + ": cannot read the image file");
  return decodeImage(bytes.data(), bytes.size(), path, limits);
}

} // namespace fm::image
