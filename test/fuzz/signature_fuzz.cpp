// libFuzzer target: what a signed artifact's loader reads from outside
// bytes (fm/artifact_signature.h, fm/minisign.h): the trailer records after
// the data section, the minisign signature in one, and public and secret
// key files. Any bytes must be refused with a sentence or parse; a parsed
// signature never verifies over another statement, and a secret key that
// parses signs text that parses back.
#include "fm/artifact_signature.h"
#include "fm/minisign.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

const fm::minisign::KeyPair &keys() {
  static const fm::minisign::KeyPair k = fm::minisign::generateKeyPair();
  return k;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  const std::string statement = "fmc artifact signature v1\n";
  switch (data[0] % 4) {
  case 0: { // trailer records, each signature checked against our key
    auto records = fm::format::readTrailer(data + 1, size - 1, 4096, "f.fmb");
    if (!records)
      return 0;
    for (const fm::format::TrailerRecord &r : *records) {
      if (r.offset < 4096 || r.offset - 4096 >= size)
        std::abort();
      auto s = fm::minisign::parseSignature(r.payload, "f.fmb");
      if (s && fm::minisign::verify(*s, keys().pub,
                                    reinterpret_cast<const uint8_t *>(statement.data()),
                                    statement.size(), "f.fmb"))
        std::abort(); // a forgery of our fresh key
    }
    return 0;
  }
  case 1:
    (void)fm::minisign::parsePublicKey(text, "k.pub");
    return 0;
  case 2: {
    auto secret = fm::minisign::parseSecretKey(text, "k.key");
    if (!secret)
      return 0;
    const std::string sig =
        fm::minisign::sign(*secret, reinterpret_cast<const uint8_t *>(text.data()),
                           text.size(), text.substr(0, 64));
    if (!fm::minisign::parseSignature(sig, "s"))
      std::abort();
    return 0;
  }
  default: {
    auto s = fm::minisign::parseSignature(text, "s.minisig");
    if (s && fm::minisign::verify(*s, keys().pub,
                                  reinterpret_cast<const uint8_t *>(statement.data()),
                                  statement.size(), "s"))
      std::abort();
    return 0;
  }
  }
}
