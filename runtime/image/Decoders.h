// Internal: the format decoders that Decode.cpp dispatches to by the
// file's signature. Each returns the image converted as PIL's
// convert("RGB") would, or an error message without the file's name
// (Decode.cpp prefixes it).
#pragma once

#include "fm/image.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::image::detail {

/// Out: `image` on success; otherwise false with `error` set.
bool decodePng(const uint8_t *data, size_t size, const DecodeLimits &limits,
               RgbImage &image, std::string &error);
bool decodeJpeg(const uint8_t *data, size_t size, const DecodeLimits &limits,
                RgbImage &image, std::string &error);

} // namespace fm::image::detail
