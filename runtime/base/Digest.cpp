// BLAKE2b-256 digests of artifacts over libsodium (see fm/format.h).
#include "fm/format.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace fm::format {

static_assert(sizeof(crypto_generichash_state) <= sizeof(Hasher),
              "Hasher's state buffer is too small for libsodium's");
static_assert(kDigestBytes == crypto_generichash_BYTES,
              "the digest is libsodium's default generichash size");

Hasher::Hasher() {
  // Thread-safe and idempotent; BLAKE2b needs no random source, but
  // libsodium wants to pick its implementation (SIMD) first.
  if (sodium_init() < 0)
    __builtin_trap();
  crypto_generichash_init(
      reinterpret_cast<crypto_generichash_state *>(state_), nullptr, 0,
      kDigestBytes);
}

void Hasher::update(const void *data, size_t size) {
  crypto_generichash_update(
      reinterpret_cast<crypto_generichash_state *>(state_),
      static_cast<const unsigned char *>(data), size);
}

Digest Hasher::finish() {
  Digest d{};
  crypto_generichash_final(
      reinterpret_cast<crypto_generichash_state *>(state_), d.data(), d.size());
  return d;
}

Digest digest(const void *data, size_t size) {
  Hasher h;
  h.update(data, size);
  return h.finish();
}

Digest programDigest(const uint8_t *head, size_t headBytes,
                     size_t digestOffset) {
  Hasher h;
  const size_t begin = std::min(digestOffset, headBytes);
  const size_t end = std::min(digestOffset + kDigestBytes, headBytes);
  h.update(head, begin);
  static const uint8_t zeros[kDigestBytes] = {};
  h.update(zeros, end - begin);
  h.update(head + end, headBytes - end);
  return h.finish();
}

std::string hex(const Digest &digest) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * digest.size());
  for (uint8_t b : digest) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

} // namespace fm::format
