// Writes float32 arrays as NumPy .npy files (for dumping activations).
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

} // namespace fm
