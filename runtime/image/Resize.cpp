// PIL's Image.resize for 8-bit RGB images (Pillow src/libImaging/
// Resample.c, followed step by step so that the results agree to the bit):
// coefficients per output pixel from the filter with its support scaled by
// the downscale factor, normalized to sum 1, rounded to 22-bit fixed point;
// a horizontal pass into an 8-bit intermediate image, then a vertical pass,
// each sum rounded (+ 2^21) and clipped to 0..255.
#include "fm/image.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace fm::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  x = x < 0.0 ? -x : x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5; // Keys' cubic, as PIL
  x = x < 0.0 ? -x : x;
  if (x < 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0)
    return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

/// Output pixel i reads inputs [first[i], first[i] + count[i]) with weights
/// weights[i * taps + j] (fixed point).
struct Coefficients {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

Coefficients coefficients(int64_t inSize, int64_t outSize, Resample filter) {
  const double support0 = filter == Resample::Bicubic ? 2.0 : 1.0;
  const double scale = double(inSize) / double(outSize);
  const double filterScale = scale < 1.0 ? 1.0 : scale;
  const double support = support0 * filterScale;
  Coefficients c;
  c.taps = int(std::ceil(support)) * 2 + 1;
  c.first.resize(outSize);
  c.count.resize(outSize);
  c.weights.assign(size_t(outSize) * c.taps, 0);
  std::vector<double> k(c.taps);
  for (int64_t i = 0; i < outSize; ++i) {
    const double center = (double(i) + 0.5) * scale;
    const double ss = 1.0 / filterScale;
    int xmin = int(center - support + 0.5);
    xmin = xmin < 0 ? 0 : xmin;
    int xmax = int(center + support + 0.5);
    xmax = xmax > inSize ? int(inSize) : xmax;
    xmax -= xmin;
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double arg = (x + xmin - center + 0.5) * ss;
      k[x] = filter == Resample::Bicubic ? bicubic(arg) : bilinear(arg);
      sum += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = sum != 0.0 ? k[x] / sum : k[x];
      c.weights[i * c.taps + x] =
          v < 0 ? int32_t(-0.5 + v * (1 << kPrecisionBits))
                : int32_t(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[i] = xmin;
    c.count[i] = xmax;
  }
  return c;
}

uint8_t clip8(int v) {
  const int s = v >> kPrecisionBits; // arithmetic: floor
  return static_cast<uint8_t>(s < 0 ? 0 : (s > 255 ? 255 : s));
}

RgbImage horizontal(const RgbImage &in, int64_t width, Resample filter) {
  const Coefficients c = coefficients(in.width, width, filter);
  RgbImage out;
  out.width = width;
  out.height = in.height;
  out.pixels.resize(size_t(width) * in.height * 3);
  for (int64_t y = 0; y < in.height; ++y) {
    const uint8_t *row = in.pixels.data() + y * in.width * 3;
    uint8_t *dst = out.pixels.data() + y * width * 3;
    for (int64_t x = 0; x < width; ++x) {
      const int32_t *k = c.weights.data() + x * c.taps;
      const uint8_t *src = row + c.first[x] * 3;
      int s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int j = 0; j < c.count[x]; ++j) {
        s0 += src[3 * j] * k[j];
        s1 += src[3 * j + 1] * k[j];
        s2 += src[3 * j + 2] * k[j];
      }
      dst[3 * x] = clip8(s0);
      dst[3 * x + 1] = clip8(s1);
      dst[3 * x + 2] = clip8(s2);
    }
  }
  return out;
}

RgbImage vertical(const RgbImage &in, int64_t height, Resample filter) {
  const Coefficients c = coefficients(in.height, height, filter);
  RgbImage out;
  out.width = in.width;
  out.height = height;
  out.pixels.resize(size_t(in.width) * height * 3);
  const int64_t stride = in.width * 3;
  for (int64_t y = 0; y < height; ++y) {
    const int32_t *k = c.weights.data() + y * c.taps;
    const uint8_t *src = in.pixels.data() + c.first[y] * stride;
    uint8_t *dst = out.pixels.data() + y * stride;
    for (int64_t i = 0; i < stride; ++i) {
      int s = 1 << (kPrecisionBits - 1);
      for (int j = 0; j < c.count[y]; ++j)
        s += src[j * stride + i] * k[j];
      dst[i] = clip8(s);
    }
  }
  return out;
}

} // namespace

Expected<RgbImage> resize(const RgbImage &image, int64_t width, int64_t height,
                          Resample filter) {
  if (width < 1 || height < 1)
    return Status::error("resize to " + std::to_string(width) + " x " +
                         std::to_string(height) + ": sizes must be positive");
  if (image.width < 1 || image.height < 1 ||
      int64_t(image.pixels.size()) != image.width * image.height * 3)
    return Status::error("resize: the image holds no " +
                         std::to_string(image.width) + " x " +
                         std::to_string(image.height) + " RGB pixels");
  // PIL returns a copy for the same size, and skips a pass whose size does
  // not change.
  RgbImage out = image;
  if (width != image.width)
    out = horizontal(out, width, filter);
  if (height != image.height)
    out = vertical(out, height, filter);
  return out;
}

} // namespace fm::image
