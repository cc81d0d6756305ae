// JPEG through libjpeg(-turbo), with the decoder settings PIL uses (the
// library's defaults: accurate integer IDCT, fancy upsampling), so that the
// pixels are the ones PIL gets from the same library. Gray JPEGs are
// replicated to RGB; 4-component (CMYK/YCCK) JPEGs are refused.
#include "Decoders.h"

#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <new>
#include <vector>

namespace fm::image::detail {
namespace {

// A progressive file may hold thousands of tiny scans that each make the
// decoder pass over the whole image; real encoders write about ten.
constexpr int kMaxScans = 1000;

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64];
  bool truncated;
};

[[noreturn]] void onError(j_common_ptr cinfo) {
  auto *e = reinterpret_cast<ErrorManager *>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings are not printed. The one that matters: at the end of the data
// libjpeg pads with a fake end marker and decodes gray; PIL refuses such a
// file ("image file is truncated"), and so does this.
void onMessage(j_common_ptr cinfo, int level) {
  auto *e = reinterpret_cast<ErrorManager *>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF)
    e->truncated = true;
}

void onProgress(j_common_ptr cinfo) {
  auto *d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto *e = reinterpret_cast<ErrorManager *>(cinfo->err);
    std::snprintf(e->message, sizeof(e->message),
                  "more than %d progressive scans", kMaxScans);
    std::longjmp(e->jump, 1);
  }
}

// As in DecodePng.cpp: what a longjmp may leave behind lives in the
// caller's frame.
struct State {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  std::vector<uint8_t> samples;
  JDIMENSION width = 0, height = 0;
  int components = 0;
};

bool readPixels(State &s, const uint8_t *data, size_t size,
                const DecodeLimits &limits) {
  if (setjmp(s.err.jump))
    return false;
  jpeg_mem_src(&s.cinfo, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(&s.cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(s.err.message, sizeof(s.err.message), "no image in the file");
    return false;
  }
  s.width = s.cinfo.image_width;
  s.height = s.cinfo.image_height;
  if (s.cinfo.num_components == 1) {
    s.cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (s.cinfo.num_components == 3) {
    s.cinfo.out_color_space = JCS_RGB;
  } else {
    std::snprintf(s.err.message, sizeof(s.err.message),
                  "%d-component JPEG (%s): only gray and 3-channel color are "
                  "supported",
                  s.cinfo.num_components,
                  s.cinfo.jpeg_color_space == JCS_CMYK   ? "CMYK"
                  : s.cinfo.jpeg_color_space == JCS_YCCK ? "YCCK"
                                                         : "unknown color space");
    return false;
  }
  if (int64_t(s.width) * int64_t(s.height) > limits.maxPixels) {
    std::snprintf(s.err.message, sizeof(s.err.message),
                  "%u x %u pixels is over the limit of %lld", s.width, s.height,
                  static_cast<long long>(limits.maxPixels));
    return false;
  }
  // libjpeg's own buffers (a progressive image's coefficients are 2 bytes
  // per sample) stay within a bound of the pixel limit.
  s.cinfo.mem->max_memory_to_use = static_cast<long>(16 * limits.maxPixels + (8 << 20));
  jpeg_start_decompress(&s.cinfo);
  s.components = s.cinfo.output_components;
  const size_t rowBytes = size_t(s.cinfo.output_width) * s.components;
  s.samples.resize(rowBytes * s.cinfo.output_height);
  while (s.cinfo.output_scanline < s.cinfo.output_height) {
    JSAMPROW row = s.samples.data() + rowBytes * s.cinfo.output_scanline;
    if (jpeg_read_scanlines(&s.cinfo, &row, 1) != 1)
      break;
  }
  if (s.err.truncated || s.cinfo.output_scanline < s.cinfo.output_height) {
    std::snprintf(s.err.message, sizeof(s.err.message),
                  "the file ends inside the image (truncated)");
    return false;
  }
  return true;
}

} // namespace

bool decodeJpeg(const uint8_t *data, size_t size, const DecodeLimits &limits,
                RgbImage &image, std::string &error) {
  State s;
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = &onError;
  s.err.pub.emit_message = &onMessage;
  s.err.message[0] = '\0';
  s.err.truncated = false;
  jpeg_create_decompress(&s.cinfo);
  s.progress.progress_monitor = &onProgress;
  s.cinfo.progress = &s.progress;
  bool ok = false;
  try {
    ok = readPixels(s, data, size, limits);
  } catch (const std::bad_alloc &) {
    std::snprintf(s.err.message, sizeof(s.err.message),
                  "out of memory for %u x %u pixels", s.width, s.height);
  }
  jpeg_destroy_decompress(&s.cinfo);
  if (!ok) {
    error = std::string("corrupt or unsupported JPEG: ") + s.err.message;
    return false;
  }
  image.width = s.width;
  image.height = s.height;
  image.pixels.resize(size_t(s.width) * s.height * 3);
  const size_t pixels = size_t(s.width) * s.height;
  if (s.components == 3) {
    std::memcpy(image.pixels.data(), s.samples.data(), pixels * 3);
  } else {
    for (size_t i = 0; i < pixels; ++i)
      image.pixels[3 * i] = image.pixels[3 * i + 1] = image.pixels[3 * i + 2] =
          s.samples[i];
  }
  return true;
}

} // namespace fm::image::detail
