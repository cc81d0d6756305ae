// NPY reader for float32 arrays (fm/npy.h): the magic, the version, the
// header dict ('descr', 'fortran_order', 'shape'), then the data, each
// checked against the file's size before it is read.
#include "fm/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace fm {
namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

/// The text after `key': ` in a header dict (up to the end), or npos.
size_t valueOf(const std::string &header, const char *key) {
  const std::string quoted[2] = {std::string("'") + key + "'",
                                 std::string("\"") + key + "\""};
  for (const std::string &q : quoted) {
    size_t at = header.find(q);
    if (at == std::string::npos)
      continue;
    at = header.find(':', at + q.size());
    if (at == std::string::npos)
      return std::string::npos;
    ++at;
    while (at < header.size() && header[at] == ' ')
      ++at;
    return at;
  }
  return std::string::npos;
}

} // namespace

bool parseNpyF32(const uint8_t *bytes, size_t size, const std::string &name,
                 NpyArray *out, std::string *error, uint64_t maxFloats) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    return fail(error, name + ": not an .npy file (no \\x93NUMPY magic)");
  const unsigned major = bytes[6];
  size_t headerLen = 0, start = 0;
  if (major == 1) {
    headerLen = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return fail(error, name + ": truncated .npy header");
    headerLen = size_t(bytes[8]) | size_t(bytes[9]) << 8 |
                size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24;
    start = 12;
  } else {
    return fail(error, name + ": .npy version " + std::to_string(major) +
                           " is not supported (1, 2 or 3)");
  }
  if (headerLen > size - start)
    return fail(error, name + ": the .npy header of " +
                           std::to_string(headerLen) +
                           " bytes runs past the end of the file (" +
                           std::to_string(size) + " bytes)");
  const std::string header(reinterpret_cast<const char *>(bytes + start),
                           headerLen);
  const size_t descr = valueOf(header, "descr");
  if (descr == std::string::npos)
    return fail(error, name + ": the .npy header has no 'descr'");
  const std::string type = header.substr(descr, 5);
  if (type != "'<f4'" && type != "\"<f4\"") {
    const size_t end = header.find_first_of(",}", descr);
    return fail(error, name + ": dtype " +
                           header.substr(descr, end == std::string::npos
                                                    ? std::string::npos
                                                    : end - descr) +
                           " is not float32 ('<f4'): save it with "
                           "x.astype(np.float32)");
  }
  const size_t fortran = valueOf(header, "fortran_order");
  if (fortran == std::string::npos)
    return fail(error, name + ": the .npy header has no 'fortran_order'");
  if (header.compare(fortran, 5, "False") != 0)
    return fail(error, name + ": a Fortran-order array is not supported (save "
                              "it in C order)");
  size_t at = valueOf(header, "shape");
  if (at == std::string::npos || at >= header.size() || header[at] != '(')
    return fail(error, name + ": the .npy header has no 'shape' tuple");
  const size_t close = header.find(')', at);
  if (close == std::string::npos)
    return fail(error, name + ": the .npy shape tuple is not closed");
  std::vector<int64_t> shape;
  uint64_t count = 1;
  for (size_t i = at + 1; i < close;) {
    while (i < close && (header[i] == ' ' || header[i] == ','))
      ++i;
    if (i >= close)
      break;
    uint64_t d = 0;
    size_t digits = 0;
    while (i < close && header[i] >= '0' && header[i] <= '9' && digits < 19) {
      d = d * 10 + uint64_t(header[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || (i < close && header[i] != ',' && header[i] != ' '))
      return fail(error, name + ": the .npy shape " +
                             header.substr(at, close - at + 1) +
                             " is not a tuple of sizes");
    shape.push_back(int64_t(d));
    if (d != 0 && count > maxFloats / d)
      return fail(error, name + ": the .npy array " +
                             header.substr(at, close - at + 1) +
                             " holds more than " + std::to_string(maxFloats) +
                             " values");
    count *= d;
  }
  const size_t dataAt = start + headerLen;
  const uint64_t bytesNeeded = count * 4;
  if (size - dataAt != bytesNeeded)
    return fail(error, name + ": the .npy shape " +
                           header.substr(at, close - at + 1) + " needs " +
                           std::to_string(bytesNeeded) + " bytes of data, the file has " +
                           std::to_string(size - dataAt));
  out->shape = std::move(shape);
  out->data.resize(static_cast<size_t>(count));
  // Little-endian '<f4' bytes; the runtime runs on little-endian hosts.
  if (count)
    std::memcpy(out->data.data(), bytes + dataAt, static_cast<size_t>(bytesNeeded));
  return true;
}

bool readNpyF32(const std::string &path, NpyArray *out, std::string *error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return fail(error, path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    return fail(error, path + ": read error");
  return parseNpyF32(bytes.data(), bytes.size(), path, out, error);
}

} // namespace fm
