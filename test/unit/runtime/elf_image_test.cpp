// The ELF check before dlopen (hal/cpu/ElfImage.h): the runtime tests'
// stand-in kernels (linked as fmc links generated code) pass, and each kind
// of corruption of them is refused with its sentence.
#include "ArtifactBuilder.h"
#include "hal/cpu/CpuExecutable.h"
#include "hal/cpu/ElfImage.h"

#include <gtest/gtest.h>

#if defined(__linux__) && defined(__x86_64__)
#include <elf.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace fm::test {
namespace {

using Image = std::vector<uint8_t>;

const Image &kernels() {
  static const Image image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

template <typename T> T get(const Image &im, uint64_t at) {
  T v;
  std::memcpy(&v, im.data() + at, sizeof(T));
  return v;
}
template <typename T> void put(Image &im, uint64_t at, const T &v) {
  std::memcpy(im.data() + at, &v, sizeof(T));
}

Elf64_Ehdr header(const Image &im) { return get<Elf64_Ehdr>(im, 0); }

// File offset of the first program header of `type` (or -1).
int64_t phdrAt(const Image &im, uint32_t type, int skip = 0) {
  const Elf64_Ehdr h = header(im);
  for (int i = 0; i < h.e_phnum; ++i) {
    const uint64_t at = h.e_phoff + i * sizeof(Elf64_Phdr);
    if (get<Elf64_Phdr>(im, at).p_type == type && skip-- == 0)
      return static_cast<int64_t>(at);
  }
  return -1;
}

int phdrIndex(const Image &im, int64_t at) {
  return static_cast<int>((at - header(im).e_phoff) / sizeof(Elf64_Phdr));
}

// File offset of the dynamic entry of `tag` (or -1).
int64_t dynAt(const Image &im, int64_t tag) {
  const Elf64_Phdr d = get<Elf64_Phdr>(im, phdrAt(im, PT_DYNAMIC));
  for (uint64_t at = d.p_offset; at < d.p_offset + d.p_filesz;
       at += sizeof(Elf64_Dyn)) {
    const Elf64_Dyn e = get<Elf64_Dyn>(im, at);
    if (e.d_tag == tag)
      return static_cast<int64_t>(at);
    if (e.d_tag == DT_NULL)
      break;
  }
  return -1;
}

// File offset of an address in a loaded segment.
uint64_t fileOf(const Image &im, uint64_t addr) {
  const Elf64_Ehdr h = header(im);
  for (int i = 0; i < h.e_phnum; ++i) {
    const Elf64_Phdr p =
        get<Elf64_Phdr>(im, h.e_phoff + i * sizeof(Elf64_Phdr));
    if (p.p_type == PT_LOAD && addr >= p.p_vaddr &&
        addr < p.p_vaddr + p.p_filesz)
      return p.p_offset + (addr - p.p_vaddr);
  }
  ADD_FAILURE() << "address " << addr << " is in no segment";
  return 0;
}

// The dynamic symbol `name`'s file offset.
int64_t symbolAt(const Image &im, const std::string &name) {
  const uint64_t sym = fileOf(im, get<Elf64_Dyn>(im, dynAt(im, DT_SYMTAB)).d_un.d_val);
  const uint64_t str = fileOf(im, get<Elf64_Dyn>(im, dynAt(im, DT_STRTAB)).d_un.d_val);
  for (uint64_t at = sym;; at += sizeof(Elf64_Sym)) {
    const Elf64_Sym s = get<Elf64_Sym>(im, at);
    if (at > sym && s.st_name == 0 && s.st_value == 0)
      break;
    if (name == reinterpret_cast<const char *>(im.data() + str + s.st_name))
      return static_cast<int64_t>(at);
    if (at > sym + 64 * sizeof(Elf64_Sym))
      break;
  }
  return -1;
}

std::string problem(const Image &im,
                    const std::vector<std::string> &functions = {"fmt_record"}) {
  return hal::elfImageProblem(im.data(), im.size(), functions);
}

std::string corrupt(const std::function<void(Image &)> &change,
                    const std::vector<std::string> &functions = {"fmt_record"}) {
  Image im = kernels();
  change(im);
  return problem(im, functions);
}

TEST(ElfImage, GeneratedCodeShapePasses) {
  ASSERT_EQ(hal::elfMachineProblem(kernels().data(), kernels().size()), "");
  EXPECT_EQ(problem(kernels(), {"fmt_record", "fmt_write_kv", "fmt_thread_tag"}),
            "");
  // And the loader takes what the check passes.
  auto exe = hal::CpuExecutable::loadImage(kernels(), {"fmt_record"}, "k.so");
  EXPECT_TRUE(exe.isOk()) << exe.message();
}

TEST(ElfImage, Header) {
  EXPECT_EQ(corrupt([](Image &im) { im.resize(40); }),
            "the image is shorter than an ELF header");
  EXPECT_EQ(corrupt([](Image &im) { im[EI_OSABI] = 97; }),
            "the ELF OS ABI is 97, not System V or GNU");
  EXPECT_EQ(corrupt([](Image &im) {
              put<uint16_t>(im, offsetof(Elf64_Ehdr, e_phentsize), 48);
            }),
            "program headers of 48 bytes, not 56");
  const uint64_t size = kernels().size();
  EXPECT_EQ(corrupt([&](Image &im) {
              put<uint64_t>(im, offsetof(Elf64_Ehdr, e_phoff), size - 8);
            }),
            "the program headers at [" + std::to_string(size - 8) + ", " +
                std::to_string(size - 8 + header(kernels()).e_phnum * 56) +
                ") lie outside the image (" + std::to_string(size) + " bytes)");
  EXPECT_EQ(corrupt([&](Image &im) {
              put<uint64_t>(im, offsetof(Elf64_Ehdr, e_shoff), size);
            }).rfind("the section headers at [", 0),
            0u);
}

TEST(ElfImage, Segments) {
  const Image &k = kernels();
  const int64_t load = phdrAt(k, PT_LOAD, 1); // the code
  ASSERT_GE(load, 0);
  const std::string at =
      "program header " + std::to_string(phdrIndex(k, load)) + " (PT_LOAD)";
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, load);
              p.p_filesz = 1 << 20;
              p.p_memsz = 1 << 20;
              put(im, load, p);
            }).rfind(at + ": bytes [", 0),
            0u);
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, load);
              p.p_flags = PF_R | PF_W | PF_X;
              put(im, load, p);
            }),
            at + ": a segment both writable and executable");
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, load);
              p.p_type = PT_INTERP;
              put(im, load, p);
            }),
            "program header " + std::to_string(phdrIndex(k, load)) +
                " (PT_INTERP): a shared object of generated code has no "
                "interpreter");
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, load);
              p.p_type = 0x1234;
              put(im, load, p);
            }),
            "program header " + std::to_string(phdrIndex(k, load)) +
                " (type 4660): not a segment type of generated code");
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, load);
              p.p_vaddr += 1;
              put(im, load, p);
            }),
            at + ": alignment " + std::to_string(get<Elf64_Phdr>(k, load).p_align) +
                " does not match address " +
                std::to_string(get<Elf64_Phdr>(k, load).p_vaddr + 1) +
                " and offset " + std::to_string(get<Elf64_Phdr>(k, load).p_offset));
  const int64_t stack = phdrAt(k, PT_GNU_STACK);
  ASSERT_GE(stack, 0);
  EXPECT_EQ(corrupt([&](Image &im) {
              auto p = get<Elf64_Phdr>(im, stack);
              p.p_flags = PF_R | PF_X;
              put(im, stack, p);
            }),
            "program header " + std::to_string(phdrIndex(k, stack)) +
                " (PT_GNU_STACK): the image asks for an executable stack");
}

