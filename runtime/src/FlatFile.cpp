// The size-prefixed FlatBuffer framing of fmc's files (FlatFile.h).
#include "FlatFile.h"

namespace fm {

Expected<uint64_t> checkFlatFrame(const std::string &name, const uint8_t *head,
                                  uint64_t size, const FlatFileKind &kind) {
  // [u32 N][u32 root offset][4-byte identifier] at least.
  if (size < 12)
    return Status::error(name + ": not an fmc " + kind.noun +
                         " (the file has only " + std::to_string(size) +
                         " bytes)");
  if (!flatbuffers::BufferHasIdentifier(head, kind.identifier, true)) {
    if (kind.otherIdentifier &&
        flatbuffers::BufferHasIdentifier(head, kind.otherIdentifier, true))
      return Status::error(name + ": " + kind.otherMessage);
    return Status::error(name + ": not an fmc " + kind.noun +
                         " (bad identifier)");
  }
  const uint64_t fbSize = flatbuffers::ReadScalar<uint32_t>(head);
  const uint64_t fbEnd = 4 + fbSize;
  if (fbEnd > size)
    return Status::error(name + ": truncated: the FlatBuffer ends at " +
                         std::to_string(fbEnd) + " but the file has " +
                         std::to_string(size) + " bytes");
  if (fbEnd >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error(name + ": corrupt: a FlatBuffer of " +
                         std::to_string(fbSize) +
                         " bytes is over the 2 GiB limit");
  return fbEnd;
}

Status flatFileCorrupt(const std::string &name) {
  return Status::error(name + ": corrupt: the FlatBuffer fails verification");
}

} // namespace fm
