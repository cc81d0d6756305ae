// Artifact signatures in fmc (Signing.cpp): the trailer `fmc compile --sign`
// appends, trusted keys for `fmc inspect --trusted-key`, and what inspect
// prints and writes for minisign.
#pragma once

#include "Commands.h"

#include "fm/artifact.h"
#include "fm/minisign.h"
#include "targets/artifact/ArtifactWriter.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace fm::cli {

/// A trailer maker that signs the artifact's digests with the unencrypted
/// minisign secret key in `keyPath` (read now, so a bad key fails before
/// compiling); the trusted comment names the model.
llvm::Expected<writer::TrailerMaker>
signatureTrailer(const std::string &keyPath, const std::string &family,
                 const std::string &modelName);

/// The public keys in `paths` (minisign .pub files).
llvm::Expected<std::vector<minisign::PublicKey>>
readTrustedKeys(const std::vector<std::string> &paths);

/// Prints the artifact's signatures (key, trusted comment, whether a
/// trusted key verified it) and writes --statement-out / --signature-out.
int describeSignatures(const ArtifactFile &a, const InspectArgs &args,
                       llvm::raw_ostream &os);

} // namespace fm::cli
