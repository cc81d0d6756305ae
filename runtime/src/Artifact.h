// The .fmb loader: maps an artifact, runs the FlatBuffers verifier and
// bounds-checks everything the executor will touch.
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "kernels/qformat.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fm::rt {

/// The schema version this runtime reads.
constexpr uint32_t kSchemaVersion = 1;
/// Weights and the data section start on multiples of this many bytes.
constexpr uint64_t kDataAlignment = 64;

/// FNV-1a 64 of `size` bytes, continuing from `hash` (the offset basis by
/// default): the artifact's `content_hash` over its data section.
uint64_t fnv1a64(const uint8_t *data, size_t size,
                 uint64_t hash = 0xcbf29ce484222325ull);

/// Bytes per element of `dtype`; 0 for the packed formats Q2/Q4/Q8, which
/// have no per-element size (a row of K inputs takes packedRowBytes), and
/// for a value outside the enum.
uint64_t dtypeSize(fm::artifact::DType dtype);
/// "f32", "f16", "bf16", "i8", "q2", "q4", "q8", or "dtype N" for an
/// unknown value.
std::string dtypeName(fm::artifact::DType dtype);
/// Whether `dtype` is one of the packed low-bit formats (Q2, Q4, Q8).
bool isQuantized(fm::artifact::DType dtype);
/// Whether any weight of a Moe command is packed (Q2/Q4/Q8); indices out
/// of range count as not. Such a Moe runs on the runtime's QuantMoe, which
/// takes each weight in its own dtype, instead of the Moe kernel.
bool moeHasQuantizedWeights(const fm::artifact::Artifact &root,
                            const fm::artifact::Moe &op);
/// The packed format of a Q2/Q4/Q8 weight (bits, `group`, `grid`); valid
/// (isValidQuantFormat) for every quantized weight of a verified artifact.
fm::kernels::QuantFormat quantFormat(const fm::artifact::Weight &weight);

/// A verified artifact: after open()/fromBuffer() succeeds, every index,
/// offset and shape in it is in range, so the executor can use them without
/// further checks (see the comments in Artifact.cpp for the full list).
class Artifact {
public:
  struct Options {
    /// Also compare the FNV-1a 64 of the data section to `content_hash`.
    bool verifyHash = false;
  };

  /// Maps `path` read-only and verifies it. Error messages start with `path`.
  static Expected<std::unique_ptr<Artifact>> open(const std::string &path,
                                                  const Options &options);
  /// Copies `size` bytes into 64-byte-aligned memory and verifies them;
  /// `name` stands for the file in error messages.
  static Expected<std::unique_ptr<Artifact>>
  fromBuffer(const uint8_t *data, size_t size, const std::string &name,
             const Options &options);

  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &name() const { return name_; }
  const fm::artifact::Artifact &root() const { return *root_; }
  /// The data section: 64-byte aligned, dataSize() bytes.
  const uint8_t *data() const { return data_; }
  uint64_t dataSize() const { return dataSize_; }
  uint64_t fileSize() const { return size_; }
  /// Start of weight `index`'s bytes (index < root().weights()->size()).
  const uint8_t *weightData(uint32_t index) const;
  /// Whether any program has a Dispatch command (needs the executable).
  bool hasDispatch() const { return hasDispatch_; }

private:
  Artifact() = default;
  static Expected<std::unique_ptr<Artifact>>
  finish(std::unique_ptr<Artifact> artifact, const Options &options);
  Status verify(const Options &options);

  std::string name_;
  const uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false; // munmap base_ (else it is an owned aligned buffer)
  const fm::artifact::Artifact *root_ = nullptr;
  const uint8_t *data_ = nullptr;
  uint64_t dataSize_ = 0;
  bool hasDispatch_ = false;
};

} // namespace fm::rt
