// libFuzzer target: a checkpoint directory's model.safetensors.index.json
// (WeightSet::openDirectory). Any index text must give an error or a weight
// set whose every tensor lies inside one of the directory's own shards; a
// shard name may not lead out of the directory.
#include "import/weights/SafeTensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

// A safetensors file of the given header JSON and data bytes.
void writeShard(const std::string &path, const std::string &header,
                size_t dataBytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  uint64_t n = header.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(n >> (8 * i));
  std::fwrite(len, 1, 8, f);
  std::fwrite(header.data(), 1, header.size(), f);
  for (size_t i = 0; i < dataBytes; ++i)
    std::fputc(static_cast<int>(i * 7 + 1), f);
  std::fclose(f);
}

std::string dir;

void removeDir() {
  for (const char *name : {"a.safetensors", "b.safetensors",
                           "model.safetensors.index.json"})
    std::remove((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

// The directory, made once: two shards (seeds name their tensors).
const std::string &checkpoint() {
  if (!dir.empty())
    return dir;
  const char *tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/fm-index-fuzz-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    std::abort();
  dir = tmpl;
  std::atexit(removeDir);
  writeShard(dir + "/a.safetensors",
             R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
             R"("y":{"dtype":"F16","shape":[2,2],"data_offsets":[8,16]}})",
             16);
  writeShard(dir + "/b.safetensors",
             R"({"z":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},)"
             R"("w":{"dtype":"F32","shape":[],"data_offsets":[8,12]}})",
             12);
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &d = checkpoint();
  {
    std::FILE *f = std::fopen((d + "/model.safetensors.index.json").c_str(), "wb");
    if (!f)
      std::abort();
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  auto set = fm::import::WeightSet::openDirectory(d);
  if (!set) {
    llvm::consumeError(set.takeError());
    return 0;
  }
  // Only the directory's own shards, and every tensor inside its file.
  for (size_t i = 0; i < set->numFiles(); ++i) {
    llvm::StringRef name = set->file(i).path();
    if (name != d + "/a.safetensors" && name != d + "/b.safetensors")
      std::abort();
  }
  volatile uint8_t sink = 0;
  for (const fm::import::TensorInfo *t : set->all()) {
    llvm::ArrayRef<uint8_t> bytes = set->data(*t);
    if (bytes.size() != t->nbytes || set->lookup(t->name) != t)
      std::abort();
    for (uint8_t b : bytes)
      sink = sink ^ b;
  }
  (void)sink;
  return 0;
}
