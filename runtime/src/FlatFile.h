// The framing the .fmb and .fmba loaders share: a size-prefixed FlatBuffer
// with a 4-byte identifier, whose schema version is read through a small
// header table before the full verifier runs (another version's fields
// would fail, or worse pass, this version's verifier).
#pragma once

#include "fm/status.h"

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>

namespace fm {

/// What a file kind's messages say.
struct FlatFileKind {
  const char *noun;       // "not an fmc <noun>"
  const char *identifier; // the file identifier, 4 characters
  // Another kind's identifier and what to say when a file has it (a model
  // given where an adapter belongs); may be null.
  const char *otherIdentifier;
  const char *otherMessage;
  const char *versionLabel; // "<versionLabel> 3 is not supported"
  uint32_t version;         // the schema version this runtime reads
  const char *recompile;    // what to do about another version
};

/// Checks that the `size` bytes at `head` (named `name` in messages) start
/// with a size prefix and `kind`'s identifier, and that the FlatBuffer fits
/// in them and under FlatBuffers' limit; gives the FlatBuffer's end, 4 + N.
Expected<uint64_t> checkFlatFrame(const std::string &name, const uint8_t *head,
                                  uint64_t size, const FlatFileKind &kind);

/// The message for a FlatBuffer that fails its verifier.
Status flatFileCorrupt(const std::string &name);

/// Verifies the header table `Header` (which has a schema_version field) of
/// the FlatBuffer [head, head + fbEnd) and that its version is kind's.
template <typename Header>
Status checkFlatVersion(const std::string &name, const uint8_t *head,
                        uint64_t fbEnd, const FlatFileKind &kind) {
  flatbuffers::Verifier verifier(head, fbEnd);
  if (!verifier.VerifySizePrefixedBuffer<Header>(kind.identifier))
    return flatFileCorrupt(name);
  const uint32_t version =
      flatbuffers::GetSizePrefixedRoot<Header>(head)->schema_version();
  if (version != kind.version)
    return Status::error(name + ": " + kind.versionLabel + " " +
                         std::to_string(version) +
                         " is not supported (this runtime reads version " +
                         std::to_string(kind.version) + "): " + kind.recompile);
  return Status::ok();
}

} // namespace fm