TEST(ElfImage, DynamicSection) {
  const Image &k = kernels();
  auto retag = [&](int64_t from, int64_t to) {
    return corrupt([&](Image &im) {
      const int64_t at = dynAt(im, from);
      ASSERT_GE(at, 0) << "no dynamic tag " << from;
      auto d = get<Elf64_Dyn>(im, at);
      d.d_tag = to;
      put(im, at, d);
    });
  };
  const int64_t symtab = dynAt(k, DT_SYMTAB);
  const std::string entry =
      "dynamic entry " +
      std::to_string((symtab - get<Elf64_Phdr>(k, phdrAt(k, PT_DYNAMIC)).p_offset) /
                     sizeof(Elf64_Dyn));
  EXPECT_EQ(retag(DT_SYMTAB, DT_RPATH),
            entry + " (tag 15): the image names library search paths");
  EXPECT_EQ(retag(DT_SYMTAB, DT_TEXTREL),
            entry + " (tag 22): the image asks for text relocations");
  EXPECT_EQ(retag(DT_SYMTAB, DT_INIT_ARRAY),
            "the image has initializers or finalizers (generated code has none)");
  EXPECT_EQ(retag(DT_SYMTAB, 0x7000abcd),
            entry + " (tag 1879092173): not a dynamic tag of generated code");
  EXPECT_EQ(retag(DT_SYMTAB, DT_SYMBOLIC),
            entry + " (tag 16): not a dynamic tag of generated code");
  // A needed library (a name of the string table, in the place of the PLT
  // relocations, whose size and kind tags become DT_DEBUG): only the C
  // runtime's.
  EXPECT_EQ(corrupt([&](Image &im) {
              const int64_t rela = dynAt(im, DT_JMPREL);
              const int64_t size = dynAt(im, DT_PLTRELSZ);
              const int64_t entry = dynAt(im, DT_PLTREL);
              ASSERT_TRUE(rela >= 0 && size >= 0 && entry >= 0);
              auto d = get<Elf64_Dyn>(im, rela);
              d.d_tag = DT_NEEDED;
              d.d_un.d_val = 1; // the first name in the table
              put(im, rela, d);
              for (int64_t at : {size, entry}) {
                d = get<Elf64_Dyn>(im, at);
                d.d_tag = DT_DEBUG;
                put(im, at, d);
              }
            }).rfind("the image needs library '", 0),
            0u);
  EXPECT_EQ(corrupt([&](Image &im) {
              const int64_t at = dynAt(im, DT_STRSZ);
              auto d = get<Elf64_Dyn>(im, at);
              d.d_un.d_val = 1u << 30;
              put(im, at, d);
            }).rfind("the string table (1073741824 bytes at ", 0),
            0u);
  EXPECT_EQ(corrupt([&](Image &im) {
              const int64_t at = dynAt(im, DT_SYMENT);
              auto d = get<Elf64_Dyn>(im, at);
              d.d_un.d_val = 16;
              put(im, at, d);
            }),
            "symbol table entries of 16 bytes, not 24");
}

