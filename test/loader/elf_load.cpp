// fm_elf_load: fmc's ELF loader (runtime/hal/cpu/ElfLoader.h) on one image,
// for the tests (test/loader): check, map, relocate, protect, resolve.
//
//   fm_elf_load IMAGE [--function NAME]... [--all-functions] [--maps]
//               [--call-test-kernels]
//
// Prints what it loaded, or "fm_elf_load: error: MESSAGE" and exits 1.
//   --all-functions      resolve every defined global function of the image
//   --maps               the protections the mapping's pages have, in order
//                        (from /proc/self/maps: Linux)
//   --call-test-kernels  call the runtime tests' stand-in kernels
//                        (test/unit/runtime/test_kernels.cpp) and check what
//                        they write against this program's own loops
// Built for the host, and cross-built for AArch64 to run under qemu-user.
#include "hal/cpu/ElfFormat.h"
#include "hal/cpu/ElfImage.h"
#include "hal/cpu/ElfLoader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

using Function = void (*)(void **args, int64_t rows, int64_t pos);

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "fm_elf_load: error: %s\n", message.c_str());
  std::exit(1);
}

// The protections of the pages of [begin, begin + size), in address order,
// consecutive repeats once.
std::string maps(const void *begin, size_t size) {
  std::ifstream in("/proc/self/maps");
  if (!in)
    return "(no /proc/self/maps)";
  const uintptr_t lo = reinterpret_cast<uintptr_t>(begin), hi = lo + size;
  std::string line, out, last;
  bool rwx = false;
  while (std::getline(in, line)) {
    unsigned long a = 0, b = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &a, &b, perms) != 3)
      continue;
    if (b <= lo || a >= hi)
      continue;
    rwx = rwx || (perms[1] == 'w' && perms[2] == 'x');
    if (perms != last)
      out += (out.empty() ? "" : " ") + std::string(perms);
    last = perms;
  }
  if (rwx)
    fail("a page of the image is both writable and executable: " + out);
  return out + " (no page both writable and executable)";
}

Function find(const std::vector<std::string> &names, const std::vector<Function> &fns,
              const char *name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return fns[i];
  fail(std::string("the image has no function ") + name);
}

long threadId() {
#if defined(__linux__)
  return static_cast<long>(syscall(SYS_gettid));
#else
  return 0;
#endif
}

