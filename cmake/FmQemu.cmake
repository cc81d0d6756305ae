# qemu-user for the AArch64 programs of the tests (the NEON checks, the ELF
# loader, the cross-built runtime): FM_QEMU_AARCH64_RUN is the command line
# to put before a program. The C runtime comes from the cross toolchain's
# sysroot (Debian's libc6-arm64-cross), whose ld.so must be paired with its
# own libc: with Debian's libc6:arm64 installed as well (the :arm64
# libraries of test/aarch64 pull it in), the host's ld.so.cache would hand
# that ld.so the other glibc build, and the pair hangs in pthread_create. So
# the sysroot's lib comes first, then Debian's :arm64 libraries.
find_program(FM_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
set(FM_AARCH64_SYSROOT /usr/aarch64-linux-gnu)
set(FM_AARCH64_LIBRARY_PATH ${FM_AARCH64_SYSROOT}/lib:/usr/lib/aarch64-linux-gnu)
set(FM_QEMU_AARCH64_RUN ${FM_QEMU_AARCH64} -L ${FM_AARCH64_SYSROOT}
    -E LD_LIBRARY_PATH=${FM_AARCH64_LIBRARY_PATH})
