"""Corrupt copies of a good ELF image (fmc's generated code), one per refusal
of fmc's loader (runtime/hal/cpu/ElfImage.cpp, ElfLoader.cpp):

  wrong_machine.so   e_machine of another architecture (RISC-V)
  unknown_reloc.so   the first PLT relocation of another type (COPY)
  outside_import.so  an imported function renamed to one the runtime does
                     not give generated code (same length: 'system' for
                     'sincos', 'mem' + 'xxxx' for memcpy's 'cpy'...)
  wx.so              the executable segment also writable
  truncated.so       the first half of the image

Usage: bad_images.py IMAGE OUTDIR. ELF64 little-endian only (x86-64,
AArch64). Prints the file names it wrote.
"""
import os
import struct
import sys

EM_RISCV = 243
PF_W, PF_X = 2, 1
DT_STRTAB, DT_JMPREL, DT_NULL = 5, 23, 0
R_COPY = {62: 5, 183: 1024}  # R_X86_64_COPY, R_AARCH64_COPY


def program_headers(b):
    phoff, = struct.unpack_from("<Q", b, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type, p_flags, p_offset, p_vaddr = struct.unpack_from("<IIQQ", b, at)
        p_filesz, p_memsz = struct.unpack_from("<QQ", b, at + 32)
        yield at, p_type, p_flags, p_offset, p_vaddr, p_filesz


def file_offset(b, addr):
    for _, t, _, off, vaddr, filesz in program_headers(b):
        if t == 1 and vaddr <= addr < vaddr + filesz:
            return off + addr - vaddr
    raise SystemExit("address %#x is in no loaded segment" % addr)


def dynamic(b):
    for _, t, _, off, _, filesz in program_headers(b):
        if t == 2:
            tags = {}
            for at in range(off, off + filesz, 16):
                tag, val = struct.unpack_from("<qQ", b, at)
                if tag == DT_NULL:
                    break
                tags[tag] = val
            return tags
    raise SystemExit("no dynamic section")


def main():
    image, out = sys.argv[1], sys.argv[2]
    good = open(image, "rb").read()
    if good[:4] != b"\x7fELF" or good[4] != 2 or good[5] != 1:
        raise SystemExit("%s: not an ELF64 little-endian image" % image)
    machine, = struct.unpack_from("<H", good, 0x12)
    written = {}

    b = bytearray(good)
    struct.pack_into("<H", b, 0x12, EM_RISCV)
    written["wrong_machine.so"] = b

    tags = dynamic(good)
    b = bytearray(good)
    rel = file_offset(good, tags[DT_JMPREL])
    info, = struct.unpack_from("<Q", b, rel + 8)
    struct.pack_into("<Q", b, rel + 8, (info & ~0xffffffff) | R_COPY[machine])
    written["unknown_reloc.so"] = b

    b = bytearray(good)
    strtab = file_offset(good, tags[DT_STRTAB])
    for old, new in ((b"\0sincos\0", b"\0system\0"), (b"\0sin\0", b"\0abs\0"),
                     (b"\0memcpy\0", b"\0mprobe\0")):
        at = b.find(old, strtab)
        if at >= 0:
            b[at:at + len(old)] = new
            break
    else:
        raise SystemExit("%s imports neither sincos, sin nor memcpy" % image)
    written["outside_import.so"] = b

    b = bytearray(good)
    for at, t, flags, _, _, _ in program_headers(good):
        if t == 1 and flags & PF_X:
            struct.pack_into("<I", b, at + 4, flags | PF_W)
            break
    written["wx.so"] = b

    written["truncated.so"] = bytearray(good[:len(good) // 2])

    for name, data in written.items():
        open(os.path.join(out, name), "wb").write(bytes(data))
        print(name)


if __name__ == "__main__":
    main()