// test_kernels.cpp's functions, each against this program's own loop.
std::string callTestKernels(const std::vector<std::string> &names,
                            const std::vector<Function> &fns) {
  std::string out;
  { // fmt_record: rows, pos, and a call count.
    float buffer[3] = {0, 0, 5};
    void *args[] = {buffer};
    find(names, fns, "fmt_record")(args, 7, 11);
    if (buffer[0] != 7 || buffer[1] != 11 || buffer[2] != 6)
      fail("fmt_record wrote " + std::to_string(buffer[0]) + " " +
           std::to_string(buffer[1]) + " " + std::to_string(buffer[2]));
    out += "fmt_record ok";
  }
  { // fmt_write_kv: 8 floats of each 32-float row into rows pos.. (memcpy).
    const int64_t rows = 3, pos = 2, width = 8, stride = 32;
    std::vector<float> k(rows * stride), v(rows * stride);
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = 0.5f * float(i);
      v[i] = -0.25f * float(i);
    }
    std::vector<float> ck((pos + rows) * width, -1.0f), cv(ck);
    void *args[] = {k.data(), v.data(), ck.data(), cv.data()};
    find(names, fns, "fmt_write_kv")(args, rows, pos);
    for (int64_t r = 0; r < pos + rows; ++r)
      for (int64_t c = 0; c < width; ++c) {
        const bool written = r >= pos;
        const float wk = written ? k[(r - pos) * stride + c] : -1.0f;
        const float wv = written ? v[(r - pos) * stride + c] : -1.0f;
        if (ck[r * width + c] != wk || cv[r * width + c] != wv)
          fail("fmt_write_kv: cache row " + std::to_string(r) + " column " +
               std::to_string(c) + " differs");
      }
    out += ", fmt_write_kv ok";
  }
  { // fmt_write_kv_i8: clamp(roundeven(x / s)) (nearbyintf).
    const int64_t rows = 2, width = 64, stride = 256;
    std::vector<float> k(rows * stride), v(rows * stride);
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = std::sin(0.37f * float(i)) * 40.0f;
      v[i] = 2.5f * float(int(i % 7) - 3); // halves: ties to even
    }
    float ks = 0.25f, vs = 1.0f;
    std::vector<int8_t> ck(rows * width), cv(rows * width);
    void *args[] = {k.data(), v.data(), &ks, &vs, ck.data(), cv.data()};
    find(names, fns, "fmt_write_kv_i8")(args, rows, 0);
    auto q = [](float x, float s) {
      float t = x / s, r = std::floor(t);
      const float d = t - r;
      if (d > 0.5f || (d == 0.5f && std::fmod(r, 2.0f) != 0.0f))
        r += 1.0f;
      return static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, r)));
    };
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        if (ck[r * width + c] != q(k[r * stride + c], ks) ||
            cv[r * width + c] != q(v[r * stride + c], vs))
          fail("fmt_write_kv_i8: row " + std::to_string(r) + " column " +
               std::to_string(c) + " differs");
    out += ", fmt_write_kv_i8 ok";
  }
  { // fmt_thread_tag: the calling thread's id (gettid, in the kernel).
    Function tag = find(names, fns, "fmt_thread_tag");
    float mine = 0, theirs = 0;
    long myId = threadId(), theirId = 0;
    void *a[] = {&mine};
    tag(a, 1, 0);
    std::thread t([&] {
      void *b[] = {&theirs};
      tag(b, 1, 0);
      theirId = threadId();
    });
    t.join();
    if (mine != float((myId & 0xfffff) + 1) || theirs != float((theirId & 0xfffff) + 1) ||
        mine == theirs)
      fail("fmt_thread_tag: " + std::to_string(mine) + " and " + std::to_string(theirs) +
           " for threads " + std::to_string(myId) + " and " + std::to_string(theirId));
    out += ", fmt_thread_tag ok (2 threads)";
  }
  { // fmt_sincos: libm through the PLT (the runtime's import table).
    double x = 0.7, sc[2] = {0, 0};
    void *args[] = {&x, sc};
    find(names, fns, "fmt_sincos")(args, 1, 0);
    if (sc[0] != std::sin(x) || sc[1] != std::cos(x))
      fail("fmt_sincos: " + std::to_string(sc[0]) + " " + std::to_string(sc[1]));
    out += ", fmt_sincos ok";
  }
  { // fmt_table: function pointers in data (relative relocations).
    float x = 3.0f, r[2] = {0, 0};
    void *args[] = {&x, r};
    find(names, fns, "fmt_table")(args, 1, 0);
    if (r[0] != 6.0f || r[1] != 9.0f)
      fail("fmt_table: " + std::to_string(r[0]) + " " + std::to_string(r[1]));
    out += ", fmt_table ok";
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  using namespace fm::hal;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s IMAGE [--function NAME]... [--all-functions] "
                         "[--maps] [--call-test-kernels]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  std::vector<std::string> functions;
  bool all = false, showMaps = false, callKernels = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--function" && i + 1 < argc)
      functions.push_back(argv[++i]);
    else if (a == "--all-functions")
      all = true;
    else if (a == "--maps")
      showMaps = true;
    else if (a == "--call-test-kernels")
      callKernels = true;
    else
      fail("unknown argument " + a);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open " + path);
  const std::vector<uint8_t> image((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const std::string what = path;
  if (std::string p = elfMachineProblem(image.data(), image.size()); !p.empty())
    fail(what + " cannot run on this machine: " + p);
  ElfLayout layout;
  if (std::string p = elfImageProblem(image.data(), image.size(), {}, &layout); !p.empty())
    fail(what + " is corrupt: " + p);
  if (all || callKernels)
    for (const ElfLayout::Symbol &s : layout.symbols)
      if (s.defined && !s.absolute && !s.name.empty() &&
          (s.name.rfind("fmk_", 0) == 0 || s.name.rfind("fmt_", 0) == 0) &&
          std::find(functions.begin(), functions.end(), s.name) == functions.end())
        functions.push_back(s.name);
  if (std::string p = elfImageProblem(image.data(), image.size(), functions, &layout);
      !p.empty())
    fail(what + " is corrupt: " + p);
  auto loaded = LoadedElf::load(image.data(), image.size(), layout, defaultElfImports(), what);
  if (!loaded)
    fail(loaded.message());
  std::vector<Function> fns;
  for (uint64_t address : layout.functions)
    fns.push_back(reinterpret_cast<Function>(loaded->at(address)));

  std::set<std::string> imports;
  for (const ElfLayout::Relocation &r : layout.relocations)
    if (!r.relative && r.symbol < layout.symbols.size() && !layout.symbols[r.symbol].defined)
      imports.insert(layout.symbols[r.symbol].name);
  std::string importList;
  for (const std::string &name : imports)
    importList += " " + name;
  std::printf("loaded %s: %zu segments, %zu relocations, imports%s, %zu functions\n",
              path.c_str(), layout.segments.size(), layout.relocations.size(),
              importList.empty() ? " none" : importList.c_str(), fns.size());
  if (showMaps)
    std::printf("maps: %s\n", maps(loaded->mapping(), loaded->mappedBytes()).c_str());
  if (callKernels)
    std::printf("calls: %s\n", callTestKernels(functions, fns).c_str());
  return 0;
}
