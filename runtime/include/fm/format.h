// The .fmb file format's constants and digests, shared by the compiler's
// artifact writer and the runtime's loader (runtime/schema/fmb.fbs has the
// layout), so that both spell each one once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::format {

/// The FlatBuffers file identifier of every .fmb (all schema versions).
inline constexpr char kFileIdentifier[] = "FMB1";
/// The schema version this build writes and reads.
inline constexpr uint32_t kSchemaVersion = 2;
/// The data section and every weight in it start on multiples of this.
inline constexpr uint64_t kDataAlignment = 64;
/// Bytes of a digest (BLAKE2b-256).
inline constexpr size_t kDigestBytes = 32;

/// The FlatBuffers file identifier of every .fmba LoRA adapter
/// (runtime/schema/fmba.fbs; same layout rules as the .fmb), and the
/// adapter schema version this build writes and reads.
inline constexpr char kAdapterFileIdentifier[] = "FMBA";
inline constexpr uint32_t kAdapterSchemaVersion = 1;

/// `x` rounded up to kDataAlignment.
constexpr uint64_t alignData(uint64_t x) {
  return (x + kDataAlignment - 1) & ~(kDataAlignment - 1);
}
/// Where the data section starts in a file whose FlatBuffer (without its
/// 4-byte size prefix) has `flatbufferBytes` bytes.
constexpr uint64_t dataStart(uint64_t flatbufferBytes) {
  return alignData(4 + flatbufferBytes);
}

using Digest = std::array<uint8_t, kDigestBytes>;

/// Incremental BLAKE2b-256 (libsodium's crypto_generichash without a key).
class Hasher {
public:
  Hasher();
  void update(const void *data, size_t size);
  /// The digest of everything given so far; the hasher is spent after it.
  Digest finish();

private:
  alignas(64) unsigned char state_[384];
};

/// BLAKE2b-256 of `size` bytes.
Digest digest(const void *data, size_t size);

/// The program digest of a file: BLAKE2b-256 of its first `headBytes` bytes
/// (size prefix, FlatBuffer, padding up to the data section) with the
/// kDigestBytes bytes at `digestOffset` (the program_digest field) taken
/// as zeros.
Digest programDigest(const uint8_t *head, size_t headBytes,
                     size_t digestOffset);

/// Lower-case hex, 64 characters.
std::string hex(const Digest &digest);

} // namespace fm::format
