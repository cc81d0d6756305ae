// The ELF image check (ElfImage.h). It reads the image the way ld.so and
// dlsym do (program headers, the dynamic section, and the tables it points
// to), with every read bounds-checked, and accepts only what ld.lld -shared
// writes for fmc's generated code: no interpreter, no TLS, no initializers,
// no library but the C runtime's, no IFUNCs, relocations of a few kinds.
#include "hal/cpu/ElfImage.h"

#include "hal/cpu/ElfFormat.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include <unistd.h>

namespace fm::hal {

using namespace elf;

namespace {

// Returns the problem of `expr` (a std::string) when there is one.
#define FM_ELF_TRY(expr)                                                       \
  do {                                                                         \
    if (std::string fmElfProblem = (expr); !fmElfProblem.empty())              \
      return fmElfProblem;                                                     \
  } while (0)

template <bool Is64> struct ElfTypes;
template <> struct ElfTypes<true> {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
  using Dyn = Elf64_Dyn;
  using Sym = Elf64_Sym;
  using Rela = Elf64_Rela;
  using Rel = Elf64_Rel;
  static constexpr unsigned char kClass = ELFCLASS64;
  static uint32_t relType(uint64_t info) { return ELF64_R_TYPE(info); }
  static uint64_t relSym(uint64_t info) { return ELF64_R_SYM(info); }
  static unsigned symType(unsigned char info) { return ELF64_ST_TYPE(info); }
  static unsigned symBind(unsigned char info) { return ELF64_ST_BIND(info); }
};
template <> struct ElfTypes<false> {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
  using Dyn = Elf32_Dyn;
  using Sym = Elf32_Sym;
  using Rela = Elf32_Rela;
  using Rel = Elf32_Rel;
  [[maybe_unused]] static constexpr unsigned char kClass = ELFCLASS32;
  static uint32_t relType(uint64_t info) { return ELF32_R_TYPE(info); }
  static uint64_t relSym(uint64_t info) { return ELF32_R_SYM(info); }
  static unsigned symType(unsigned char info) { return ELF32_ST_TYPE(info); }
  static unsigned symBind(unsigned char info) { return ELF32_ST_BIND(info); }
};
using E = ElfTypes<sizeof(void *) == 8>;
constexpr uint64_t kWord = sizeof(void *);

// The relocations a shared object of this machine may carry: those that
// need no symbol (relative) and those that do (absolute, GOT, PLT). Others
// (TLS, IRELATIVE, COPY, ...) are not in fmc's code; an IRELATIVE would run
// a resolver at load time.
struct RelocationKinds {
  uint16_t machine;
  bool rela; // RELA (addends in the table) rather than REL
  uint32_t none, relative, absolute, globDat, jumpSlot;
};
#if defined(__x86_64__)
constexpr RelocationKinds kHost = {EM_X86_64, true, R_X86_64_NONE,
                                   R_X86_64_RELATIVE, R_X86_64_64,
                                   R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT};
#elif defined(__aarch64__)
constexpr RelocationKinds kHost = {EM_AARCH64, true, R_AARCH64_NONE,
                                   R_AARCH64_RELATIVE, R_AARCH64_ABS64,
                                   R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT};
#elif defined(__i386__)
constexpr RelocationKinds kHost = {EM_386, false, R_386_NONE, R_386_RELATIVE,
                                   R_386_32, R_386_GLOB_DAT, R_386_JMP_SLOT};
#elif defined(__arm__)
constexpr RelocationKinds kHost = {EM_ARM, false, R_ARM_NONE,
                                   R_ARM_RELATIVE, R_ARM_ABS32,
                                   R_ARM_GLOB_DAT, R_ARM_JUMP_SLOT};
#elif defined(__riscv) && __riscv_xlen == 64
constexpr RelocationKinds kHost = {EM_RISCV, true, R_RISCV_NONE,
                                   R_RISCV_RELATIVE, R_RISCV_64, R_RISCV_64,
                                   R_RISCV_JUMP_SLOT};
#else
#define FM_ELF_UNKNOWN_MACHINE 1
constexpr RelocationKinds kHost = {0, true, 0, 0, 0, 0, 0};
#endif

std::string machineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86_64";
  case EM_AARCH64:
    return "aarch64";
  case EM_RISCV:
    return "riscv";
  case EM_386:
    return "i386";
  case EM_ARM:
    return "arm";
  }
  return "ELF machine " + std::to_string(machine);
}

std::string num(uint64_t v) { return std::to_string(v); }

std::string range(uint64_t begin, uint64_t size) {
  const uint64_t end = begin + size < begin ? ~uint64_t(0) : begin + size;
  return "[" + num(begin) + ", " + num(end) + ")";
}

bool powerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t pageSize() { return elfPageSize(); }

std::string segmentType(uint32_t type) {
  switch (type) {
  case PT_NULL:
    return "PT_NULL";
  case PT_LOAD:
    return "PT_LOAD";
  case PT_DYNAMIC:
    return "PT_DYNAMIC";
  case PT_INTERP:
    return "PT_INTERP";
  case PT_NOTE:
    return "PT_NOTE";
  case PT_PHDR:
    return "PT_PHDR";
  case PT_TLS:
    return "PT_TLS";
  case PT_GNU_EH_FRAME:
    return "PT_GNU_EH_FRAME";
  case PT_GNU_STACK:
    return "PT_GNU_STACK";
  case PT_GNU_RELRO:
    return "PT_GNU_RELRO";
  case PT_GNU_PROPERTY:
    return "PT_GNU_PROPERTY";
  }
  return "type " + num(type);
}

