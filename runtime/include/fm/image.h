// Image files into encoder input tensors: PNG and JPEG decoding, PIL's
// Image.resize, normalization to a [3, H, W] float32 tensor (docs/vit.md).
//
//   fm::image::Preprocess p;          // from the fm_vit config
//   p.size = 448;
//   auto x = fm::image::preprocessImageFile("photo.jpg", p);
//   if (!x) { fprintf(stderr, "%s\n", x.message().c_str()); ... }
//
// The result equals, pixel for pixel, what the numpy reference does with
// PIL: Image.open(f).convert("RGB").resize((size, size), BICUBIC), / 255,
// (x - mean) / std. Errors name the file and say what is wrong with it.
#pragma once

#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fm {
struct ImageEncoderInfo; // fm/runtime.h
}

namespace fm::image {

/// 8-bit RGB pixels, row-major, 3 bytes per pixel: what PIL's
/// convert("RGB") holds (gray replicated, palettes expanded, alpha dropped,
/// 16-bit samples cut to their high byte; 16-bit grayscale clipped to 255,
/// as PIL's "I" mode converts).
struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

/// PIL's resampling filters that the fm_vit config names (`resample`).
enum class Resample { Bicubic, Bilinear };

/// "bicubic" or "bilinear".
const char *resampleName(Resample r);
/// Resample from its config name; an error names the value and the choices.
Expected<Resample> parseResample(const std::string &name);

struct DecodeLimits {
  /// Larger images are refused before any pixel is decoded (a 12-byte PNG
  /// header can claim 2^31 x 2^31 pixels).
  int64_t maxPixels = int64_t(1) << 26;
};

/// Decodes a PNG or JPEG held in memory; `name` (a path, usually) names it
/// in errors. Other formats, corrupt or truncated files, CMYK JPEGs and
/// images over the limit are errors.
Expected<RgbImage> decodeImage(const uint8_t *data, size_t size,
                               const std::string &name,
                               const DecodeLimits &limits = {});

/// Reads and decodes the PNG or JPEG file at `path`.
Expected<RgbImage> readImageFile(const std::string &path,
                                 const DecodeLimits &limits = {});

/// PIL's Image.resize of an 8-bit RGB image to width x height: a separable
/// convolution, horizontal pass first, whose filter support grows with the
/// downscale factor (antialiasing); 22-bit fixed-point coefficients; each
/// pass rounded and clipped to 8 bits. The same size returns a copy.
Expected<RgbImage> resize(const RgbImage &image, int64_t width, int64_t height,
                          Resample filter);

struct Preprocess {
  int64_t size = 0; ///< image_size: the output is [3, size, size]
  Resample resample = Resample::Bicubic;
  /// Applied after pixels are scaled to [0, 1]: (x − mean[c]) / std[c].
  double mean[3] = {0.0, 0.0, 0.0};
  double std[3] = {1.0, 1.0, 1.0};
};

/// [3][height][width] float32: (pixel / 255 − mean[c]) / std[c], computed
/// in double (as numpy does) and rounded once.
std::vector<float> toTensor(const RgbImage &image, const Preprocess &p);

/// The preprocessing an image encoder declares (Model::imageEncoder()): its
/// size, filter, mean and std. An error when it takes no square RGB image
/// (such an encoder takes tensors only).
Expected<Preprocess> preprocessFor(const ImageEncoderInfo &encoder);

/// readImageFile, resize to p.size², toTensor.
Expected<std::vector<float>> preprocessImageFile(const std::string &path,
                                                 const Preprocess &p);

} // namespace fm::image
