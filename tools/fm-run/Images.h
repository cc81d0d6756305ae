// fm-run's images (--image, --image-tensor): loading them as the image
// encoder's input, and placing them at a text prompt's `<image>` markers.
#pragma once

#include "fm/runtime.h"
#include "fm/status.h"

#include <string>
#include <utility>
#include <vector>

namespace fmrun {

/// --image and --image-tensor in command-line order: (is a tensor, path).
using ImageArgs = std::vector<std::pair<bool, std::string>>;

/// An image as the encoder's input tensor: a PNG/JPEG file preprocessed as
/// the artifact says, or a [channels, height, width] float32 .npy as is.
fm::Expected<std::vector<float>> loadImage(const fm::ImageEncoderInfo &e,
                                           bool tensor, const std::string &path);

/// "--image a.png" / "--image-tensor x.npy", for messages.
std::string imageFlag(const std::pair<bool, std::string> &image);

/// --prompt's text for a VLM: `images.size()` must equal the `<image>`
/// markers, which then become the image token's text once per image token
/// (fm/image_prompt.h). With images and no marker, the images go first (as
/// llava's and llama.cpp's mtmd CLIs place them), with a note on stderr.
/// Encodes the images, in order, into the session for the next prefill
/// (adding to *encodeMs). Without images and markers the text is as given;
/// a model without images keeps its markers as text.
fm::Expected<std::string> promptWithImages(const std::string &prompt,
                                           const ImageArgs &images,
                                           fm::Session &session, bool leader,
                                           double *encodeMs);

} // namespace fmrun