// The GNU hash of a symbol name (dl_new_hash).
uint32_t gnuHash(const std::string &name) {
  uint32_t h = 5381;
  for (unsigned char c : name)
    h = h * 33 + c;
  return h;
}

// The SysV hash of a symbol name (ELF gABI).
uint32_t sysvHash(const std::string &name) {
  uint32_t h = 0;
  for (unsigned char c : name) {
    h = (h << 4) + c;
    uint32_t g = h & 0xf0000000u;
    if (g)
      h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

class Checker {
public:
  Checker(const uint8_t *image, size_t size) : p_(image), size_(size) {}

  std::string run(const std::vector<std::string> &functions);
  /// After run() accepted the image: what the loader needs.
  void layout(ElfLayout *out) const;

private:
  // Reads a T at file offset `offset`; false when it is not all inside.
  template <typename T> bool read(uint64_t offset, T *out) const {
    if (offset > size_ || sizeof(T) > size_ - offset)
      return false;
    std::memcpy(out, p_ + offset, sizeof(T));
    return true;
  }
  bool inFile(uint64_t offset, uint64_t bytes) const {
    return offset <= size_ && bytes <= size_ - offset;
  }
  // The file offset of `bytes` bytes at address `addr` of a loaded
  // segment's file-backed part; false when they are not all in one.
  bool fileOffset(uint64_t addr, uint64_t bytes, uint64_t *offset) const {
    for (const E::Phdr &s : loads_)
      if (addr >= s.p_vaddr && addr - s.p_vaddr <= s.p_filesz &&
          bytes <= s.p_filesz - (addr - s.p_vaddr)) {
        *offset = s.p_offset + (addr - s.p_vaddr);
        return true;
      }
    return false;
  }
  // The loaded segment whose memory holds [addr, addr + bytes), or null.
  const E::Phdr *segmentAt(uint64_t addr, uint64_t bytes) const {
    for (const E::Phdr &s : loads_)
      if (addr >= s.p_vaddr && addr - s.p_vaddr <= s.p_memsz &&
          bytes <= s.p_memsz - (addr - s.p_vaddr))
        return &s;
    return nullptr;
  }
  // The NUL-terminated string at `offset` of the string table, or why not.
  std::string stringAt(uint64_t offset, std::string *out) const {
    if (offset >= strSize_)
      return "a name at string table offset " + num(offset) +
             " lies past the string table (" + num(strSize_) + " bytes)";
    const char *s = reinterpret_cast<const char *>(p_ + strOffset_ + offset);
    // The table ends in a NUL (checked), so this stops inside it.
    *out = std::string(s);
    return {};
  }

  std::string header();
  std::string programHeaders();
  std::string notes(const E::Phdr &s, size_t index);
  std::string sections();
  std::string dynamic();
  std::string table(const char *what, uint64_t addr, uint64_t bytes,
                    uint64_t *offset) const;
  std::string gnuHashTable();
  std::string sysvHashTable();
  std::string symbols();
  std::string relocations(const char *what, uint64_t addr, uint64_t bytes,
                          uint64_t entry, bool rela);
  std::string function(const std::string &name, uint64_t *address);

  const uint8_t *p_;
  size_t size_;
  E::Ehdr eh_{};
  std::vector<E::Phdr> loads_;
  const E::Phdr *dynamic_ = nullptr;
  E::Phdr dynamicSeg_{};
  // From the dynamic section (addresses), then as file offsets.
  uint64_t strAddr_ = 0, strSize_ = 0, symAddr_ = 0, symEnt_ = 0;
  uint64_t gnuHashAddr_ = 0, sysvHashAddr_ = 0;
  bool haveStr_ = false, haveStrSize_ = false, haveSym_ = false;
  bool haveGnuHash_ = false, haveSysvHash_ = false;
  uint64_t relaAddr_ = 0, relaSize_ = 0, relaEnt_ = 0;
  uint64_t relAddr_ = 0, relSize_ = 0, relEnt_ = 0;
  uint64_t jmpAddr_ = 0, jmpSize_ = 0, pltRel_ = 0;
  bool haveRela_ = false, haveRel_ = false, haveJmp_ = false;
  bool haveRelaEnt_ = false, haveRelEnt_ = false, havePltRel_ = false;
  bool haveRelaSize_ = false, haveRelSize_ = false, haveJmpSize_ = false;
  bool havePltGot_ = false;
  uint64_t strOffset_ = 0, symOffset_ = 0, numSymbols_ = 0;
  // GNU hash: buckets and chains as file offsets.
  uint32_t gnuBuckets_ = 0, gnuSymOffset_ = 0, gnuBloomWords_ = 0,
           gnuShift_ = 0;
  uint64_t gnuBucketOffset_ = 0, gnuChainAddr_ = 0;
  uint32_t sysvBuckets_ = 0, sysvChains_ = 0;
  uint64_t sysvOffset_ = 0;
  // What the relocation tables and the functions come to (for layout()).
  std::vector<ElfLayout::Relocation> relocs_;
  std::vector<uint64_t> functionAddrs_;
};

std::string Checker::header() {
  if (!read(0, &eh_))
    return "the image is shorter than an ELF header";
  if (eh_.e_ident[EI_VERSION] != EV_CURRENT || eh_.e_version != EV_CURRENT)
    return "the ELF version is " + num(eh_.e_version) + ", not 1";
  if (eh_.e_ident[EI_OSABI] != ELFOSABI_SYSV &&
      eh_.e_ident[EI_OSABI] != ELFOSABI_GNU)
    return "the ELF OS ABI is " + num(eh_.e_ident[EI_OSABI]) +
           ", not System V or GNU";
  if (eh_.e_ehsize != sizeof(E::Ehdr))
    return "the ELF header size is " + num(eh_.e_ehsize) + ", not " +
           num(sizeof(E::Ehdr));
  if (eh_.e_phentsize != sizeof(E::Phdr))
    return "program headers of " + num(eh_.e_phentsize) + " bytes, not " +
           num(sizeof(E::Phdr));
  if (eh_.e_phnum == 0 || eh_.e_phnum > 64)
    return num(eh_.e_phnum) + " program headers (1 to 64 expected)";
  if (!inFile(eh_.e_phoff, uint64_t(eh_.e_phnum) * sizeof(E::Phdr)))
    return "the program headers at " +
           range(eh_.e_phoff, uint64_t(eh_.e_phnum) * sizeof(E::Phdr)) +
           " lie outside the image (" + num(size_) + " bytes)";
  return {};
}

std::string Checker::notes(const E::Phdr &s, size_t index) {
  // Note entries (ld.so reads the GNU property note): each header and its
  // padded name and descriptor inside the segment.
  const uint64_t align = s.p_align == 8 ? 8 : 4;
  uint64_t at = s.p_offset;
  const uint64_t end = s.p_offset + s.p_filesz;
  while (at < end) {
    uint32_t n[3]; // namesz, descsz, type (32-bit in both classes)
    if (end - at < sizeof(n) || !read(at, &n))
      return "program header " + num(index) + " (" + segmentType(s.p_type) +
             "): a note header at byte " + num(at) + " runs past the segment";
    const uint64_t name = (uint64_t(n[0]) + align - 1) & ~(align - 1);
    const uint64_t desc = (uint64_t(n[1]) + align - 1) & ~(align - 1);
    const uint64_t body = end - at - sizeof(n);
    if (name > body || desc > body - name)
      return "program header " + num(index) + " (" + segmentType(s.p_type) +
             "): a note at byte " + num(at) + " of " + num(n[0]) +
             " name and " + num(n[1]) + " descriptor bytes runs past the "
             "segment";
    at += sizeof(n) + name + desc;
  }
  return {};
}

std::string Checker::programHeaders() {
  uint64_t lastEnd = 0;
  bool any = false;
  std::vector<E::Phdr> all(eh_.e_phnum);
  for (size_t i = 0; i < all.size(); ++i) {
    E::Phdr &s = all[i];
    read(eh_.e_phoff + i * sizeof(E::Phdr), &s); // inside (header())
    const std::string at =
        "program header " + num(i) + " (" + segmentType(s.p_type) + ")";
    switch (s.p_type) {
    case PT_NULL:
      continue;
    case PT_LOAD:
    case PT_DYNAMIC:
    case PT_NOTE:
    case PT_PHDR:
    case PT_GNU_EH_FRAME:
    case PT_GNU_STACK:
    case PT_GNU_RELRO:
    case PT_GNU_PROPERTY:
      break;
    case PT_INTERP:
      return at + ": a shared object of generated code has no interpreter";
    case PT_TLS:
      return at + ": generated code has no thread-local storage";
    default:
      return at + ": not a segment type of generated code";
    }
    if ((s.p_flags & ~uint32_t(PF_R | PF_W | PF_X)) != 0)
      return at + ": unknown flags " + num(s.p_flags);
    if ((s.p_flags & PF_W) && (s.p_flags & PF_X))
      return at + ": a segment both writable and executable";
    if (s.p_type == PT_GNU_STACK) {
      if (s.p_flags & PF_X)
        return at + ": the image asks for an executable stack";
      continue;
    }
    if (!inFile(s.p_offset, s.p_filesz))
      return at + ": bytes " + range(s.p_offset, s.p_filesz) +
             " lie outside the image (" + num(size_) + " bytes)";
    if (s.p_type != PT_LOAD)
      continue;
    if (s.p_filesz > s.p_memsz)
      return at + ": " + num(s.p_filesz) + " bytes in the file but only " +
             num(s.p_memsz) + " in memory";
    // ld.so reads its tables from the mapped segments (and execute-only
    // pages cannot be read where the CPU has protection keys).
    if (!(s.p_flags & PF_R))
      return at + ": a segment that is not readable";
    // Generated code and its tables: far below this.
    if (s.p_memsz > (uint64_t(1) << 30) ||
        s.p_vaddr > (uint64_t(1) << 40))
      return at + ": " + num(s.p_memsz) + " bytes at address " +
             num(s.p_vaddr) + " (an image of generated code is smaller)";
    if (s.p_align > 1 && (!powerOfTwo(s.p_align) || s.p_align > (1u << 20) ||
                          s.p_vaddr % s.p_align != s.p_offset % s.p_align))
      return at + ": alignment " + num(s.p_align) +
             " does not match address " + num(s.p_vaddr) + " and offset " +
             num(s.p_offset);
    if (any && s.p_vaddr < lastEnd)
      return at + ": address " + num(s.p_vaddr) +
             " overlaps or precedes the previous loaded segment (which ends "
             "at " +
             num(lastEnd) + ")";
    any = true;
    lastEnd = s.p_vaddr + s.p_memsz;
    loads_.push_back(s);
  }
  if (loads_.empty())
    return "the image has no loadable segment";
  // ld.so maps whole pages, later segments over earlier ones: two segments
  // on one page would make its bytes those of another file offset than the
  // ones checked here (and zeroing a .bss tail could clear the next).
  const uint64_t page = pageSize();
  for (size_t i = 1; i < loads_.size(); ++i) {
    const E::Phdr &a = loads_[i - 1], &b = loads_[i];
    const uint64_t aEnd = (a.p_vaddr + a.p_memsz + page - 1) & ~(page - 1);
    if ((b.p_vaddr & ~(page - 1)) < aEnd)
      return "loaded segments at " + range(a.p_vaddr, a.p_memsz) + " and " +
             range(b.p_vaddr, b.p_memsz) + " share a " + num(page) +
             "-byte page";
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const E::Phdr &s = all[i];
    const std::string at =
        "program header " + num(i) + " (" + segmentType(s.p_type) + ")";
    uint64_t offset = 0;
    switch (s.p_type) {
    case PT_DYNAMIC:
      if (dynamic_)
        return at + ": a second dynamic section";
      if (s.p_filesz == 0 || s.p_filesz % sizeof(E::Dyn) != 0 ||
          !fileOffset(s.p_vaddr, s.p_filesz, &offset) || offset != s.p_offset)
        return at + ": " + num(s.p_filesz) + " bytes at address " +
               num(s.p_vaddr) + " are not whole entries in a loaded segment";
      // Some ld.so versions relocate its entries in place.
      if (!(segmentAt(s.p_vaddr, s.p_filesz)->p_flags & PF_W))
        return at + ": the dynamic section is not in a writable segment";
      dynamicSeg_ = s;
      dynamic_ = &dynamicSeg_;
      break;
    case PT_GNU_RELRO:
      // ld.so makes these pages read-only after relocating: they must be
      // the image's own.
      if (!segmentAt(s.p_vaddr, s.p_memsz))
        return at + ": addresses " + range(s.p_vaddr, s.p_memsz) +
               " are not inside one loaded segment";
      break;
    case PT_PHDR:
      // ld.so reads the program headers through this address once mapped.
      if (s.p_offset != eh_.e_phoff ||
          s.p_filesz < uint64_t(eh_.e_phnum) * sizeof(E::Phdr) ||
          !fileOffset(s.p_vaddr, s.p_filesz, &offset) || offset != s.p_offset)
        return at + ": address " + num(s.p_vaddr) + " and offset " +
               num(s.p_offset) + " do not map the program headers (at " +
               num(eh_.e_phoff) + ")";
      break;
    case PT_NOTE:
    case PT_GNU_PROPERTY:
    case PT_GNU_EH_FRAME:
      // Read through their addresses (the notes by ld.so, p_memsz bytes
      // of them): the mapped bytes there must be these.
      if (s.p_memsz > s.p_filesz || !fileOffset(s.p_vaddr, s.p_filesz, &offset) ||
          offset != s.p_offset)
        return at + ": address " + num(s.p_vaddr) + " does not map its " +
               num(s.p_memsz) + " bytes at offset " + num(s.p_offset);
      if (s.p_type != PT_GNU_EH_FRAME)
        if (std::string p = notes(s, i); !p.empty())
          return p;
      break;
    default:
      break;
    }
  }
  if (!dynamic_)
    return "the image has no dynamic section (not a shared object)";
  return {};
}

std::string Checker::sections() {
  // ld.so does not read sections; tools do (and a corrupt table is a
  // corrupt image).
  if (eh_.e_shoff == 0 && eh_.e_shnum == 0)
    return {};
  if (eh_.e_shentsize != sizeof(E::Shdr))
    return "section headers of " + num(eh_.e_shentsize) + " bytes, not " +
           num(sizeof(E::Shdr));
  if (eh_.e_shnum == 0 ||
      !inFile(eh_.e_shoff, uint64_t(eh_.e_shnum) * sizeof(E::Shdr)))
    return "the section headers at " +
           range(eh_.e_shoff, uint64_t(eh_.e_shnum) * sizeof(E::Shdr)) +
           " lie outside the image (" + num(size_) + " bytes)";
  if (eh_.e_shstrndx >= eh_.e_shnum)
    return "section name table index " + num(eh_.e_shstrndx) +
           " out of range (" + num(eh_.e_shnum) + " sections)";
  E::Shdr names;
  read(eh_.e_shoff + uint64_t(eh_.e_shstrndx) * sizeof(E::Shdr), &names);
  for (uint64_t i = 0; i < eh_.e_shnum; ++i) {
    E::Shdr s;
    read(eh_.e_shoff + i * sizeof(E::Shdr), &s);
    if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL &&
        !inFile(s.sh_offset, s.sh_size))
      return "section " + num(i) + ": bytes " + range(s.sh_offset, s.sh_size) +
             " lie outside the image (" + num(size_) + " bytes)";
    if (i > 0 && s.sh_name >= names.sh_size)
      return "section " + num(i) + ": name offset " + num(s.sh_name) +
             " lies past the section name table (" + num(names.sh_size) +
             " bytes)";
  }
  return {};
}

std::string Checker::table(const char *what, uint64_t addr, uint64_t bytes,
                           uint64_t *offset) const {
  if (!fileOffset(addr, bytes, offset))
    return std::string("the ") + what + " (" + num(bytes) + " bytes at " +
           num(addr) + ") is not inside a loaded segment of the file";
  return {};
}

std::string Checker::dynamic() {
  const uint64_t count = dynamic_->p_filesz / sizeof(E::Dyn);
  bool ended = false;
  uint64_t initArray = 0, finiArray = 0;
  for (uint64_t i = 0; i < count && !ended; ++i) {
    E::Dyn d;
    read(dynamic_->p_offset + i * sizeof(E::Dyn), &d); // inside
    const uint64_t v = d.d_un.d_val;
    const std::string at = "dynamic entry " + num(i) + " (tag " +
                           num(static_cast<uint64_t>(d.d_tag)) + ")";
    switch (d.d_tag) {
    case DT_NULL:
      ended = true;
      break;
    case DT_NEEDED:
    case DT_SONAME:
      break; // Names: checked once the string table is known.
    case DT_STRTAB:
      strAddr_ = v;
      haveStr_ = true;
      break;
    case DT_STRSZ:
      strSize_ = v;
      haveStrSize_ = true;
      break;
    case DT_SYMTAB:
      symAddr_ = v;
      haveSym_ = true;
      break;
    case DT_SYMENT:
      symEnt_ = v;
      break;
    case DT_GNU_HASH:
      gnuHashAddr_ = v;
      haveGnuHash_ = true;
      break;
    case DT_HASH:
      sysvHashAddr_ = v;
      haveSysvHash_ = true;
      break;
    case DT_RELA:
      relaAddr_ = v;
      haveRela_ = true;
      break;
    case DT_RELASZ:
      relaSize_ = v;
      haveRelaSize_ = true;
      break;
    case DT_RELAENT:
      relaEnt_ = v;
      haveRelaEnt_ = true;
      break;
    case DT_REL:
      relAddr_ = v;
      haveRel_ = true;
      break;
    case DT_RELSZ:
      relSize_ = v;
      haveRelSize_ = true;
      break;
    case DT_RELENT:
      relEnt_ = v;
      haveRelEnt_ = true;
      break;
    case DT_JMPREL:
      jmpAddr_ = v;
      haveJmp_ = true;
      break;
    case DT_PLTRELSZ:
      jmpSize_ = v;
      haveJmpSize_ = true;
      break;
    case DT_PLTREL:
      pltRel_ = v;
      havePltRel_ = true;
      break;
    case DT_PLTGOT: {
      havePltGot_ = true;
      // ld.so may write its three reserved words there.
      const E::Phdr *got = segmentAt(v, 3 * kWord);
      if (!got || !(got->p_flags & PF_W))
        return at + ": the GOT address " + num(v) +
               " is not inside a writable loaded segment";
      break;
    }
    case DT_RELACOUNT:
    case DT_RELCOUNT:
    case DT_DEBUG:
    case DT_BIND_NOW:
    case DT_FLAGS_1:
      break;
    case DT_FLAGS:
      if (v & (DF_TEXTREL | DF_STATIC_TLS | DF_ORIGIN))
        return at + ": flags " + num(v) +
               " ask for text relocations, static TLS or $ORIGIN";
      break;
    case DT_INIT:
    case DT_FINI:
    case DT_INIT_ARRAY:
    case DT_FINI_ARRAY:
    case DT_PREINIT_ARRAY:
      ++initArray;
      break;
    case DT_INIT_ARRAYSZ:
    case DT_FINI_ARRAYSZ:
    case DT_PREINIT_ARRAYSZ:
      finiArray += v;
      break;
    case DT_TEXTREL:
      return at + ": the image asks for text relocations";
    case DT_RPATH:
    case DT_RUNPATH:
      return at + ": the image names library search paths";
    default:
      return at + ": not a dynamic tag of generated code";
    }
  }
  if (!ended)
    return "the dynamic section has no DT_NULL end";
  // fmc's code runs nothing when loaded: an initializer in an image is
  // corruption, and it would run before any check of ours could help.
  if (initArray > 0 || finiArray > 0)
    return "the image has initializers or finalizers (generated code has "
           "none)";
  if (!haveStr_ || !haveStrSize_ || !haveSym_)
    return "the dynamic section lacks the string or symbol table";
  if (symEnt_ != sizeof(E::Sym))
    return "symbol table entries of " + num(symEnt_) + " bytes, not " +
           num(sizeof(E::Sym));
  // ld.so reads each table's size and entry tags without asking whether
  // they are there (a missing one is a null pointer): whole families only.
  if (haveRela_ != haveRelaSize_)
    return "the dynamic section has DT_RELA without DT_RELASZ, or the "
           "other way round";
  if (haveRel_ != haveRelSize_)
    return "the dynamic section has DT_REL without DT_RELSZ, or the other "
           "way round";
  if ((haveJmp_ || haveJmpSize_ || havePltRel_) &&
      !(haveJmp_ && haveJmpSize_ && havePltRel_ && havePltGot_))
    return "the dynamic section has part of DT_JMPREL, DT_PLTRELSZ, "
           "DT_PLTREL and DT_PLTGOT";
  // ld.so asserts these whenever the tags are there (get-dynamic-info.h).
  if (havePltRel_ && pltRel_ != DT_RELA && pltRel_ != DT_REL)
    return "the PLT relocations are of kind " + num(pltRel_);
  if ((haveRela_ || haveRelaEnt_) && relaEnt_ != sizeof(E::Rela))
    return "RELA entries of " + num(relaEnt_) + " bytes, not " +
           num(sizeof(E::Rela));
  if ((haveRel_ || haveRelEnt_) && relEnt_ != sizeof(E::Rel))
    return "REL entries of " + num(relEnt_) + " bytes, not " +
           num(sizeof(E::Rel));
  if (!haveGnuHash_ && !haveSysvHash_)
    return "the image has no symbol hash table";
  if (strSize_ == 0)
    return "the string table is empty";
  FM_ELF_TRY(table("string table", strAddr_, strSize_, &strOffset_));
  if (p_[strOffset_ + strSize_ - 1] != 0)
    return "the string table does not end in a NUL byte";

  // Library names, now that the string table is known.
  for (uint64_t i = 0; i < count; ++i) {
    E::Dyn d;
    read(dynamic_->p_offset + i * sizeof(E::Dyn), &d);
    if (d.d_tag == DT_NULL)
      break;
    if (d.d_tag != DT_NEEDED && d.d_tag != DT_SONAME)
      continue;
    std::string name;
    FM_ELF_TRY(stringAt(d.d_un.d_val, &name));
    if (d.d_tag != DT_NEEDED)
      continue;
    // A needed library is loaded (and its initializers run) before any
    // symbol of ours is looked up: only the C runtime's own.
    static const char *const kRuntime[] = {"libc.so.6", "libm.so.6",
                                           "libmvec.so.1", "libgcc_s.so.1"};
    bool known = false;
    for (const char *lib : kRuntime)
      known = known || name == lib;
    if (!known)
      return "the image needs library '" + name +
             "' (generated code needs only the C runtime)";
  }
  return {};
}

std::string Checker::gnuHashTable() {
  uint32_t h[4];
  uint64_t at = 0;
  FM_ELF_TRY(table("GNU hash table", gnuHashAddr_, sizeof(h), &at));
  read(at, &h);
  gnuBuckets_ = h[0];
  gnuSymOffset_ = h[1];
  gnuBloomWords_ = h[2];
  gnuShift_ = h[3];
  // dlsym takes the hash modulo the bucket count and masks with the
  // bloom size minus one.
  if (gnuBuckets_ == 0 || gnuBloomWords_ == 0 || !powerOfTwo(gnuBloomWords_) ||
      gnuShift_ >= 8 * kWord)
    return "the GNU hash table has " + num(gnuBuckets_) + " buckets, " +
           num(gnuBloomWords_) + " bloom words and shift " + num(gnuShift_);
  const uint64_t fixed =
      sizeof(h) + uint64_t(gnuBloomWords_) * kWord + uint64_t(gnuBuckets_) * 4;
  FM_ELF_TRY(table("GNU hash table", gnuHashAddr_, fixed, &at));
  gnuBucketOffset_ = at + sizeof(h) + uint64_t(gnuBloomWords_) * kWord;
  gnuChainAddr_ = gnuHashAddr_ + fixed;
  // Every chain ends (low bit set) inside the table's segment; the symbol
  // count is one past the last symbol of the last chain.
  uint64_t symbols = gnuSymOffset_;
  for (uint32_t b = 0; b < gnuBuckets_; ++b) {
    uint32_t first;
    read(gnuBucketOffset_ + uint64_t(b) * 4, &first);
    if (first == 0)
      continue;
    if (first < gnuSymOffset_)
      return "GNU hash bucket " + num(b) + " starts at symbol " + num(first) +
             ", before the first hashed symbol " + num(gnuSymOffset_);
    for (uint64_t s = first;; ++s) {
      if (s - gnuSymOffset_ > (uint64_t(1) << 24))
        return "GNU hash bucket " + num(b) + ": a chain without an end";
      uint64_t entry = 0;
      const uint64_t addr = gnuChainAddr_ + (s - gnuSymOffset_) * 4;
      if (!fileOffset(addr, 4, &entry))
        return "GNU hash bucket " + num(b) + ": its chain runs past the "
               "table's segment";
      uint32_t value;
      read(entry, &value);
      if (value & 1) {
        symbols = std::max<uint64_t>(symbols, s + 1);
        break;
      }
    }
  }
  numSymbols_ = std::max(numSymbols_, symbols);
  return {};
}

std::string Checker::sysvHashTable() {
  uint32_t h[2];
  uint64_t at = 0;
  FM_ELF_TRY(table("SysV hash table", sysvHashAddr_, sizeof(h), &at));
  read(at, &h);
  sysvBuckets_ = h[0];
  sysvChains_ = h[1];
  if (sysvBuckets_ == 0)
    return "the SysV hash table has no buckets";
  FM_ELF_TRY(table("SysV hash table", sysvHashAddr_,
                   sizeof(h) + 4 * (uint64_t(sysvBuckets_) + sysvChains_),
                   &sysvOffset_));
  for (uint64_t i = 0; i < uint64_t(sysvBuckets_) + sysvChains_; ++i) {
    uint32_t v;
    read(sysvOffset_ + sizeof(h) + 4 * i, &v);
    if (v >= sysvChains_)
      return "SysV hash entry " + num(i) + " names symbol " + num(v) +
             ", past the " + num(sysvChains_) + " symbols";
  }
  numSymbols_ = std::max<uint64_t>(numSymbols_, sysvChains_);
  return {};
}

std::string Checker::symbols() {
  if (numSymbols_ > (uint64_t(1) << 24))
    return num(numSymbols_) + " symbols (generated code has far fewer)";
  FM_ELF_TRY(table("symbol table", symAddr_, numSymbols_ * sizeof(E::Sym),
                   &symOffset_));
  for (uint64_t i = 1; i < numSymbols_; ++i) {
    E::Sym s;
    read(symOffset_ + i * sizeof(E::Sym), &s);
    std::string name;
    if (std::string p = stringAt(s.st_name, &name); !p.empty())
      return "symbol " + num(i) + ": " + p;
    const unsigned type = E::symType(s.st_info);
    if (type == STT_TLS || type == STT_GNU_IFUNC)
      return "symbol " + num(i) + " ('" + name +
             "'): a TLS or IFUNC symbol (generated code has none)";
    if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
      continue; // Undefined, absolute, common: no address in the image.
    if (!segmentAt(s.st_value, s.st_size))
      return "symbol " + num(i) + " ('" + name + "'): " +
             range(s.st_value, s.st_size) + " is not inside a loaded segment";
  }
  return {};
}

std::string Checker::relocations(const char *what, uint64_t addr,
                                 uint64_t bytes, uint64_t entry, bool rela) {
  const uint64_t size = rela ? sizeof(E::Rela) : sizeof(E::Rel);
  if (entry != size || bytes % size != 0)
    return std::string("the ") + what + " has " + num(bytes) +
           " bytes in entries of " + num(entry) + " (expected entries of " +
           num(size) + ")";
  if (rela != kHost.rela)
    return std::string("the ") + what + " has " + (rela ? "RELA" : "REL") +
           " entries, which this machine does not use";
  uint64_t at = 0;
  FM_ELF_TRY(table(what, addr, bytes, &at));
  for (uint64_t i = 0; i < bytes / size; ++i) {
    uint64_t offset, info;
    if (rela) {
      E::Rela r;
      read(at + i * size, &r);
      offset = r.r_offset;
      info = r.r_info;
    } else {
      E::Rel r;
      read(at + i * size, &r);
      offset = r.r_offset;
      info = r.r_info;
    }
    const uint32_t type = E::relType(info);
    const uint64_t sym = E::relSym(info);
    const std::string where =
        std::string(what) + " entry " + num(i) + " (type " + num(type) + ")";
#if !defined(FM_ELF_UNKNOWN_MACHINE)
    if (type == kHost.none)
      continue;
    const bool symbolic = type == kHost.absolute || type == kHost.globDat ||
                          type == kHost.jumpSlot;
    if (type != kHost.relative && !symbolic)
      return where + ": not a relocation of generated code";
    if (symbolic && (sym == 0 || sym >= numSymbols_))
      return where + ": symbol " + num(sym) + " out of range (" +
             num(numSymbols_) + " symbols)";
#endif
    (void)sym;
    const E::Phdr *s = segmentAt(offset, kWord);
    if (!s || !(s->p_flags & PF_W))
      return where + ": writes bytes " + range(offset, kWord) +
             ", which are not inside a writable segment";
#if !defined(FM_ELF_UNKNOWN_MACHINE)
    if (type == kHost.none)
      continue;
    ElfLayout::Relocation r;
    r.offset = offset;
    r.relative = type == kHost.relative;
    r.type = type;
    r.symbol = r.relative ? 0 : sym;
    if (rela) {
      E::Rela full;
      read(at + i * size, &full);
      r.addend = static_cast<int64_t>(full.r_addend);
    } else { // the addend is the word in place (0 past the file's bytes)
      uint64_t wordAt = 0;
      std::conditional_t<kWord == 8, int64_t, int32_t> word = 0;
      if (fileOffset(offset, kWord, &wordAt))
        read(wordAt, &word);
      r.addend = word;
    }
    relocs_.push_back(r);
#endif
  }
  return {};
}

std::string Checker::function(const std::string &name, uint64_t *address) {
  // The lookup dlsym makes: through the GNU hash table when there is one,
  // else the SysV one.
  uint64_t index = 0;
  bool found = false;
  auto matches = [&](uint64_t i, E::Sym *sym) {
    read(symOffset_ + i * sizeof(E::Sym), sym);
    std::string n;
    return stringAt(sym->st_name, &n).empty() && n == name;
  };
  E::Sym sym{};
  if (haveGnuHash_) {
    const uint32_t h = gnuHash(name);
    uint32_t s;
    read(gnuBucketOffset_ + uint64_t(h % gnuBuckets_) * 4, &s);
    for (; s != 0; ++s) { // chains end inside (gnuHashTable())
      uint32_t value;
      uint64_t entry = 0;
      fileOffset(gnuChainAddr_ + (uint64_t(s) - gnuSymOffset_) * 4, 4, &entry);
      read(entry, &value);
      if ((value | 1) == (h | 1) && s < numSymbols_ && matches(s, &sym)) {
        index = s;
        found = true;
        break;
      }
      if (value & 1)
        break;
    }
  } else {
    const uint32_t h = sysvHash(name);
    uint32_t s;
    read(sysvOffset_ + 8 + uint64_t(h % sysvBuckets_) * 4, &s);
    for (uint64_t steps = 0; s != 0 && steps <= sysvChains_; ++steps) {
      if (matches(s, &sym)) {
        index = s;
        found = true;
        break;
      }
      read(sysvOffset_ + 8 + 4 * (uint64_t(sysvBuckets_) + s), &s);
    }
  }
  if (!found)
    return "function '" + name + "' is not in the image's symbol table";
  const std::string at = "function '" + name + "' (symbol " + num(index) + ")";
  if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
      E::symType(sym.st_info) != STT_FUNC ||
      (E::symBind(sym.st_info) != STB_GLOBAL &&
       E::symBind(sym.st_info) != STB_WEAK))
    return at + " is not a defined global function";
  const E::Phdr *s = segmentAt(sym.st_value, sym.st_size > 0 ? sym.st_size : 1);
  if (!s || !(s->p_flags & PF_X))
    return at + ": its code " + range(sym.st_value, sym.st_size) +
           " is not inside an executable segment";
  *address = sym.st_value;
  return {};
}

