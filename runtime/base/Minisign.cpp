// minisign's key and signature formats over libsodium (fm/minisign.h).
#include "fm/minisign.h"

#include <sodium.h>

#include <cstring>
#include <vector>

namespace fm::minisign {

namespace {

constexpr char kUntrusted[] = "untrusted comment: ";
constexpr char kTrusted[] = "trusted comment: ";

// The binary layouts, packed as minisign writes them.
constexpr size_t kPublicBytes = 2 + 8 + 32;
constexpr size_t kSecretBytes = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32;
constexpr size_t kSignatureBytes = 2 + 8 + 64;

void init() {
  if (sodium_init() < 0)
    __builtin_trap(); // libsodium cannot work at all (no random source)
}

std::string base64(const uint8_t *data, size_t size) {
  std::string out(sodium_base64_ENCODED_LEN(size, sodium_base64_VARIANT_ORIGINAL),
                  '\0');
  sodium_bin2base64(out.data(), out.size(), data, size,
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

// Exactly `size` bytes from `text` (base64 with no other characters).
bool unbase64(const std::string &text, uint8_t *out, size_t size) {
  size_t got = 0;
  const char *end = nullptr;
  if (sodium_base642bin(out, size, text.data(), text.size(), nullptr, &got,
                        &end, sodium_base64_VARIANT_ORIGINAL) != 0)
    return false;
  return got == size && end == text.data() + text.size();
}

// The lines of `text`, without their line ends ("\n" or "\r\n").
std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos)
      nl = text.size();
    std::string line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    out.push_back(std::move(line));
    at = nl + 1;
  }
  return out;
}

bool startsWith(const std::string &s, const char *prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

// The base64 line of a key file: the second line after an untrusted
// comment, or the text itself when it is one line.
Expected<std::string> keyLine(const std::string &text, const std::string &name,
                              const char *what) {
  std::vector<std::string> ls = lines(text);
  while (!ls.empty() && ls.back().empty())
    ls.pop_back();
  if (ls.size() == 1 && !startsWith(ls[0], kUntrusted))
    return ls[0];
  if (ls.size() < 2 || !startsWith(ls[0], kUntrusted))
    return Status::error(name + ": not a minisign " + what +
                         " (expected an \"untrusted comment:\" line, then "
                         "the key in base64)");
  return ls[1];
}

} // namespace

KeyPair generateKeyPair() {
  init();
  KeyPair k;
  std::array<uint8_t, 32> pk;
  crypto_sign_keypair(pk.data(), k.secret.key.data());
  randombytes_buf(k.secret.id.data(), k.secret.id.size());
  k.pub.id = k.secret.id;
  k.pub.key = pk;
  return k;
}

std::string keyIdText(const KeyId &id) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s;
  for (size_t i = id.size(); i-- > 0;) {
    s += digits[id[i] >> 4];
    s += digits[id[i] & 15];
  }
  return s;
}

std::string publicKeyLine(const PublicKey &key) {
  uint8_t b[kPublicBytes];
  std::memcpy(b, "Ed", 2);
  std::memcpy(b + 2, key.id.data(), 8);
  std::memcpy(b + 10, key.key.data(), 32);
  return base64(b, sizeof(b));
}

std::string publicKeyFile(const PublicKey &key) {
  return std::string(kUntrusted) + "minisign public key " + keyIdText(key.id) +
         "\n" + publicKeyLine(key) + "\n";
}

std::string secretKeyFile(const SecretKey &key) {
  init();
  uint8_t b[kSecretBytes] = {};
  std::memcpy(b, "Ed", 2);
  // b[2..3]: kdf "\0\0" (not encrypted); salt and limits stay zero.
  std::memcpy(b + 4, "B2", 2);
  uint8_t *keynum = b + 6 + 32 + 8 + 8;
  std::memcpy(keynum, key.id.data(), 8);
  std::memcpy(keynum + 8, key.key.data(), 64);
  // chk = BLAKE2b-256("Ed" || id || sk), as minisign checks it.
  crypto_generichash_state h;
  crypto_generichash_init(&h, nullptr, 0, 32);
  crypto_generichash_update(&h, b, 2);
  crypto_generichash_update(&h, keynum, 8 + 64);
  crypto_generichash_final(&h, keynum + 8 + 64, 32);
  std::string out = std::string(kUntrusted) + "minisign secret key " +
                    keyIdText(key.id) + " (unencrypted)\n" +
                    base64(b, sizeof(b)) + "\n";
  sodium_memzero(b, sizeof(b));
  return out;
}

Expected<PublicKey> parsePublicKey(const std::string &text,
                                   const std::string &name) {
  auto line = keyLine(text, name, "public key");
  if (!line)
    return line.status();
  uint8_t b[kPublicBytes];
  if (!unbase64(*line, b, sizeof(b)))
    return Status::error(name + ": not a minisign public key (the key line "
                                "is not " +
                         std::to_string(kPublicBytes) + " bytes of base64)");
  if (std::memcmp(b, "Ed", 2) != 0)
    return Status::error(name + ": the public key is not an Ed25519 key "
                                "(algorithm '" +
                         std::string(reinterpret_cast<char *>(b), 2) + "')");
  PublicKey k;
  std::memcpy(k.id.data(), b + 2, 8);
  std::memcpy(k.key.data(), b + 10, 32);
  return k;
}