TEST(ElfImage, HashTable) {
  const Image &k = kernels();
  const uint64_t hash = fileOf(k, get<Elf64_Dyn>(k, dynAt(k, DT_GNU_HASH)).d_un.d_val);
  EXPECT_EQ(corrupt([&](Image &im) { put<uint32_t>(im, hash, 0); }),
            "the GNU hash table has 0 buckets, " +
                std::to_string(get<uint32_t>(k, hash + 8)) +
                " bloom words and shift " +
                std::to_string(get<uint32_t>(k, hash + 12)));
  EXPECT_EQ(corrupt([&](Image &im) { put<uint32_t>(im, hash + 8, 3); }),
            "the GNU hash table has " + std::to_string(get<uint32_t>(k, hash)) +
                " buckets, 3 bloom words and shift " +
                std::to_string(get<uint32_t>(k, hash + 12)));
  // A bucket whose chain starts before the hashed symbols.
  const uint32_t symoffset = get<uint32_t>(k, hash + 4);
  ASSERT_GT(symoffset, 0u);
  const uint64_t buckets = hash + 16 + 8 * uint64_t(get<uint32_t>(k, hash + 8));
  EXPECT_EQ(corrupt([&](Image &im) { put<uint32_t>(im, buckets, symoffset - 1); }),
            "GNU hash bucket 0 starts at symbol " + std::to_string(symoffset - 1) +
                ", before the first hashed symbol " + std::to_string(symoffset));
}

TEST(ElfImage, SymbolsAndRelocations) {
  const Image &k = kernels();
  EXPECT_EQ(problem(k, {"fmt_record", "nope"}),
            "function 'nope' is not in the image's symbol table");
  const int64_t sym = symbolAt(k, "fmt_record");
  ASSERT_GE(sym, 0);
  const std::string index = std::to_string(
      (sym - fileOf(k, get<Elf64_Dyn>(k, dynAt(k, DT_SYMTAB)).d_un.d_val)) /
      sizeof(Elf64_Sym));
  EXPECT_EQ(corrupt([&](Image &im) {
              auto s = get<Elf64_Sym>(im, sym);
              s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC);
              put(im, sym, s);
            }),
            "symbol " + index +
                " ('fmt_record'): a TLS or IFUNC symbol (generated code has none)");
  EXPECT_EQ(corrupt([&](Image &im) {
              auto s = get<Elf64_Sym>(im, sym);
              s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
              put(im, sym, s);
            }),
            "function 'fmt_record' (symbol " + index +
                ") is not a defined global function");
  EXPECT_NE(corrupt([&](Image &im) {
              auto s = get<Elf64_Sym>(im, sym);
              s.st_value = 1u << 24;
              put(im, sym, s);
            }).find("is not inside a loaded segment"),
            std::string::npos);
  // A relocation of another kind, or writing outside a writable segment.
  const int64_t jmprel = dynAt(k, DT_JMPREL);
  if (jmprel >= 0) {
    const uint64_t rel = fileOf(k, get<Elf64_Dyn>(k, jmprel).d_un.d_val);
    EXPECT_EQ(corrupt([&](Image &im) {
                auto r = get<Elf64_Rela>(im, rel);
                r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), R_X86_64_IRELATIVE);
                put(im, rel, r);
              }),
              "PLT relocation table entry 0 (type 37): not a relocation of "
              "generated code");
    EXPECT_EQ(corrupt([&](Image &im) {
                auto r = get<Elf64_Rela>(im, rel);
                r.r_offset = 0; // the read-only ELF header
                put(im, rel, r);
              }),
              "PLT relocation table entry 0 (type 7): writes bytes [0, 8), which "
              "are not inside a writable segment");
  }
}

} // namespace
} // namespace fm::test

#endif // __linux__ && __x86_64__
