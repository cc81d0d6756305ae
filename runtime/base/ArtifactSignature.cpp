// The artifact signature's statement and trailer (fm/artifact_signature.h).
#include "fm/artifact_signature.h"

#include <cstring>

namespace fm::format {

std::string signedStatement(const SignedDigests &d) {
  std::string s = "fmc artifact signature v1\n";
  s += "program_digest blake2b-256 " + hex(d.program) + "\n";
  s += "weights_digest blake2b-256 " + hex(d.weights) + "\n";
  if (d.source)
    s += "source_digest blake2b-256 " + hex(*d.source) + "\n";
  return s;
}

std::vector<uint8_t> trailerRecord(uint32_t kind, const std::string &payload) {
  std::vector<uint8_t> r(kTrailerHeaderBytes, 0);
  std::memcpy(r.data(), kTrailerMagic, sizeof(kTrailerMagic));
  // Little-endian fields, as the rest of the file.
  for (int i = 0; i < 4; ++i)
    r[8 + i] = static_cast<uint8_t>(kind >> (8 * i));
  const uint64_t bytes = payload.size();
  for (int i = 0; i < 8; ++i)
    r[16 + i] = static_cast<uint8_t>(bytes >> (8 * i));
  r.insert(r.end(), payload.begin(), payload.end());
  r.resize((r.size() + 7) & ~size_t(7), 0);
  return r;
}

Expected<std::vector<TrailerRecord>> readTrailer(const uint8_t *tail,
                                                 uint64_t size,
                                                 uint64_t fileOffset,
                                                 const std::string &name) {
  std::vector<TrailerRecord> out;
  uint64_t at = 0;
  while (at < size) {
    const std::string where = name + ": trailer record " +
                              std::to_string(out.size()) + " at byte " +
                              std::to_string(fileOffset + at);
    if (size - at < kTrailerHeaderBytes ||
        std::memcmp(tail + at, kTrailerMagic, sizeof(kTrailerMagic)) != 0)
      return Status::error(where + ": not a trailer record (the bytes after "
                                   "the data section are damaged)");
    uint32_t kind = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < 4; ++i)
      kind |= uint32_t(tail[at + 8 + i]) << (8 * i);
    for (int i = 0; i < 8; ++i)
      bytes |= uint64_t(tail[at + 16 + i]) << (8 * i);
    for (int i = 12; i < 16; ++i)
      if (tail[at + i] != 0)
        return Status::error(where + ": byte " + std::to_string(i) +
                             " of the header is reserved (0), not " +
                             std::to_string(tail[at + i]));
    const uint64_t room = size - at - kTrailerHeaderBytes;
    if (bytes > room)
      return Status::error(where + ": " + std::to_string(bytes) +
                           " payload bytes, but the file has " +
                           std::to_string(room) + " more");
    TrailerRecord r;
    r.kind = kind;
    r.offset = fileOffset + at;
    r.payload.assign(reinterpret_cast<const char *>(tail + at) +
                         kTrailerHeaderBytes,
                     bytes);
    out.push_back(std::move(r));
    const uint64_t padded = (kTrailerHeaderBytes + bytes + 7) & ~uint64_t(7);
    const uint64_t next = at + (padded < size - at ? padded : size - at);
    for (uint64_t i = at + kTrailerHeaderBytes + bytes; i < next; ++i)
      if (tail[i] != 0)
        return Status::error(where + ": padding byte " +
                             std::to_string(fileOffset + i) + " is " +
                             std::to_string(tail[i]) + ", not 0");
    at = next;
  }
  return out;
}

} // namespace fm::format
