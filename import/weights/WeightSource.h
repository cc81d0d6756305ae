// WeightSource: where tensors come from, by name — a checkpoint's
// safetensors files today (WeightSet) — for the importer, which checks them
// against a config, and for the artifact writer, which streams them into an
// artifact one tensor at a time.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fm::import {

/// The element types fmc accepts in a checkpoint. Everything else (integer
/// tensors, F64, FP8) is rejected at load time with a message naming it.
enum class DType { F32, F16, BF16 };

const char *dtypeName(DType d); // "F32", "F16", "BF16" (safetensors spelling)
unsigned dtypeSize(DType d);    // bytes per element

/// One tensor of a checkpoint, already validated against its file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape; // empty = 0-d scalar (1 element)
  uint64_t offset = 0;        // absolute byte offset in the file
  uint64_t nbytes = 0;
  std::string file;           // path as opened (or the name given to parse())

  uint64_t numElements() const;
};

/// "[2, 3]", "[]" for a scalar: the spelling every message uses for shapes.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

class WeightSource {
public:
  virtual ~WeightSource() = default;
  /// The tensor called `name`, or null.
  virtual const TensorInfo *lookup(llvm::StringRef name) const = 0;
  /// Its bytes (unaligned: read elements with memcpy).
  virtual llvm::ArrayRef<uint8_t> data(const TensorInfo &t) const = 0;
  /// What a lookup searches, for "missing" messages.
  virtual llvm::StringRef description() const = 0;
};

/// `t`'s values as f32 (F16 and BF16 widened exactly) in `out`.
void readF32(const WeightSource &source, const TensorInfo &t,
             std::vector<float> &out);

} // namespace fm::import
