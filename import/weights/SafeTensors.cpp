// SafeTensors: header validation, memory mapping and shard discovery.
#include "import/weights/SafeTensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <optional>

using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace fm::import {

namespace {

// Real headers nest three deep (root, entry, shape); configs a few more.
constexpr unsigned kMaxJsonDepth = 64;
constexpr StringRef kMetadataKey = "__metadata__";

Error makeError(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A JSON value as text for messages, cut short so a hostile header cannot
/// make a megabyte-long diagnostic.
std::string brief(const json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  os.flush();
  if (s.size() > 60)
    s = s.substr(0, 57) + "...";
  return s;
}

/// The exact integer a JSON number holds, if it holds one. json::Value's
/// getAsInteger converts doubles up to 2^63 inclusive, which is undefined
/// behaviour for 2^63 itself, so the range is checked here first.
std::optional<int64_t> exactInt(const json::Value &v) {
  if (auto u = v.getAsUINT64()) {
    if (*u > uint64_t(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return int64_t(*u);
  }
  auto d = v.getAsNumber();
  if (!d || !(*d >= -9223372036854775808.0 && *d < 9223372036854775808.0))
    return std::nullopt;
  return v.getAsInteger(); // nullopt for fractional values
}

// --- A minimal scanner over already-validated JSON text. llvm::json::Object
// is a hash map: it forgets key order and silently keeps the last of two
// duplicate keys, and both matter here (header order, duplicate tensors).

size_t skipWs(StringRef s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
    ++i;
  return i;
}

/// `s[i]` is an opening quote; returns the index just past the closing one.
size_t skipString(StringRef s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return StringRef::npos;
}

/// Returns the index of the ',' or '}' that ends the value starting at `i`.
size_t skipValue(StringRef s, size_t i) {
  unsigned depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      i = skipString(s, i);
      if (i == StringRef::npos)
        return i;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0)
        return i;
      --depth;
    } else if (c == ',' && depth == 0) {
      return i;
    }
    ++i;
  }
  return StringRef::npos;
}

/// The keys of the top-level object in `text` (valid JSON), in order and with
/// repetitions. Returns false if the text is not shaped as expected.
bool topLevelKeys(StringRef text, std::vector<std::string> &keys) {
  size_t i = skipWs(text, 0);
  if (i >= text.size() || text[i] != '{')
    return false;
  ++i;
  while (true) {
    i = skipWs(text, i);
    if (i >= text.size())
      return false;
    if (text[i] == '}')
      return true;
    if (text[i] != '"')
      return false;
    size_t end = skipString(text, i);
    if (end == StringRef::npos)
      return false;
    // Let llvm::json decode escapes so keys match the parsed object's keys.
    auto key = json::parse(text.slice(i, end));
    if (!key) {
      llvm::consumeError(key.takeError());
      return false;
    }
    auto str = key->getAsString();
    if (!str)
      return false;
    keys.push_back(str->str());
    i = skipWs(text, end);
    if (i >= text.size() || text[i] != ':')
      return false;
    i = skipValue(text, i + 1);
    if (i == StringRef::npos)
      return false;
    if (text[i] == '}')
      return true;
    ++i; // ','
  }
}

/// What the safetensors spec calls a dtype, whether or not fmc accepts it,
/// so an I64 tensor gets "unsupported" rather than "unknown".
bool isSafetensorsDType(StringRef s) {
  static const char *const known[] = {
      "BOOL",   "U8",     "I8",      "F8_E5M2", "F8_E4M3", "F8_E8M0",
      "F4",     "F6_E2M3", "F6_E3M2", "I16",    "U16",     "F16",
      "BF16",   "I32",    "U32",     "F32",     "F64",     "I64",
      "U64",    "C64"};
  for (const char *k : known)
    if (s == k)
      return true;
  return false;
}

std::optional<DType> parseDType(StringRef s) {
  if (s == "F32")
    return DType::F32;
  if (s == "F16")
    return DType::F16;
  if (s == "BF16")
    return DType::BF16;
  return std::nullopt;
}

std::string joinNames(llvm::ArrayRef<std::string> names) {
  std::string out;
  size_t shown = names.size() <= 3 ? names.size() : 2;
  for (size_t i = 0; i < shown; ++i)
    out += (i ? ", " : "") + names[i];
  if (shown < names.size())
    out += ", ... (" + std::to_string(names.size()) + " files)";
  return out;
}

} // namespace

Expected<json::Value> parseJson(StringRef text, StringRef errorPrefix) {
  // Measure nesting before llvm::json recurses into it. Strings are skipped
  // the same way the parser reads them, so brackets inside strings don't count.
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      i = skipString(text, i);
      if (i == StringRef::npos)
        break; // unterminated: the parser reports it
      --i;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth)
        return makeError(errorPrefix + "nesting deeper than " + Twine(kMaxJsonDepth) +
                         " levels");
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  auto v = json::parse(text);
  if (!v)
    return makeError(errorPrefix + llvm::toString(v.takeError()));
  return std::move(*v);
}

