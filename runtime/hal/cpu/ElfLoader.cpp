// fmc's loader for generated CPU code (ElfLoader.h): map, copy, relocate,
// protect. Every address it reads or writes was checked by ElfImage.cpp.
#include "hal/cpu/ElfLoader.h"

#include "hal/cpu/ElfFormat.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <sys/mman.h>
#if defined(__APPLE__)
#include <libkern/OSCacheControl.h>
#include <pthread.h>
#endif

namespace fm::hal {

using namespace elf;

namespace {

// The runtime's own copies of what generated code calls. Taking the
// address of a libm function directly would work too; wrappers keep the
// table the same on every C library (glibc's sincos is a GNU extension,
// Apple's is __sincos) and keep the process's symbols out of the image.
void *fmMemcpy(void *d, const void *s, size_t n) { return std::memcpy(d, s, n); }
void *fmMemmove(void *d, const void *s, size_t n) { return std::memmove(d, s, n); }
void *fmMemset(void *d, int c, size_t n) { return std::memset(d, c, n); }
void fmSincos(double x, double *s, double *c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
void fmSincosf(float x, float *s, float *c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
float fmNearbyintf(float x) { return std::nearbyint(x); }
double fmNearbyint(double x) { return std::nearbyint(x); }
float fmRintf(float x) { return std::rint(x); }
float fmRoundf(float x) { return std::round(x); }
float fmRoundevenf(float x) { return std::nearbyint(x); } // default rounding: to even
float fmFloorf(float x) { return std::floor(x); }
float fmCeilf(float x) { return std::ceil(x); }
float fmTruncf(float x) { return std::trunc(x); }
float fmFmaf(float a, float b, float c) { return std::fma(a, b, c); }
double fmFma(double a, double b, double c) { return std::fma(a, b, c); }
float fmFmodf(float a, float b) { return std::fmod(a, b); }
float fmFminf(float a, float b) { return std::fmin(a, b); }
float fmFmaxf(float a, float b) { return std::fmax(a, b); }
float fmSqrtf(float x) { return std::sqrt(x); }
double fmSqrt(double x) { return std::sqrt(x); }
float fmExpf(float x) { return std::exp(x); }
double fmExp(double x) { return std::exp(x); }
float fmExp2f(float x) { return std::exp2(x); }
float fmExpm1f(float x) { return std::expm1(x); }
float fmLogf(float x) { return std::log(x); }
double fmLog(double x) { return std::log(x); }
float fmLog2f(float x) { return std::log2(x); }
float fmLog10f(float x) { return std::log10(x); }
float fmLog1pf(float x) { return std::log1p(x); }
float fmPowf(float a, float b) { return std::pow(a, b); }
double fmPow(double a, double b) { return std::pow(a, b); }
float fmSinf(float x) { return std::sin(x); }
float fmCosf(float x) { return std::cos(x); }
double fmSin(double x) { return std::sin(x); }
double fmCos(double x) { return std::cos(x); }
float fmTanf(float x) { return std::tan(x); }
float fmTanhf(float x) { return std::tanh(x); }
double fmTanh(double x) { return std::tanh(x); }
float fmAtanf(float x) { return std::atan(x); }
float fmAtan2f(float a, float b) { return std::atan2(a, b); }
float fmErff(float x) { return std::erf(x); }
double fmErf(double x) { return std::erf(x); }

template <typename F> void *address(F *f) { return reinterpret_cast<void *>(f); }

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

uint64_t alignDown(uint64_t v, uint64_t a) { return v & ~(a - 1); }
uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

std::string systemError() { return std::strerror(errno); }

// Maps `bytes` of zeroed memory the loader may write.
uint8_t *mapWritable(size_t bytes) {
#if defined(__APPLE__) && defined(__aarch64__)
  // The hardened runtime allows executable memory only as MAP_JIT (the
  // app's com.apple.security.cs.allow-jit entitlement): mapped RWX once,
  // with writes and execution toggled per thread.
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE | PROT_EXEC,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_JIT, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  pthread_jit_write_protect_np(0);
  return static_cast<uint8_t *>(p);
#else
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
#endif
}

void unmap(uint8_t *p, size_t bytes) { munmap(p, bytes); }

// Gives [p, p + bytes) the segment flags' protection (0: none).
bool protect(uint8_t *p, size_t bytes, uint32_t flags) {
#if defined(__APPLE__) && defined(__aarch64__)
  // MAP_JIT pages keep RWX; the per-thread switch (finish()) is the W^X.
  (void)p;
  (void)bytes;
  (void)flags;
  return true;
#else
  int prot = PROT_NONE;
  if (flags & PF_R)
    prot |= PROT_READ;
  if (flags & PF_W)
    prot |= PROT_WRITE;
  if (flags & PF_X)
    prot |= PROT_EXEC;
  return mprotect(p, bytes, prot) == 0;
#endif
}

// Makes the written code visible to instruction fetch.
void finishCode(uint8_t *p, size_t bytes) {
#if defined(__APPLE__) && defined(__aarch64__)
  pthread_jit_write_protect_np(1);
  sys_icache_invalidate(p, bytes);
#elif defined(__x86_64__) || defined(__i386__)
  (void)p; // coherent instruction caches
  (void)bytes;
#else
  __builtin___clear_cache(reinterpret_cast<char *>(p), reinterpret_cast<char *>(p + bytes));
#endif
}

} // namespace

const std::vector<ElfImport> &defaultElfImports() {
  static const std::vector<ElfImport> imports = {
      {"memcpy", address(fmMemcpy)},       {"memmove", address(fmMemmove)},
      {"memset", address(fmMemset)},       {"sincos", address(fmSincos)},
      {"sincosf", address(fmSincosf)},     {"nearbyintf", address(fmNearbyintf)},
      {"nearbyint", address(fmNearbyint)}, {"rintf", address(fmRintf)},
      {"roundf", address(fmRoundf)},       {"roundevenf", address(fmRoundevenf)},
      {"floorf", address(fmFloorf)},       {"ceilf", address(fmCeilf)},
      {"truncf", address(fmTruncf)},       {"fmaf", address(fmFmaf)},
      {"fma", address(fmFma)},             {"fmodf", address(fmFmodf)},
      {"fminf", address(fmFminf)},         {"fmaxf", address(fmFmaxf)},
      {"sqrtf", address(fmSqrtf)},         {"sqrt", address(fmSqrt)},
      {"expf", address(fmExpf)},           {"exp", address(fmExp)},
      {"exp2f", address(fmExp2f)},         {"expm1f", address(fmExpm1f)},
      {"logf", address(fmLogf)},           {"log", address(fmLog)},
      {"log2f", address(fmLog2f)},         {"log10f", address(fmLog10f)},
      {"log1pf", address(fmLog1pf)},       {"powf", address(fmPowf)},
      {"pow", address(fmPow)},             {"sinf", address(fmSinf)},
      {"cosf", address(fmCosf)},           {"sin", address(fmSin)},
      {"cos", address(fmCos)},             {"tanf", address(fmTanf)},
      {"tanhf", address(fmTanhf)},         {"tanh", address(fmTanh)},
      {"atanf", address(fmAtanf)},         {"atan2f", address(fmAtan2f)},
      {"erff", address(fmErff)},           {"erf", address(fmErf)},
  };
  return imports;
}

std::string importNames(const std::vector<ElfImport> &imports) {
  std::string out;
  for (const ElfImport &i : imports)
    out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

LoadedElf::~LoadedElf() { release(); }

LoadedElf::LoadedElf(LoadedElf &&other) noexcept { *this = std::move(other); }

LoadedElf &LoadedElf::operator=(LoadedElf &&other) noexcept {
  if (this != &other) {
    release();
    base_ = other.base_;
    first_ = other.first_;
    mapping_ = other.mapping_;
    size_ = other.size_;
    other.base_ = other.mapping_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void LoadedElf::release() {
  if (mapping_)
    unmap(mapping_, size_);
  mapping_ = base_ = nullptr;
  size_ = 0;
}

Expected<LoadedElf> LoadedElf::load(const uint8_t *image, size_t size,
                                    const ElfLayout &layout,
                                    const std::vector<ElfImport> &imports,
                                    const std::string &what) {
  if (layout.segments.empty())
    return Status::error(what + ": the image has no loadable segment");
  const uint64_t page = elfPageSize();
  const ElfLayout::Segment &firstSeg = layout.segments.front();
  const ElfLayout::Segment &lastSeg = layout.segments.back();
  const uint64_t first = alignDown(firstSeg.vaddr, page);
  const uint64_t end = alignUp(lastSeg.vaddr + lastSeg.memsz, page);
  // Each segment is at most 1 GiB (checked); so is the whole.
  if (end - first > (uint64_t(1) << 30))
    return Status::error(what + ": the image's segments span " + std::to_string(end - first) +
                         " bytes (generated code spans far less than 1 GiB)");
  LoadedElf out;
  out.size_ = static_cast<size_t>(end - first);
  out.mapping_ = mapWritable(out.size_);
  if (!out.mapping_) {
    out.size_ = 0;
    return Status::error(what + ": cannot map " + std::to_string(end - first) +
                         " bytes for the image: " + systemError());
  }
  out.base_ = out.mapping_;
  out.first_ = first;

  for (const ElfLayout::Segment &s : layout.segments)
    if (s.filesz > 0 && s.offset + s.filesz <= size) // checked: inside
      std::memcpy(out.at(s.vaddr), image + s.offset, static_cast<size_t>(s.filesz));

  // Relocations: every entry bound now (there is no lazy binding to do).
  const uint64_t bias = reinterpret_cast<uintptr_t>(out.mapping_) - first;
  for (size_t i = 0; i < layout.relocations.size(); ++i) {
    const ElfLayout::Relocation &r = layout.relocations[i];
    uint64_t value = 0;
    if (r.relative) {
      value = bias + static_cast<uint64_t>(r.addend);
    } else {
      if (r.symbol >= layout.symbols.size())
        return Status::error(what + ": relocation " + std::to_string(i) +
                             " names symbol " + std::to_string(r.symbol) +
                             " of " + std::to_string(layout.symbols.size()));
      const ElfLayout::Symbol &sym = layout.symbols[r.symbol];
      if (sym.absolute) {
        value = sym.value;
      } else if (sym.defined) {
        value = bias + sym.value; // the image's own: no interposition
      } else {
        const ElfImport *found = nullptr;
        for (const ElfImport &imp : imports)
          if (sym.name == imp.name)
            found = &imp;
        if (found)
          value = reinterpret_cast<uintptr_t>(found->address);
        else if (!sym.weak)
          return Status::error(
              what + ": relocation " + std::to_string(i) + " (type " +
              std::to_string(r.type) + " at " + hex(r.offset) + ") needs '" +
              sym.name + "', which is not a function the runtime gives generated code (" +
              importNames(imports) + ")");
      }
      value += static_cast<uint64_t>(r.addend);
    }
    if (sizeof(void *) == 8) {
      std::memcpy(out.at(r.offset), &value, 8);
    } else {
      const uint32_t word = static_cast<uint32_t>(value);
      std::memcpy(out.at(r.offset), &word, 4);
    }
  }

  // Protections: each segment's pages as its flags say (checked: never
  // writable and executable, never a page shared by two segments); the
  // gaps between them none.
  uint64_t cursor = first;
  for (const ElfLayout::Segment &s : layout.segments) {
    const uint64_t from = alignDown(s.vaddr, page);
    const uint64_t to = alignUp(s.vaddr + s.memsz, page);
    if (from > cursor &&
        !protect(static_cast<uint8_t *>(out.at(cursor)), static_cast<size_t>(from - cursor), 0))
      return Status::error(what + ": cannot protect the gap at " + hex(cursor) + ": " +
                           systemError());
    if (s.flags & PF_X)
      finishCode(static_cast<uint8_t *>(out.at(from)), static_cast<size_t>(to - from));
    if (!protect(static_cast<uint8_t *>(out.at(from)), static_cast<size_t>(to - from),
                 s.flags))
      return Status::error(what + ": cannot protect the segment at " + hex(s.vaddr) +
                           ": " + systemError());
    cursor = to;
  }
  return out;
}

} // namespace fm::hal
