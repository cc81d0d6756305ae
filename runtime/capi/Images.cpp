// fm.h: images into a model's image encoder (a VLM's next prefill takes
// their tokens).
#include "capi/Objects.h"

#include "fm/image.h"

using fm::capi::Call;
using fm::capi::guarded;
using fm::capi::Kind;

namespace {

// Runs the encoder on `count` floats and hands out its tokens: in a chat
// the conversation keeps them for its user turns' markers, otherwise the
// session for its next prefill.
fm_status encode(Call &call, fm_session *session, const float *input, size_t count,
                 const float **tokens, int64_t *rows, int64_t *width) {
  const int64_t n = static_cast<int64_t>(count);
  fm::Expected<fm::ImageTokens> out = session->chat
                                          ? session->chat->addImage(input, n)
                                          : session->session->encodeImage(input, n);
  if (!out)
    return call.fail(out.status());
  if (tokens)
    *tokens = out->data;
  if (rows)
    *rows = out->rows;
  if (width)
    *width = out->width;
  return FM_STATUS_OK;
}

// The session's model has an image encoder.
fm_status needEncoder(Call &call, const fm_session *session) {
  const fm::Model &m = *session->model;
  if (!m.imageEncoder())
    return call.fail(FM_STATUS_UNSUPPORTED,
                     m.name() + " has no image encoder (no encode_image program)");
  return FM_STATUS_OK;
}

} // namespace

extern "C" {

fm_status fm_session_add_image_file(fm_session *session, const char *path,
                                    const float **tokens, int64_t *rows, int64_t *width) {
  return guarded("fm_session_add_image_file", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!path)
      return call.null("path");
    if (fm_status s = needEncoder(call, session))
      return s;
    auto p = fm::image::preprocessFor(*session->model->imageEncoder());
    if (!p)
      return call.fail(FM_STATUS_UNSUPPORTED,
                       p.message() + ": give it with fm_session_add_image_tensor");
    auto input = fm::image::preprocessImageFile(path, *p);
    if (!input)
      return call.fail(input.status(), FM_STATUS_LOAD_FAILED);
    return encode(call, session, input->data(), input->size(), tokens, rows, width);
  });
}

fm_status fm_session_add_image_tensor(fm_session *session, const float *tensor,
                                      size_t count, const float **tokens, int64_t *rows,
                                      int64_t *width) {
  return guarded("fm_session_add_image_tensor", [&](Call &call) {
    if (fm_status s = call.handle(session, Kind::Session, "session"))
      return s;
    if (!tensor)
      return call.null("tensor");
    if (fm_status s = needEncoder(call, session))
      return s;
    return encode(call, session, tensor, count, tokens, rows, width);
  });
}

} // extern "C"