// --- SafeTensorsFile ------------------------------------------------------

SafeTensorsFile::SafeTensorsFile(SafeTensorsFile &&) noexcept = default;
SafeTensorsFile &SafeTensorsFile::operator=(SafeTensorsFile &&) noexcept = default;
SafeTensorsFile::~SafeTensorsFile() = default;

Expected<SafeTensorsFile> SafeTensorsFile::open(StringRef path) {
  if (llvm::sys::fs::is_directory(path))
    return makeError(path + ": is a directory, not a .safetensors file");
  // No null terminator needed: large files are then mapped, not read.
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return makeError(path + ": cannot open: " + buf.getError().message());
  SafeTensorsFile f;
  f.path_ = path.str();
  f.buffer_ = std::move(*buf);
  f.bytes_ = f.buffer_->getBuffer();
  if (Error e = f.parseHeader())
    return e;
  return f;
}

Expected<SafeTensorsFile> SafeTensorsFile::parse(StringRef bytes, StringRef nameForErrors) {
  SafeTensorsFile f;
  f.path_ = nameForErrors.str();
  f.bytes_ = bytes;
  if (Error e = f.parseHeader())
    return e;
  return f;
}

Error SafeTensorsFile::parseHeader() {
  const std::string &file = path_;
  const uint64_t fileSize = bytes_.size();
  if (fileSize < 8)
    return makeError(file + ": file is " + Twine(fileSize) +
                     " bytes, too short for the 8-byte header length");
  const uint64_t headerLen = llvm::support::endian::read64le(bytes_.data());
  if (headerLen > fileSize - 8)
    return makeError(file + ": header length " + Twine(headerLen) + " exceeds file size " +
                     Twine(fileSize));
  const StringRef header = bytes_.substr(8, headerLen);
  const uint64_t dataStart = 8 + headerLen;
  const uint64_t dataSize = fileSize - dataStart;

  auto root = parseJson(header, file + ": invalid JSON in header: ");
  if (!root)
    return root.takeError();
  const json::Object *obj = root->getAsObject();
  if (!obj)
    return makeError(file + ": header is not a JSON object (got " + brief(*root) + ")");
  std::vector<std::string> keys;
  if (!topLevelKeys(header, keys))
    return makeError(file + ": cannot read the header's keys"); // unreachable for valid JSON

  llvm::StringSet<> seen;
  std::vector<uint64_t> begins; // relative offsets, parallel to tensors_
  for (const std::string &name : keys) {
    if (!seen.insert(name).second)
      return makeError(file + ": tensor '" + name + "' appears twice in the header");
    const json::Value *entry = obj->get(name);
    if (!entry)
      return makeError(file + ": cannot read the header's keys");

    if (name == kMetadataKey) {
      const json::Object *meta = entry->getAsObject();
      if (!meta)
        return makeError(file + ": '__metadata__' must be an object of strings, got " +
                         brief(*entry));
      for (const auto &kv : *meta) {
        if (auto s = kv.second.getAsString()) {
          metadata_[kv.first.str()] = s->str();
        } else {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << kv.second;
          metadata_[kv.first.str()] = os.str();
        }
      }
      continue;
    }

    auto fail = [&](const Twine &msg) {
      return makeError(file + ": tensor '" + name + "': " + msg);
    };
    const json::Object *e = entry->getAsObject();
    if (!e)
      return fail("entry must be an object, got " + brief(*entry));

    TensorInfo t;
    t.name = name;
    t.file = file;

    const json::Value *dtypeV = e->get("dtype");
    if (!dtypeV)
      return fail("missing 'dtype'");
    auto dtypeS = dtypeV->getAsString();
    if (!dtypeS)
      return fail("'dtype' must be a string, got " + brief(*dtypeV));
    auto dtype = parseDType(*dtypeS);
    if (!dtype)
      return fail(Twine(isSafetensorsDType(*dtypeS) ? "unsupported" : "unknown") +
                  " dtype '" + *dtypeS + "' (fmc accepts F32, F16, BF16)");
    t.dtype = *dtype;

    const json::Value *shapeV = e->get("shape");
    if (!shapeV)
      return fail("missing 'shape'");
    const json::Array *shapeA = shapeV->getAsArray();
    if (!shapeA)
      return fail("'shape' must be an array of integers, got " + brief(*shapeV));
    for (const json::Value &d : *shapeA) {
      auto dim = exactInt(d);
      if (!dim)
        return fail("'shape' must be an array of integers, got " + brief(*shapeV));
      t.shape.push_back(*dim);
    }
    uint64_t count = 1;
    bool overflow = false;
    for (int64_t d : t.shape) {
      if (d < 0)
        return fail("shape " + formatShape(t.shape) + " has a negative dimension");
      overflow |= __builtin_mul_overflow(count, uint64_t(d), &count);
    }
    uint64_t needed = 0;
    overflow |= __builtin_mul_overflow(count, uint64_t(dtypeSize(t.dtype)), &needed);
    // A zero dimension makes the true count 0 even if a prefix overflowed.
    if (overflow && !llvm::is_contained(t.shape, 0))
      return fail("shape " + formatShape(t.shape) + " has too many elements (overflows 64 bits)");
    if (overflow)
      needed = 0;

    const json::Value *offV = e->get("data_offsets");
    if (!offV)
      return fail("missing 'data_offsets'");
    const json::Array *offA = offV->getAsArray();
    std::optional<uint64_t> begin, end;
    if (offA && offA->size() == 2) {
      begin = (*offA)[0].getAsUINT64();
      end = (*offA)[1].getAsUINT64();
    }
    if (!begin || !end)
      return fail("'data_offsets' must be [begin, end] with non-negative integers, got " +
                  brief(*offV));
    std::string offText = "data_offsets [" + std::to_string(*begin) + ", " +
                          std::to_string(*end) + "]";
    if (*begin > *end)
      return fail(offText + ": begin is after end");
    if (*end > dataSize)
      return fail(offText + " out of range: the data section holds " + Twine(dataSize) +
                  " bytes");
    t.nbytes = *end - *begin;
    if (t.nbytes != needed)
      return fail(offText + " span " + Twine(t.nbytes) + " bytes, but " +
                  dtypeName(t.dtype) + " " + formatShape(t.shape) + " needs " +
                  Twine(needed));
    t.offset = dataStart + *begin;
    index_[name] = tensors_.size();
    tensors_.push_back(std::move(t));
    begins.push_back(*begin);
  }

  // Two tensors sharing bytes would alias silently once weights are packed.
  // Sweep in offset order, remembering the tensor that reaches furthest.
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].nbytes > 0)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(begins[a], tensors_[a].nbytes) <
           std::make_pair(begins[b], tensors_[b].nbytes);
  });
  auto range = [&](size_t i) {
    return "[" + std::to_string(begins[i]) + ", " +
           std::to_string(begins[i] + tensors_[i].nbytes) + "]";
  };
  size_t furthest = SIZE_MAX;
  for (size_t i : order) {
    if (furthest != SIZE_MAX &&
        begins[i] < begins[furthest] + tensors_[furthest].nbytes)
      return makeError(file + ": tensors '" + tensors_[furthest].name + "' (data_offsets " +
                       range(furthest) + ") and '" + tensors_[i].name +
                       "' (data_offsets " + range(i) + ") overlap");
    if (furthest == SIZE_MAX || begins[i] + tensors_[i].nbytes >
                                    begins[furthest] + tensors_[furthest].nbytes)
      furthest = i;
  }
  return Error::success();
}