void Checker::layout(ElfLayout *out) const {
  out->segments.clear();
  for (const E::Phdr &p : loads_) {
    ElfLayout::Segment seg;
    seg.vaddr = p.p_vaddr;
    seg.memsz = p.p_memsz;
    seg.offset = p.p_offset;
    seg.filesz = p.p_filesz;
    seg.flags = p.p_flags;
    out->segments.push_back(seg);
  }
  out->relocations = relocs_;
  out->functions = functionAddrs_;
  out->symbols.assign(numSymbols_, {});
  for (uint64_t i = 1; i < numSymbols_; ++i) {
    E::Sym sym;
    read(symOffset_ + i * sizeof(E::Sym), &sym); // inside (symbols())
    ElfLayout::Symbol &o = out->symbols[i];
    stringAt(sym.st_name, &o.name); // inside (symbols())
    o.defined = sym.st_shndx != SHN_UNDEF;
    o.absolute = sym.st_shndx == SHN_ABS;
    o.weak = E::symBind(sym.st_info) == STB_WEAK;
    o.value = sym.st_value;
  }
}

std::string Checker::run(const std::vector<std::string> &functions) {
  FM_ELF_TRY(header());
  FM_ELF_TRY(programHeaders());
  FM_ELF_TRY(sections());
  FM_ELF_TRY(dynamic());
  if (haveGnuHash_)
    FM_ELF_TRY(gnuHashTable());
  if (haveSysvHash_)
    FM_ELF_TRY(sysvHashTable());
  FM_ELF_TRY(symbols());
  if (haveRela_)
    FM_ELF_TRY(relocations("relocation table", relaAddr_, relaSize_, relaEnt_,
                           true));
  if (haveRel_)
    FM_ELF_TRY(relocations("relocation table", relAddr_, relSize_, relEnt_,
                           false));
  if (haveJmp_) {
    if (pltRel_ != DT_RELA && pltRel_ != DT_REL)
      return "the PLT relocations are of kind " + num(pltRel_);
    FM_ELF_TRY(relocations("PLT relocation table", jmpAddr_, jmpSize_,
                           pltRel_ == DT_RELA ? sizeof(E::Rela)
                                              : sizeof(E::Rel),
                           pltRel_ == DT_RELA));
  }
  functionAddrs_.clear();
  for (const std::string &f : functions) {
    uint64_t address = 0;
    FM_ELF_TRY(function(f, &address));
    functionAddrs_.push_back(address);
  }
  return {};
}

} // namespace

