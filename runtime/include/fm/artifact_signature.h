// How an .fmb artifact is signed, shared by `fmc compile --sign` and the
// loader (fm-run --trusted-key): what the signature covers (a statement of
// the artifact's digests) and where it is kept (a trailer after the data
// section, outside every signed and digested byte).
//
// File layout with a trailer:
//   [u32 N][FlatBuffer][pad to 64][data section: data_size bytes]
//   [trailer record]...
// Each record: [8 bytes "FMBTRAIL"][u32 kind][u32 0][u64 payload bytes P]
// [P bytes][zero padding to a multiple of 8]. Kind 1 holds a minisign
// signature file (fm/minisign.h) of the statement. A loader that needs no
// signature never reads the trailer; one that does skips kinds it does not
// know, so later kinds can be added without a schema version.
//
// The statement (what `minisign -V` checks too, given the statement as the
// message: `fmc inspect --statement-out`):
//   "fmc artifact signature v1\n"
//   "program_digest blake2b-256 <64 hex>\n"
//   "weights_digest blake2b-256 <64 hex>\n"
//   ["source_digest blake2b-256 <64 hex>\n"]   (when the artifact has one)
// The program digest covers the commands, the executables and every other
// byte before the data section (the weights digest field included), so
// the statement pins the whole artifact; the loader checks the program
// digest at every load, the weights on demand (--verify-hash).
#pragma once

#include "fm/format.h"
#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fm::format {

inline constexpr char kTrailerMagic[8] = {'F', 'M', 'B', 'T',
                                          'R', 'A', 'I', 'L'};
inline constexpr size_t kTrailerHeaderBytes = 24;
/// Trailer record kinds.
inline constexpr uint32_t kTrailerSignature = 1;

/// The digests a signature covers.
struct SignedDigests {
  Digest program{}, weights{};
  std::optional<Digest> source; // of the checkpoint, when the artifact has it
};

/// The bytes an artifact's signature signs.
std::string signedStatement(const SignedDigests &digests);

/// One trailer record of `kind` holding `payload`, padded.
std::vector<uint8_t> trailerRecord(uint32_t kind, const std::string &payload);

struct TrailerRecord {
  uint32_t kind = 0;
  uint64_t offset = 0; // of the record in the file
  std::string payload;
};

/// The records in the `size` bytes at `tail`, which start at byte
/// `fileOffset` of the file `name` (right after the data section). An error
/// names the record and the byte.
Expected<std::vector<TrailerRecord>> readTrailer(const uint8_t *tail,
                                                 uint64_t size,
                                                 uint64_t fileOffset,
                                                 const std::string &name);

} // namespace fm::format
