// A verified .fmb artifact, read-only: what `fmc inspect`, fm-run and the
// runtime's loader see. Opening runs the FlatBuffers verifier and checks
// every index, offset, shape and digest the runtime will rely on
// (runtime/src/Artifact.cpp lists them), so a bad file gives an error that
// names the file and the element at fault, never a crash.
#pragma once

#include "fm/artifact_signature.h"
#include "fm/fmb_generated.h"
#include "fm/format.h"
#include "fm/minisign.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fm {

/// "f32", "f16", "bf16", "i8", "q2", "q4", "q8", or "dtype N" for an
/// unknown value.
std::string dtypeName(artifact::DType dtype);
/// Bytes per element of `dtype`; 0 for the packed formats Q2/Q4/Q8 (a row
/// of K inputs takes kernels::packedRowBytes) and for unknown values.
uint64_t dtypeSize(artifact::DType dtype);
/// Whether `dtype` is one of the packed low-bit formats (Q2, Q4, Q8).
bool isQuantized(artifact::DType dtype);

/// One command, described for people and for tools.
struct CommandText {
  std::string op;   // "matmul", "attention", ...
  std::string text; // "buf@0[rowsx256] x [model.layers.0.q_proj.weight]^T -> ..."
  /// The command's operands as the members of a JSON object, without the
  /// braces: `"x": {"offset": 0, ...}, "weights": ["..."], "k": 256`.
  std::string json;
};

class ArtifactFile {
public:
  struct Options {
    /// Check the program digest (everything but the weights: the commands
    /// and the executables). On by default: it is cheap and guards the
    /// generated code. Only fuzzers turn it off, to reach the checks behind
    /// it.
    bool checkProgramDigest = true;
    /// Also check the weights against their digest (reads every byte).
    bool checkWeightsDigest = false;
    /// When not empty, the artifact must carry a signature by one of these
    /// keys over its digests (fm/artifact_signature.h), checked right after
    /// the program digest; an unsigned or otherwise signed file is refused.
    std::vector<minisign::PublicKey> trustedKeys;
  };

  /// Maps `path` read-only and verifies it. Error messages start with `path`.
  static Expected<std::unique_ptr<ArtifactFile>> open(const std::string &path,
                                                      const Options &options);
  /// Copies `size` bytes into 64-byte-aligned memory and verifies them;
  /// `name` stands for the file in error messages.
  static Expected<std::unique_ptr<ArtifactFile>>
  fromBuffer(const uint8_t *data, size_t size, const std::string &name,
             const Options &options);

  ~ArtifactFile();
  ArtifactFile(const ArtifactFile &) = delete;
  ArtifactFile &operator=(const ArtifactFile &) = delete;

  const std::string &name() const { return name_; }
  const artifact::Artifact &root() const { return *root_; }
  /// The data section: 64-byte aligned, dataSize() bytes.
  const uint8_t *data() const { return data_; }
  uint64_t dataSize() const { return dataSize_; }
  uint64_t fileSize() const { return size_; }
  /// Start of weight `index`'s shared bytes (index < root().weights()->size()).
  const uint8_t *weightData(uint32_t index) const;
  /// Whether any program has a Dispatch command (needs an executable).
  bool hasDispatch() const { return hasDispatch_; }
  /// The executable for `target` ("cpu", "vulkan", ...), or null.
  const artifact::Executable *executable(const std::string &target) const;
  /// The targets of the executables, in file order.
  std::vector<std::string> targets() const;
  format::Digest programDigest() const;
  format::Digest weightsDigest() const;
  /// The digests a signature of this artifact covers.
  format::SignedDigests signedDigests() const;
  /// The trailer records after the data section (read on demand; an error
  /// when they are damaged).
  Expected<std::vector<format::TrailerRecord>> trailer() const;
  /// The key that signed the artifact, when Options::trustedKeys checked it.
  const std::optional<minisign::KeyId> &signedBy() const { return signedBy_; }

  /// For a file: an error when it is no longer the file that was verified
  /// (its size or modification time changed), so that a caller stops
  /// before reading weights that may be gone (SIGBUS) or different. One
  /// fstat; always ok for a buffer.
  Status checkUnchanged() const;
  /// The digest of the checkpoint tensors the weights came from (fmb.fbs:
  /// source_digest), which LoRA adapters are bound to; all zeros when the
  /// file has none (written by an fmc before adapters).
  format::Digest sourceDigest() const;
  bool hasSourceDigest() const;

  /// Command `index` of program `program` (both in range).
  CommandText describe(uint32_t program, uint32_t index) const;

  /// Whether `fmc compile` embedded a tokenizer (root().tokenizer()).
  bool hasTokenizer() const { return root_->tokenizer() != nullptr; }
  /// The embedded tokenizer, parsed on every call (Model::tokenizer keeps
  /// one); an error naming the file when there is none or it does not
  /// parse.
  Expected<Tokenizer> tokenizer() const;
  /// The ids that end a generation (TokenizerFiles.stop_ids; empty without
  /// a tokenizer).
  std::vector<int32_t> stopIds() const;

private:
  ArtifactFile() = default;
  static Expected<std::unique_ptr<ArtifactFile>>
  finish(std::unique_ptr<ArtifactFile> file, const Options &options);
  Status verify(const Options &options);
  Status verifyTokenizer() const;

  Status readHead();
  Status checkSignature(const Options &options);

  std::string name_;
  const uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false; // munmap base_ (else it is an owned aligned buffer)
  // The FlatBuffer and the padding after it: a private copy of a file's
  // bytes (read, not mapped), so that what was verified is what the
  // runtime reads later even if the file changes; base_ for a buffer.
  const uint8_t *head_ = nullptr;
  uint64_t headSize_ = 0;
  bool ownsHead_ = false;
  // The open file and what it was when verified (checkUnchanged).
  int fd_ = -1;
  int64_t mtimeNs_ = 0;
  std::optional<minisign::KeyId> signedBy_;
  const artifact::Artifact *root_ = nullptr;
  const uint8_t *data_ = nullptr;
  uint64_t dataSize_ = 0;
  bool hasDispatch_ = false;
};

} // namespace fm
