// Ed25519 keys and signatures in minisign's file formats (libsodium), so that
// keys made by `fmc keygen` work with `minisign -S`, keys made by
// `minisign -G -W` work with `fmc compile --sign`, and `minisign -V`
// verifies what fmc signs. https://jedisct1.github.io/minisign/
//
//   public key file:  "untrusted comment: ...\n" base64("Ed" id[8] pk[32])
//   secret key file:  "untrusted comment: ...\n" base64("Ed" kdf[2] "B2"
//                     salt[32] ops[8] mem[8] id[8] sk[64] chk[32]); only
//                     unencrypted keys (kdf "\0\0", `minisign -G -W`)
//   signature file:   "untrusted comment: ...\n" base64("ED" id[8] sig[64])
//                     "\ntrusted comment: TEXT\n" base64(global[64]) "\n"
//                     where sig signs BLAKE2b-512(message) and global signs
//                     sig || TEXT.
#pragma once

#include "fm/status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::minisign {

using KeyId = std::array<uint8_t, 8>;

struct PublicKey {
  KeyId id{};
  std::array<uint8_t, 32> key{};
};

struct SecretKey {
  KeyId id{};
  std::array<uint8_t, 64> key{}; // libsodium's: seed, then the public key
};

struct KeyPair {
  SecretKey secret;
  PublicKey pub;
};

/// A new key pair with a random key id.
KeyPair generateKeyPair();

/// The key id as minisign prints it: 16 upper-case hex digits of the id
/// read as a little-endian 64-bit number.
std::string keyIdText(const KeyId &id);

/// The text of a public key file, and its base64 line alone (what
/// `minisign -P` takes).
std::string publicKeyFile(const PublicKey &key);
std::string publicKeyLine(const PublicKey &key);
/// The text of an unencrypted secret key file.
std::string secretKeyFile(const SecretKey &key);

/// Parses a public key file's text, or just its base64 line. Messages start
/// with `name` (the file).
Expected<PublicKey> parsePublicKey(const std::string &text,
                                   const std::string &name);
/// Parses an unencrypted secret key file's text; an encrypted one is
/// refused with a message that says how to make an unencrypted one.
Expected<SecretKey> parseSecretKey(const std::string &text,
                                   const std::string &name);

/// A signature file's text: `key`'s prehashed signature of `size` bytes at
/// `message` with `trustedComment` (one line) signed too. Deterministic:
/// the same key, message and comment give the same text.
std::string sign(const SecretKey &key, const uint8_t *message, size_t size,
                 const std::string &trustedComment);

struct Signature {
  KeyId id{};
  bool prehashed = true; // "ED"; false: legacy "Ed" (the message itself)
  std::array<uint8_t, 64> signature{};
  std::string trustedComment;
  std::array<uint8_t, 64> globalSignature{};
};

/// Parses a signature file's text.
Expected<Signature> parseSignature(const std::string &text,
                                   const std::string &name);

/// Whether `signature` is `key`'s signature of the message, trusted comment
/// included. Messages start with `name`.
Status verify(const Signature &signature, const PublicKey &key,
              const uint8_t *message, size_t size, const std::string &name);

} // namespace fm::minisign
