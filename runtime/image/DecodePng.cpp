// PNG through libpng, converted as PIL's convert("RGB") does: palettes and
// 1/2/4-bit gray expanded (scaled to 0..255), 16-bit samples cut to their
// high byte, 16-bit gray (PIL's "I" mode) clipped to 255, alpha dropped,
// no gamma or color management (PIL applies none).
#include "Decoders.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace fm::image::detail {
namespace {

struct Input {
  const uint8_t *data;
  size_t size, pos;
};

// Everything a longjmp out of libpng may leave behind lives here, in the
// caller's frame: nothing with a destructor is skipped by the jump.
struct State {
  png_structp png = nullptr;
  png_infop info = nullptr;
  Input input{};
  char message[256] = {};
  std::vector<uint8_t> samples;
  std::vector<png_bytep> rows;
  png_uint_32 width = 0, height = 0;
  int channels = 0, bitDepth = 0;
  bool gray16 = false;
};

void readData(png_structp png, png_bytep out, png_size_t n) {
  auto *in = static_cast<Input *>(png_get_io_ptr(png));
  if (n > in->size - in->pos)
    png_error(png, "the file ends inside the image (truncated)");
  std::memcpy(out, in->data + in->pos, n);
  in->pos += n;
}

void onError(png_structp png, png_const_charp message) {
  auto *s = static_cast<State *>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof(s->message), "%s", message);
  png_longjmp(png, 1);
}

// Warnings (a bad ancillary chunk, an sRGB profile libpng dislikes) leave
// the pixels intact; PIL ignores them too.
void onWarning(png_structp, png_const_charp) {}

/// Reads the image into s.samples; false with s.message on error.
bool readPixels(State &s, const DecodeLimits &limits) {
  if (setjmp(png_jmpbuf(s.png)))
    return false;
  png_set_read_fn(s.png, &s.input, &readData);
  png_read_info(s.png, s.info);
  int colorType = 0, interlace = 0;
  png_get_IHDR(s.png, s.info, &s.width, &s.height, &s.bitDepth, &colorType,
               &interlace, nullptr, nullptr);
  if (int64_t(s.width) * int64_t(s.height) > limits.maxPixels) {
    std::snprintf(s.message, sizeof(s.message),
                  "%u x %u pixels is over the limit of %lld", s.width, s.height,
                  static_cast<long long>(limits.maxPixels));
    return false;
  }
  if (colorType == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(s.png);
  if (colorType == PNG_COLOR_TYPE_GRAY && s.bitDepth < 8)
    png_set_expand_gray_1_2_4_to_8(s.png);
  s.gray16 = colorType == PNG_COLOR_TYPE_GRAY && s.bitDepth == 16;
  if (s.bitDepth == 16 && !s.gray16)
    png_set_strip_16(s.png); // the high byte, as PIL's "RGB;16B" rawmodes
  png_set_interlace_handling(s.png);
  png_read_update_info(s.png, s.info);
  s.channels = png_get_channels(s.png, s.info);
  const size_t rowBytes = png_get_rowbytes(s.png, s.info);
  s.samples.resize(rowBytes * s.height);
  s.rows.resize(s.height);
  for (png_uint_32 y = 0; y < s.height; ++y)
    s.rows[y] = s.samples.data() + y * rowBytes;
  png_read_image(s.png, s.rows.data());
  return true;
}

} // namespace

bool decodePng(const uint8_t *data, size_t size, const DecodeLimits &limits,
               RgbImage &image, std::string &error) {
  State s;
  s.input = {data, size, 0};
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, &onError, &onWarning);
  if (s.png)
    s.info = png_create_info_struct(s.png);
  if (!s.png || !s.info) {
    png_destroy_read_struct(&s.png, nullptr, nullptr);
    error = "out of memory for the PNG decoder";
    return false;
  }
  bool ok = false;
  try {
    ok = readPixels(s, limits);
  } catch (const std::bad_alloc &) {
    std::snprintf(s.message, sizeof(s.message), "out of memory for %u x %u pixels",
                  s.width, s.height);
  }
  png_destroy_read_struct(&s.png, &s.info, nullptr);
  if (!ok) {
    error = std::string("corrupt PNG: ") + s.message;
    return false;
  }
  if (s.channels < 1 || s.channels > 4) {
    error = "PNG with " + std::to_string(s.channels) + " channels";
    return false;
  }
  image.width = s.width;
  image.height = s.height;
  image.pixels.resize(size_t(s.width) * s.height * 3);
  uint8_t *out = image.pixels.data();
  for (png_uint_32 y = 0; y < s.height; ++y) {
    const uint8_t *in = s.rows[y];
    for (png_uint_32 x = 0; x < s.width; ++x, out += 3) {
      if (s.gray16) {
        const unsigned v = (unsigned(in[2 * x]) << 8) | in[2 * x + 1];
        out[0] = out[1] = out[2] = static_cast<uint8_t>(v > 255 ? 255 : v);
      } else if (s.channels <= 2) { // gray, gray + alpha
        out[0] = out[1] = out[2] = in[x * s.channels];
      } else { // RGB, RGBA
        std::memcpy(out, in + x * s.channels, 3);
      }
    }
  }
  return true;
}

} // namespace fm::image::detail
