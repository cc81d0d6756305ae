// Helpers shared by the importer unit tests: safetensors files built in
// memory, scratch directories, and Error/Expected to message text.
#pragma once

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace fm::import::test {

/// A tensor to write; offsets are assigned consecutively in list order.
struct FakeTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "F32";
};

inline unsigned fakeDtypeSize(const std::string &dtype) {
  return dtype == "F32" ? 4 : dtype == "I64" ? 8 : 2;
}

/// The 8-byte little-endian length, the header text as given, then `data`.
inline std::string rawSafetensors(const std::string &header, const std::string &data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

/// A well-formed file holding `tensors`; tensor i's bytes are all `i + 1`,
/// so tests can tell which bytes a view points at.
inline std::string makeSafetensors(const std::vector<FakeTensor> &tensors,
                                   const std::string &metadataJson = "") {
  std::string header = "{", data;
  if (!metadataJson.empty())
    header += "\"__metadata__\":" + metadataJson;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const FakeTensor &t = tensors[i];
    uint64_t n = fakeDtypeSize(t.dtype);
    std::string shape;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      n *= uint64_t(t.shape[d]);
      shape += (d ? "," : "") + std::to_string(t.shape[d]);
    }
    uint64_t begin = data.size();
    data.append(n, char(i + 1));
    if (header.size() > 1)
      header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," +
              std::to_string(data.size()) + "]}";
  }
  header += "}";
  return rawSafetensors(header, data);
}

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
public:
  TempDir() {
    if (llvm::sys::fs::createUniqueDirectory("fmc-import-test", path_))
      path_.clear();
  }
  ~TempDir() {
    if (!path_.empty())
      llvm::sys::fs::remove_directories(path_);
  }
  std::string path() const { return std::string(path_.str()); }
  std::string file(const std::string &name) const {
    llvm::SmallString<256> p(path_);
    llvm::sys::path::append(p, name);
    return std::string(p.str());
  }
  void write(const std::string &name, const std::string &bytes) const {
    writeFile(file(name), bytes);
  }

private:
  llvm::SmallString<256> path_;
};

/// The message of a failed Expected ("" and the value dropped if it succeeded).
template <typename T> std::string errorText(llvm::Expected<T> &&e) {
  if (e)
    return "";
  return llvm::toString(e.takeError());
}
inline std::string errorText(llvm::Error e) { return e ? llvm::toString(std::move(e)) : ""; }

} // namespace fm::import::test
