// NPY 1.0 writer for float32 arrays.
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

bool hostIsLittleEndian() {
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

} // namespace

bool writeNpyF32(const std::string &path, const float *data,
                 const std::vector<int64_t> &shape, std::string *error) {
  uint64_t count = 1;
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0)
      return fail(error, "cannot write " + path + ": negative dimension " +
                             std::to_string(d));
    count *= static_cast<uint64_t>(d);
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  }
  if (shape.size() == 1)
    dims += ","; // A Python 1-tuple: "(5,)".
  if (count > 0 && !data)
    return fail(error, "cannot write " + path + ": no data");

  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic (6) + version (2) + header length (2) + header + '\n', padded
  // with spaces to a multiple of 64.
  const size_t prefix = 10;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff)
    return fail(error, "cannot write " + path + ": too many dimensions");

  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return fail(error, "cannot open " + path +
                           " for writing: " + std::strerror(errno));
  unsigned char preamble[prefix] = {
      0x93,
      'N',
      'U',
      'M',
      'P',
      'Y',
      1,
      0,
      static_cast<unsigned char>(header.size()),
      static_cast<unsigned char>(header.size() >> 8)};
  bool ok = std::fwrite(preamble, 1, prefix, file) == prefix &&
            std::fwrite(header.data(), 1, header.size(), file) == header.size();
  if (ok && count > 0) {
    if (hostIsLittleEndian()) {
      ok = std::fwrite(data, sizeof(float), count, file) == count;
    } else {
      for (uint64_t i = 0; ok && i < count; ++i) {
        unsigned char bytes[4];
        std::memcpy(bytes, data + i, 4);
        unsigned char swapped[4] = {bytes[3], bytes[2], bytes[1], bytes[0]};
        ok = std::fwrite(swapped, 1, 4, file) == 4;
      }
    }
  }
  int writeErrno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    writeErrno = errno;
  }
  if (!ok)
    return fail(error,
                "cannot write " + path + ": " + std::strerror(writeErrno));
  return true;
}

} // namespace fm
