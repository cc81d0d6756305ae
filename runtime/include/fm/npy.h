// Float32 arrays as NumPy .npy files: written for dumps (logits, image
// tokens), read for inputs (fm-run --image-tensor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fm {

/// Writes `data` (C order, product(shape) floats) to `path` as an NPY 1.0
/// file: little-endian '<f4', header padded with spaces and a final '\n' so
/// that the data starts on a 64-byte boundary. An empty shape writes a
/// scalar. On failure returns false and, when `error` is set, says why.
bool writeNpyF32(const std::string &path, const float *data,
                 const std::vector<int64_t> &shape, std::string *error);

/// A float32 array read from an .npy file.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data; // C order
};

/// Parses an NPY 1.0/2.0/3.0 file of little-endian float32 ('<f4') in C
/// order; `size` bytes at `bytes`, `name` (the path) starts every error.
/// Other dtypes, Fortran order, a malformed header, a shape that does not
/// match the data, or more than `maxFloats` values are errors that say so.
bool parseNpyF32(const uint8_t *bytes, size_t size, const std::string &name,
                 NpyArray *out, std::string *error,
                 uint64_t maxFloats = uint64_t(1) << 30);
/// Reads and parses the file at `path`.
bool readNpyF32(const std::string &path, NpyArray *out, std::string *error);

} // namespace fm