std::string elfMachineProblem(const uint8_t *image, size_t size) {
  if (size < sizeof(E::Ehdr) || std::memcmp(image, ELFMAG, SELFMAG) != 0)
    return "the image is not an ELF file";
  if (image[EI_CLASS] != E::kClass)
    return std::string("the image is ") +
           (image[EI_CLASS] == ELFCLASS64 ? "64" : "32") +
           "-bit, this machine runs " +
           (E::kClass == ELFCLASS64 ? "64" : "32") + "-bit code";
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr unsigned char hostData = ELFDATA2LSB;
#else
  constexpr unsigned char hostData = ELFDATA2MSB;
#endif
  if (image[EI_DATA] != hostData)
    return "the image has the other byte order";
  E::Ehdr header;
  std::memcpy(&header, image, sizeof(header));
  if (kHost.machine != 0 && header.e_machine != kHost.machine)
    return "the image is " + machineName(header.e_machine) +
           " code, this machine is " + machineName(kHost.machine);
  if (header.e_type != ET_DYN)
    return "the image is not a shared object (ELF type " +
           std::to_string(header.e_type) + ")";
  return {};
}

std::string elfImageProblem(const uint8_t *image, size_t size,
                            const std::vector<std::string> &functions) {
  return Checker(image, size).run(functions);
}

std::string elfImageProblem(const uint8_t *image, size_t size,
                            const std::vector<std::string> &functions,
                            ElfLayout *layout) {
  Checker checker(image, size);
  std::string problem = checker.run(functions);
  if (problem.empty() && layout)
    checker.layout(layout);
  return problem;
}

uint64_t elfPageSize() {
  const long got = sysconf(_SC_PAGESIZE);
  const uint64_t p = got > 0 ? uint64_t(got) : 0;
  return powerOfTwo(p) ? p : 4096;
}

} // namespace fm::hal