const TensorInfo *SafeTensorsFile::lookup(StringRef name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

llvm::ArrayRef<uint8_t> SafeTensorsFile::data(const TensorInfo &t) const {
  if (t.offset > bytes_.size() || t.nbytes > bytes_.size() - t.offset)
    return {};
  return llvm::ArrayRef<uint8_t>(bytes_.bytes_begin() + t.offset, t.nbytes);
}

// --- WeightSet ------------------------------------------------------------

Error WeightSet::addFile(std::string path, std::string displayName) {
  auto f = SafeTensorsFile::open(path);
  if (!f)
    return f.takeError();
  size_t idx = files_.size();
  files_.push_back(std::make_unique<SafeTensorsFile>(std::move(*f)));
  displayNames_.push_back(std::move(displayName));
  for (const TensorInfo &t : files_.back()->tensors()) {
    auto [it, inserted] = byName_.try_emplace(t.name, Entry{&t, idx});
    if (!inserted)
      return makeError("tensor '" + t.name + "' is in both " +
                       displayNames_[it->second.file] + " and " + displayNames_[idx]);
    all_.push_back(&t);
  }
  return Error::success();
}

Expected<WeightSet> WeightSet::openDirectory(StringRef dir) {
  namespace fs = llvm::sys::fs;
  namespace path = llvm::sys::path;
  if (!fs::is_directory(dir))
    return makeError(dir + ": not a directory");
  WeightSet ws;

  llvm::SmallString<256> indexPath(dir);
  path::append(indexPath, "model.safetensors.index.json");
  if (fs::exists(indexPath)) {
    std::string index = indexPath.str().str();
    auto buf = llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/true);
    if (!buf)
      return makeError(index + ": cannot open: " + buf.getError().message());
    auto root = parseJson((*buf)->getBuffer(), index + ": invalid JSON: ");
    if (!root)
      return root.takeError();
    const json::Object *obj = root->getAsObject();
    const json::Object *map = obj ? obj->getObject("weight_map") : nullptr;
    if (!map)
      return makeError(index + ": missing 'weight_map' object");
    // file -> tensors the index puts there; sorted for stable messages.
    std::map<std::string, std::vector<std::string>> perFile;
    for (const auto &kv : *map) {
      auto file = kv.second.getAsString();
      if (!file)
        return makeError(index + ": weight_map entry '" + kv.first.str() +
                         "' must be a file name, got " + brief(kv.second));
      // A shard lies in the checkpoint directory: a path could lead the
      // importer to read (and map) any file on the machine.
      if (file->empty() || *file == "." || *file == ".." ||
          file->find_first_of("/\\") != llvm::StringRef::npos ||
          file->contains('\0'))
        return makeError(index + ": weight_map entry '" + kv.first.str() +
                         "' names '" + file->str() +
                         "': a shard must be a file name in the checkpoint "
                         "directory");
      perFile[file->str()].push_back(kv.first.str());
    }
    std::vector<std::string> names;
    for (auto &[file, tensors] : perFile) {
      std::sort(tensors.begin(), tensors.end());
      llvm::SmallString<256> full(dir);
      path::append(full, file);
      if (!fs::exists(full))
        return makeError(index + ": tensor '" + tensors.front() + "' is mapped to '" +
                         file + "', which does not exist");
      if (Error e = ws.addFile(full.str().str(), file))
        return e;
      for (const std::string &t : tensors)
        if (!ws.files_.back()->lookup(t))
          return makeError(index + ": tensor '" + t + "' is mapped to '" + file +
                           "', which does not contain it");
      names.push_back(file);
    }
    ws.description_ = "model.safetensors.index.json";
    if (!names.empty())
      ws.description_ += " (" + joinNames(names) + ")";
    return ws;
  }

  llvm::SmallString<256> single(dir);
  path::append(single, "model.safetensors");
  if (fs::exists(single)) {
    if (Error e = ws.addFile(single.str().str(), "model.safetensors"))
      return e;
    ws.description_ = "model.safetensors";
    return ws;
  }

  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    StringRef name = path::filename(it->path());
    if (name.ends_with(".safetensors") && !fs::is_directory(it->path()))
      names.push_back(name.str());
  }
  if (ec)
    return makeError(dir + ": cannot list directory: " + ec.message());
  if (names.empty())
    return makeError(dir + ": no model.safetensors.index.json, model.safetensors or "
                           "*.safetensors file");
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    llvm::SmallString<256> full(dir);
    path::append(full, name);
    if (Error e = ws.addFile(full.str().str(), name))
      return e;
  }
  ws.description_ = joinNames(names);
  return ws;
}

Expected<WeightSet> WeightSet::openFiles(llvm::ArrayRef<std::string> paths) {
  WeightSet ws;
  for (const std::string &p : paths)
    if (Error e = ws.addFile(p, p))
      return e;
  ws.description_ = joinNames(paths);
  return ws;
}

const TensorInfo *WeightSet::lookup(StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second.info;
}

llvm::ArrayRef<uint8_t> WeightSet::data(const TensorInfo &t) const {
  auto it = byName_.find(t.name);
  if (it == byName_.end() || it->second.info != &t)
    return {};
  return files_[it->second.file]->data(t);
}

StringRef WeightSet::displayName(const TensorInfo &t) const {
  auto it = byName_.find(t.name);
  if (it == byName_.end())
    return t.file;
  return displayNames_[it->second.file];
}

} // namespace fm::import
