// SafeTensors: a validating, memory-mapped reader for .safetensors checkpoints.
//
// The format is an 8-byte little-endian header length N, N bytes of JSON
// describing every tensor ({"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {...}}), then the raw data section. Checkpoints come from
// users, so every field is validated before any byte is handed out: a bad file
// is an llvm::Error that names the file and the tensor, never a crash.
#pragma once

#include "import/weights/WeightSource.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace fm::import {

/// llvm::json::parse with a nesting limit: llvm's parser recurses once per
/// nesting level, so a hostile "[[[[..." header would overflow the stack.
/// Errors read "<errorPrefix><llvm::json's message>".
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text,
                                            llvm::StringRef errorPrefix);

/// One .safetensors file. Tensor bytes are never copied: `data()` points into
/// the mapped file (or into the caller's bytes for `parse`).
class SafeTensorsFile {
public:
  /// Maps `path` read-only and validates its header.
  static llvm::Expected<SafeTensorsFile> open(llvm::StringRef path);
  /// Validates `bytes` as a whole safetensors file without copying them; the
  /// result refers to `bytes`, which must outlive it. Used by the fuzzer and
  /// by tests that build files in memory.
  static llvm::Expected<SafeTensorsFile> parse(llvm::StringRef bytes,
                                               llvm::StringRef nameForErrors);

  SafeTensorsFile(SafeTensorsFile &&) noexcept;
  SafeTensorsFile &operator=(SafeTensorsFile &&) noexcept;
  ~SafeTensorsFile();

  llvm::StringRef path() const { return path_; }
  /// Tensors in the order the header lists them.
  llvm::ArrayRef<TensorInfo> tensors() const { return tensors_; }
  const TensorInfo *lookup(llvm::StringRef name) const;
  /// The tensor's bytes; empty if `t` does not describe a range of this file.
  /// Safetensors does not align tensors, so read elements with memcpy.
  llvm::ArrayRef<uint8_t> data(const TensorInfo &t) const;
  /// The optional "__metadata__" map (string values as-is, others as JSON text).
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  uint64_t size() const { return bytes_.size(); }

private:
  SafeTensorsFile() = default;
  llvm::Error parseHeader();

  std::string path_;
  std::unique_ptr<llvm::MemoryBuffer> buffer_; // null when parse()d
  llvm::StringRef bytes_;                       // the whole file
  std::vector<TensorInfo> tensors_;
  llvm::StringMap<size_t> index_;               // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

/// All the weights of one model directory, possibly sharded over files. The
/// files stay mapped for the WeightSet's lifetime, so TensorInfo pointers and
/// data() views stay valid until it is destroyed (moving it keeps them valid).
class WeightSet final : public WeightSource {
public:
  /// Opens `dir/model.safetensors.index.json` when present (its weight_map
  /// names the shard of every tensor), else `dir/model.safetensors`, else every
  /// `dir/*.safetensors` in name order.
  static llvm::Expected<WeightSet> openDirectory(llvm::StringRef dir);
  /// Opens the given files (names in messages are the paths as given).
  static llvm::Expected<WeightSet> openFiles(llvm::ArrayRef<std::string> paths);

  const TensorInfo *lookup(llvm::StringRef name) const override;
  /// Every tensor: files in load order, each in header order.
  llvm::ArrayRef<const TensorInfo *> all() const { return all_; }
  llvm::ArrayRef<uint8_t> data(const TensorInfo &t) const override;
  /// The file holding `t`, as messages name it (relative to the directory).
  llvm::StringRef displayName(const TensorInfo &t) const;
  /// What a lookup searches, for "missing" messages: "model.safetensors",
  /// "model.safetensors.index.json (a.safetensors, b.safetensors)", ...
  llvm::StringRef description() const override { return description_; }
  size_t numFiles() const { return files_.size(); }
  const SafeTensorsFile &file(size_t i) const { return *files_[i]; }

private:
  struct Entry {
    const TensorInfo *info;
    size_t file;
  };
  llvm::Error addFile(std::string path, std::string displayName);

  std::vector<std::unique_ptr<SafeTensorsFile>> files_;
  std::vector<std::string> displayNames_; // parallel to files_
  std::vector<const TensorInfo *> all_;
  llvm::StringMap<Entry> byName_;
  std::string description_;
};

} // namespace fm::import
