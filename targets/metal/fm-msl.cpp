// fm-msl: SPIR-V compute shaders (one .spv file each, entry point "main", as
// glslc writes them) to MSL 2.3 with the Metal target's translation and
// binding rule (SpirvToMsl.h). Used by the lit tests on the runtime's
// hand-written Vulkan kernels, the ones a Metal device would run.
//
//   fm-msl [--platform macos|ios] -o DIR KERNEL.spv...
//
// writes DIR/KERNEL.metal (the MSL kernel named after the file) and prints
// one line per kernel: its name, buffers, threadgroup size and threadgroup
// memory.
#include "targets/metal/SpirvToMsl.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "fm-msl: error: %s\n", message.c_str());
  return 1;
}

std::string stem(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

} // namespace

int main(int argc, char **argv) {
  fm::msl::Platform platform = fm::msl::Platform::MacOS;
  std::string outDir;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--platform" || a == "-o") && i + 1 >= argc)
      return fail(a + " needs a value");
    if (a == "--platform") {
      std::string p = argv[++i];
      if (p == "ios")
        platform = fm::msl::Platform::IOS;
      else if (p != "macos")
        return fail("--platform '" + p + "': expected macos or ios");
    } else if (a == "-o") {
      outDir = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "' (usage: fm-msl [--platform macos|ios] -o DIR "
                  "KERNEL.spv...)");
    } else {
      inputs.push_back(a);
    }
  }
  if (outDir.empty() || inputs.empty())
    return fail("usage: fm-msl [--platform macos|ios] -o DIR KERNEL.spv...");
  for (const std::string &path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return fail(path + ": cannot read it");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % 4 != 0)
      return fail(path + ": " + std::to_string(bytes.size()) +
                  " bytes, not a SPIR-V module (a whole number of 32-bit words)");
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    fm::msl::Function fn;
    std::string why;
    const std::string name = stem(path);
    if (!fm::msl::translate(words.data(), words.size(), "main", fm::msl::kReflectBindings,
                            platform, &fn, &why, name))
      return fail(path + ": " + why);
    const std::string outPath = outDir + "/" + name + ".metal";
    std::ofstream out(outPath, std::ios::binary);
    out << fn.source;
    if (!out.flush())
      return fail(outPath + ": cannot write it");
    std::printf("%s: kernel %s, buffers %u, push constants [[buffer(%u)]], threadgroup %u %u "
                "%u, threadgroup memory %llu bytes\n",
                name.c_str(), fn.entry.c_str(), fn.bindings, fn.bindings, fn.workgroup[0],
                fn.workgroup[1], fn.workgroup[2], (unsigned long long)fn.threadgroupBytes);
  }
  return 0;
}
