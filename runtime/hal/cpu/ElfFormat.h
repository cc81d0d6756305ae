// The ELF structures and constants that the image check (ElfImage.h) and
// the loader (ElfLoader.h) read, from the System V gABI and the x86-64,
// AArch64, i386, ARM and RISC-V psABIs: our own, so that both build where
// there is no <elf.h> (macOS, iOS). Do not include <elf.h>
// beside this header: its macros have these names.
#pragma once

#include <cstdint>

namespace fm::hal::elf {

using Elf32_Half = uint16_t;
using Elf64_Half = uint16_t;
using Elf32_Word = uint32_t;
using Elf64_Word = uint32_t;
using Elf32_Sword = int32_t;
using Elf64_Sword = int32_t;
using Elf64_Xword = uint64_t;
using Elf64_Sxword = int64_t;
using Elf32_Addr = uint32_t;
using Elf64_Addr = uint64_t;
using Elf32_Off = uint32_t;
using Elf64_Off = uint64_t;
using Elf32_Section = uint16_t;
using Elf64_Section = uint16_t;

constexpr int EI_NIDENT = 16;

struct Elf32_Ehdr {
  unsigned char e_ident[EI_NIDENT];
  Elf32_Half e_type, e_machine;
  Elf32_Word e_version;
  Elf32_Addr e_entry;
  Elf32_Off e_phoff, e_shoff;
  Elf32_Word e_flags;
  Elf32_Half e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};
struct Elf64_Ehdr {
  unsigned char e_ident[EI_NIDENT];
  Elf64_Half e_type, e_machine;
  Elf64_Word e_version;
  Elf64_Addr e_entry;
  Elf64_Off e_phoff, e_shoff;
  Elf64_Word e_flags;
  Elf64_Half e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct Elf32_Phdr {
  Elf32_Word p_type;
  Elf32_Off p_offset;
  Elf32_Addr p_vaddr, p_paddr;
  Elf32_Word p_filesz, p_memsz, p_flags, p_align;
};
struct Elf64_Phdr {
  Elf64_Word p_type, p_flags;
  Elf64_Off p_offset;
  Elf64_Addr p_vaddr, p_paddr;
  Elf64_Xword p_filesz, p_memsz, p_align;
};

struct Elf32_Shdr {
  Elf32_Word sh_name, sh_type, sh_flags;
  Elf32_Addr sh_addr;
  Elf32_Off sh_offset;
  Elf32_Word sh_size, sh_link, sh_info, sh_addralign, sh_entsize;
};
struct Elf64_Shdr {
  Elf64_Word sh_name, sh_type;
  Elf64_Xword sh_flags;
  Elf64_Addr sh_addr;
  Elf64_Off sh_offset;
  Elf64_Xword sh_size;
  Elf64_Word sh_link, sh_info;
  Elf64_Xword sh_addralign, sh_entsize;
};

struct Elf32_Dyn {
  Elf32_Sword d_tag;
  union {
    Elf32_Word d_val;
    Elf32_Addr d_ptr;
  } d_un;
};
struct Elf64_Dyn {
  Elf64_Sxword d_tag;
  union {
    Elf64_Xword d_val;
    Elf64_Addr d_ptr;
  } d_un;
};

struct Elf32_Sym {
  Elf32_Word st_name;
  Elf32_Addr st_value;
  Elf32_Word st_size;
  unsigned char st_info, st_other;
  Elf32_Section st_shndx;
};
struct Elf64_Sym {
  Elf64_Word st_name;
  unsigned char st_info, st_other;
  Elf64_Section st_shndx;
  Elf64_Addr st_value;
  Elf64_Xword st_size;
};

struct Elf32_Rel {
  Elf32_Addr r_offset;
  Elf32_Word r_info;
};
struct Elf32_Rela {
  Elf32_Addr r_offset;
  Elf32_Word r_info;
  Elf32_Sword r_addend;
};
struct Elf64_Rel {
  Elf64_Addr r_offset;
  Elf64_Xword r_info;
};
struct Elf64_Rela {
  Elf64_Addr r_offset;
  Elf64_Xword r_info;
  Elf64_Sxword r_addend;
};

static_assert(sizeof(Elf64_Ehdr) == 64 && sizeof(Elf64_Phdr) == 56 &&
                  sizeof(Elf64_Shdr) == 64 && sizeof(Elf64_Dyn) == 16 &&
                  sizeof(Elf64_Sym) == 24 && sizeof(Elf64_Rela) == 24,
              "ELF64 structures as the gABI lays them out");
static_assert(sizeof(Elf32_Ehdr) == 52 && sizeof(Elf32_Phdr) == 32 &&
                  sizeof(Elf32_Shdr) == 40 && sizeof(Elf32_Dyn) == 8 &&
                  sizeof(Elf32_Sym) == 16 && sizeof(Elf32_Rela) == 12,
              "ELF32 structures as the gABI lays them out");

constexpr uint32_t ELF32_R_SYM(uint32_t info) { return info >> 8; }
constexpr uint32_t ELF32_R_TYPE(uint32_t info) { return info & 0xff; }
constexpr uint64_t ELF64_R_SYM(uint64_t info) { return info >> 32; }
constexpr uint32_t ELF64_R_TYPE(uint64_t info) { return uint32_t(info & 0xffffffff); }
constexpr unsigned ELF32_ST_BIND(unsigned char info) { return info >> 4; }
constexpr unsigned ELF32_ST_TYPE(unsigned char info) { return info & 0xf; }
constexpr unsigned ELF64_ST_BIND(unsigned char info) { return info >> 4; }
constexpr unsigned ELF64_ST_TYPE(unsigned char info) { return info & 0xf; }

// e_ident
constexpr char ELFMAG[] = "\177ELF";
constexpr int SELFMAG = 4;
constexpr int EI_CLASS = 4, EI_DATA = 5, EI_VERSION = 6, EI_OSABI = 7;
constexpr unsigned char ELFCLASS32 = 1, ELFCLASS64 = 2;
constexpr unsigned char ELFDATA2LSB = 1, ELFDATA2MSB = 2;
constexpr unsigned char ELFOSABI_SYSV = 0, ELFOSABI_GNU = 3;
constexpr uint32_t EV_CURRENT = 1;
// e_type, e_machine
constexpr uint16_t ET_DYN = 3;
constexpr uint16_t EM_386 = 3, EM_ARM = 40, EM_X86_64 = 62, EM_AARCH64 = 183,
                   EM_RISCV = 243;

// p_type, p_flags
constexpr uint32_t PT_NULL = 0, PT_LOAD = 1, PT_DYNAMIC = 2, PT_INTERP = 3,
                   PT_NOTE = 4, PT_PHDR = 6, PT_TLS = 7;
constexpr uint32_t PT_GNU_EH_FRAME = 0x6474e550, PT_GNU_STACK = 0x6474e551,
                   PT_GNU_RELRO = 0x6474e552, PT_GNU_PROPERTY = 0x6474e553;
constexpr uint32_t PF_X = 1, PF_W = 2, PF_R = 4;

// sections, symbols
constexpr uint32_t SHT_NULL = 0, SHT_NOBITS = 8;
constexpr uint16_t SHN_UNDEF = 0, SHN_LORESERVE = 0xff00, SHN_ABS = 0xfff1;
constexpr unsigned STB_LOCAL = 0, STB_GLOBAL = 1, STB_WEAK = 2;
constexpr unsigned STT_NOTYPE = 0, STT_OBJECT = 1, STT_FUNC = 2, STT_TLS = 6,
                   STT_GNU_IFUNC = 10;

// d_tag, d_val of DT_FLAGS
constexpr int64_t DT_NULL = 0, DT_NEEDED = 1, DT_PLTRELSZ = 2, DT_PLTGOT = 3,
                  DT_HASH = 4, DT_STRTAB = 5, DT_SYMTAB = 6, DT_RELA = 7,
                  DT_RELASZ = 8, DT_RELAENT = 9, DT_STRSZ = 10, DT_SYMENT = 11,
                  DT_INIT = 12, DT_FINI = 13, DT_SONAME = 14, DT_RPATH = 15,
                  DT_REL = 17, DT_RELSZ = 18, DT_RELENT = 19, DT_PLTREL = 20,
                  DT_DEBUG = 21, DT_TEXTREL = 22, DT_JMPREL = 23,
                  DT_BIND_NOW = 24, DT_INIT_ARRAY = 25, DT_FINI_ARRAY = 26,
                  DT_INIT_ARRAYSZ = 27, DT_FINI_ARRAYSZ = 28, DT_RUNPATH = 29,
                  DT_FLAGS = 30, DT_PREINIT_ARRAY = 32,
                  DT_PREINIT_ARRAYSZ = 33, DT_GNU_HASH = 0x6ffffef5,
                  DT_RELACOUNT = 0x6ffffff9, DT_RELCOUNT = 0x6ffffffa,
                  DT_FLAGS_1 = 0x6ffffffb;
constexpr uint64_t DF_ORIGIN = 0x1, DF_TEXTREL = 0x4, DF_STATIC_TLS = 0x10;

// Relocation types (those the check knows; the loader applies the first
// machines' four).
constexpr uint32_t R_X86_64_NONE = 0, R_X86_64_64 = 1, R_X86_64_GLOB_DAT = 6,
                   R_X86_64_JUMP_SLOT = 7, R_X86_64_RELATIVE = 8;
constexpr uint32_t R_AARCH64_NONE = 0, R_AARCH64_ABS64 = 257,
                   R_AARCH64_GLOB_DAT = 1025, R_AARCH64_JUMP_SLOT = 1026,
                   R_AARCH64_RELATIVE = 1027;
constexpr uint32_t R_386_NONE = 0, R_386_32 = 1, R_386_GLOB_DAT = 6,
                   R_386_JMP_SLOT = 7, R_386_RELATIVE = 8;
constexpr uint32_t R_ARM_NONE = 0, R_ARM_ABS32 = 2, R_ARM_GLOB_DAT = 21,
                   R_ARM_JUMP_SLOT = 22, R_ARM_RELATIVE = 23;
constexpr uint32_t R_RISCV_NONE = 0, R_RISCV_64 = 2, R_RISCV_RELATIVE = 3,
                   R_RISCV_JUMP_SLOT = 5;

} // namespace fm::hal::elf
