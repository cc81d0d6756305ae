// LoRA adapters compiled apart from their base (.fmba, runtime/schema/
// fmba.fbs): the verified file, and an adapter bound to one loaded model,
// which sessions of that model attach (fm::Session::setAdapters) without
// reloading or copying the base.
//
//   auto model = fm::Model::load("model.fmb");
//   auto chat = fm::Adapter::load(*model, "chat.fmba");
//   fm::Session session(*model);
//   session.setAdapters({{*chat, 1.0f}});  // y = W·x + s·B(A·x)
//   ...
//   session.setAdapters({});                // the base again, exactly
#pragma once

#include "fm/fmba_generated.h"
#include "fm/format.h"
#include "fm/runtime.h"
#include "fm/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fm {

/// "f16" or "q8" (or "dtype N" for an unknown value).
std::string adapterDtypeName(adapter::DType dtype);

/// A verified .fmba file, read-only: what `fmc inspect` and the adapter
/// loader see. Opening checks the FlatBuffer, the version, the digest, and
/// that every matrix is well formed and inside the data section (the base
/// is checked when the adapter is bound to a model: Adapter::load).
class AdapterFile {
public:
  struct Options {
    /// Check the file's digest. Only fuzzers turn it off, to reach the
    /// checks behind it.
    bool checkDigest = true;
  };

  /// Maps `path` read-only and verifies it; errors start with `path`.
  static Expected<std::unique_ptr<AdapterFile>> open(const std::string &path,
                                                     const Options &options);
  /// As open(), from a copy of `size` bytes; `name` stands for the file.
  static Expected<std::unique_ptr<AdapterFile>>
  fromBuffer(const uint8_t *data, size_t size, const std::string &name,
             const Options &options);

  ~AdapterFile();
  AdapterFile(const AdapterFile &) = delete;
  AdapterFile &operator=(const AdapterFile &) = delete;

  const std::string &name() const { return name_; }
  const adapter::Adapter &root() const { return *root_; }
  /// The data section: 64-byte aligned, dataSize() bytes.
  const uint8_t *data() const { return data_; }
  uint64_t dataSize() const { return dataSize_; }
  uint64_t fileSize() const { return size_; }
  format::Digest digest() const;
  format::Digest baseSourceDigest() const;
  /// Parameters of every A and B.
  int64_t parameters() const;

private:
  AdapterFile() = default;
  Status verify(const Options &options);

  std::string name_;
  const uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  const adapter::Adapter *root_ = nullptr;
  const uint8_t *data_ = nullptr;
  uint64_t dataSize_ = 0;
};

/// An adapter bound to one loaded model: checked against it (the base's
/// source digest and architecture, every projection it names and every
/// shape) and its matrices made readable by the model's device. Immutable
/// and shareable by any number of sessions of that model; it keeps the
/// model alive.
class Adapter {
public:
  static Expected<std::shared_ptr<Adapter>>
  load(std::shared_ptr<Model> model, const std::string &path);
  /// As load(), from a copy of `size` bytes; `name` stands for the file.
  static Expected<std::shared_ptr<Adapter>>
  loadFromBuffer(std::shared_ptr<Model> model, const uint8_t *data,
                 size_t size, const std::string &name,
                 const AdapterFile::Options &options = {});

  ~Adapter();
  Adapter(const Adapter &) = delete;
  Adapter &operator=(const Adapter &) = delete;

  /// The path (or name) it was loaded from.
  const std::string &name() const;
  const Model &model() const;
  const AdapterFile &file() const;
  /// Projections it updates, and the largest rank.
  int64_t loras() const;
  int64_t maxRank() const;

  struct Impl;
  /// Internal; for Session.
  const Impl &impl() const { return *impl_; }

private:
  explicit Adapter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace fm