Expected<SecretKey> parseSecretKey(const std::string &text,
                                   const std::string &name) {
  init();
  auto line = keyLine(text, name, "secret key");
  if (!line)
    return line.status();
  uint8_t b[kSecretBytes];
  if (!unbase64(*line, b, sizeof(b)))
    return Status::error(name + ": not a minisign secret key (the key line "
                                "is not " +
                         std::to_string(kSecretBytes) + " bytes of base64)");
  if (std::memcmp(b, "Ed", 2) != 0 || std::memcmp(b + 4, "B2", 2) != 0)
    return Status::error(name + ": not an Ed25519 minisign secret key");
  if (b[2] != 0 || b[3] != 0) {
    sodium_memzero(b, sizeof(b));
    return Status::error(name + ": the secret key is encrypted with a "
                                "password; fmc reads unencrypted keys (make "
                                "one with `fmc keygen` or `minisign -G -W`)");
  }
  const uint8_t *keynum = b + 6 + 32 + 8 + 8;
  uint8_t chk[32];
  crypto_generichash_state h;
  crypto_generichash_init(&h, nullptr, 0, 32);
  crypto_generichash_update(&h, b, 2);
  crypto_generichash_update(&h, keynum, 8 + 64);
  crypto_generichash_final(&h, chk, 32);
  if (sodium_memcmp(chk, keynum + 8 + 64, 32) != 0) {
    sodium_memzero(b, sizeof(b));
    return Status::error(name + ": the secret key's checksum does not match "
                                "(the file is damaged)");
  }
  SecretKey k;
  std::memcpy(k.id.data(), keynum, 8);
  std::memcpy(k.key.data(), keynum + 8, 64);
  sodium_memzero(b, sizeof(b));
  return k;
}

std::string sign(const SecretKey &key, const uint8_t *message, size_t size,
                 const std::string &comment) {
  init();
  // One line: a line end would end the comment early in the file.
  std::string trustedComment = comment;
  for (char &c : trustedComment)
    if (c == '\n' || c == '\r')
      c = ' ';
  uint8_t hash[crypto_generichash_BYTES_MAX];
  crypto_generichash(hash, sizeof(hash), message, size, nullptr, 0);
  uint8_t b[kSignatureBytes];
  std::memcpy(b, "ED", 2);
  std::memcpy(b + 2, key.id.data(), 8);
  crypto_sign_detached(b + 10, nullptr, hash, sizeof(hash), key.key.data());
  std::vector<uint8_t> global(b + 10, b + 10 + 64);
  global.insert(global.end(), trustedComment.begin(), trustedComment.end());
  uint8_t g[64];
  crypto_sign_detached(g, nullptr, global.data(), global.size(),
                       key.key.data());
  return std::string(kUntrusted) + "signature from fmc, key " +
         keyIdText(key.id) + "\n" + base64(b, sizeof(b)) + "\n" + kTrusted +
         trustedComment + "\n" + base64(g, sizeof(g)) + "\n";
}

Expected<Signature> parseSignature(const std::string &text,
                                   const std::string &name) {
  std::vector<std::string> ls = lines(text);
  if (ls.size() < 4 || !startsWith(ls[0], kUntrusted) ||
      !startsWith(ls[2], kTrusted))
    return Status::error(name + ": not a minisign signature (expected an "
                                "untrusted comment, the signature, a trusted "
                                "comment and its signature)");
  uint8_t b[kSignatureBytes];
  if (!unbase64(ls[1], b, sizeof(b)))
    return Status::error(name + ": the signature line is not " +
                         std::to_string(kSignatureBytes) + " bytes of base64");
  Signature s;
  if (std::memcmp(b, "ED", 2) == 0)
    s.prehashed = true;
  else if (std::memcmp(b, "Ed", 2) == 0)
    s.prehashed = false;
  else
    return Status::error(name + ": unknown signature algorithm '" +
                         std::string(reinterpret_cast<char *>(b), 2) + "'");
  std::memcpy(s.id.data(), b + 2, 8);
  std::memcpy(s.signature.data(), b + 10, 64);
  s.trustedComment = ls[2].substr(std::strlen(kTrusted));
  if (!unbase64(ls[3], s.globalSignature.data(), s.globalSignature.size()))
    return Status::error(name + ": the trusted comment's signature is not 64 "
                                "bytes of base64");
  return s;
}

Status verify(const Signature &s, const PublicKey &key, const uint8_t *message,
              size_t size, const std::string &name) {
  init();
  if (s.id != key.id)
    return Status::error(name + ": signed by key " + keyIdText(s.id) +
                         ", not by key " + keyIdText(key.id));
  int bad;
  if (s.prehashed) {
    uint8_t hash[crypto_generichash_BYTES_MAX];
    crypto_generichash(hash, sizeof(hash), message, size, nullptr, 0);
    bad = crypto_sign_verify_detached(s.signature.data(), hash, sizeof(hash),
                                      key.key.data());
  } else {
    bad = crypto_sign_verify_detached(s.signature.data(), message, size,
                                      key.key.data());
  }
  if (bad != 0)
    return Status::error(name + ": the signature by key " + keyIdText(s.id) +
                         " does not match (the signed bytes or the signature "
                         "changed)");
  std::vector<uint8_t> global(s.signature.begin(), s.signature.end());
  global.insert(global.end(), s.trustedComment.begin(), s.trustedComment.end());
  if (crypto_sign_verify_detached(s.globalSignature.data(), global.data(),
                                  global.size(), key.key.data()) != 0)
    return Status::error(name + ": the trusted comment's signature by key " +
                         keyIdText(s.id) + " does not match");
  return Status::ok();
}

} // namespace fm::minisign
