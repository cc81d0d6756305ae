// Artifact signatures in fmc: `fmc keygen`, the trailer `fmc compile --sign`
// appends, and what `fmc inspect` shows and writes for minisign
// (fm/artifact_signature.h has the format).
#include "Signing.h"

#include "fm/artifact_signature.h"
#include "fm/minisign.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace fm::cli {
namespace {

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fmc") << message << "\n";
  return 1;
}

// Writes `text` to `path`, creating it with `mode`; refuses to replace a
// file unless `force`.
llvm::Error writeNew(const std::string &path, const std::string &text,
                     unsigned mode, bool force) {
  if (!force && llvm::sys::fs::exists(path))
    return llvm::createStringError(path + " exists (--force replaces it)");
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(
          path, fd, llvm::sys::fs::CD_CreateAlways, llvm::sys::fs::OF_None,
          mode))
    return llvm::createStringError(path + ": cannot create: " + ec.message());
  // An existing file keeps its mode: make sure a secret key is private.
  (void)llvm::sys::fs::setPermissions(
      path, static_cast<llvm::sys::fs::perms>(mode));
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << text;
  out.close();
  if (out.has_error())
    return llvm::createStringError(path + ": cannot write: " +
                                   out.error().message());
  return llvm::Error::success();
}

llvm::Expected<std::string> readText(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(path + ": cannot open: " +
                                   buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

} // namespace

int runKeygen(const KeygenArgs &args) {
  const minisign::KeyPair pair = minisign::generateKeyPair();
  const std::string secret = args.output + ".key", pub = args.output + ".pub";
  if (!args.force)
    for (const std::string &path : {secret, pub})
      if (llvm::sys::fs::exists(path))
        return fail(path + " exists (--force replaces it)");
  if (llvm::Error e =
          writeNew(secret, minisign::secretKeyFile(pair.secret), 0600, true))
    return fail(llvm::toString(std::move(e)));
  if (llvm::Error e =
          writeNew(pub, minisign::publicKeyFile(pair.pub), 0644, true))
    return fail(llvm::toString(std::move(e)));
  llvm::outs() << llvm::formatv(
      "fmc keygen: key {0}\n  secret key    {1} (keep it private: it signs "
      "artifacts)\n  public key    {2} (fm-run --trusted-key, minisign -V "
      "-p)\n",
      minisign::keyIdText(pair.pub.id), secret, pub);
  return 0;
}

llvm::Expected<writer::TrailerMaker>
signatureTrailer(const std::string &keyPath, const std::string &family,
                 const std::string &modelName) {
  auto text = readText(keyPath);
  if (!text)
    return text.takeError();
  auto key = minisign::parseSecretKey(*text, keyPath);
  if (!key)
    return llvm::createStringError(key.message());
  minisign::SecretKey secret = *key;
  return writer::TrailerMaker(
      [secret, family, modelName](const format::Digest &program,
                                  const format::Digest &weights)
          -> llvm::Expected<std::vector<uint8_t>> {
        format::SignedDigests digests;
        digests.program = program;
        digests.weights = weights;
        const std::string statement = format::signedStatement(digests);
        // Signed too (minisign's global signature); no time stamp, so that
        // one key, one checkpoint and one fmc give one artifact.
        const std::string comment =
            "fmc artifact family=" + family + " model=" + modelName +
            " program=" + format::hex(program).substr(0, 16) +
            " weights=" + format::hex(weights).substr(0, 16);
        return format::trailerRecord(
            format::kTrailerSignature,
            minisign::sign(secret,
                           reinterpret_cast<const uint8_t *>(statement.data()),
                           statement.size(), comment));
      });
}

llvm::Expected<std::vector<minisign::PublicKey>>
readTrustedKeys(const std::vector<std::string> &paths) {
  std::vector<minisign::PublicKey> keys;
  for (const std::string &path : paths) {
    auto text = readText(path);
    if (!text)
      return text.takeError();
    auto key = minisign::parsePublicKey(*text, path);
    if (!key)
      return llvm::createStringError(key.message());
    keys.push_back(*key);
  }
  return keys;
}

int describeSignatures(const ArtifactFile &a, const InspectArgs &args,
                       llvm::raw_ostream &os) {
  auto records = a.trailer();
  if (!records)
    return fail(records.message());
  std::string firstSignature;
  for (const format::TrailerRecord &r : *records) {
    if (r.kind != format::kTrailerSignature) {
      os << llvm::formatv("  trailer       record of kind {0} at byte {1} "
                          "(not read by this fmc)\n",
                          r.kind, r.offset);
      continue;
    }
    auto s = minisign::parseSignature(r.payload, args.artifact);
    if (!s)
      return fail(s.message());
    if (firstSignature.empty())
      firstSignature = r.payload;
    const bool trusted = a.signedBy() && *a.signedBy() == s->id;
    os << llvm::formatv("  signature     key {0}{1}: {2}\n",
                        minisign::keyIdText(s->id),
                        trusted ? " (verified, trusted)"
                                : " (not checked: --trusted-key PUB checks it)",
                        s->trustedComment);
  }
  if (records->empty())
    os << "  signature     none\n";
  if (!args.statementOut.empty()) {
    const std::string statement = format::signedStatement(a.signedDigests());
    if (llvm::Error e = writeNew(args.statementOut, statement, 0644, true))
      return fail(llvm::toString(std::move(e)));
  }
  if (!args.signatureOut.empty()) {
    if (firstSignature.empty())
      return fail(args.artifact + " is not signed (--signature-out)");
    if (llvm::Error e =
            writeNew(args.signatureOut, firstSignature, 0644, true))
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}

} // namespace fm::cli
