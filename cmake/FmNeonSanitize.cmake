# The NEON kernels under ASan + UBSan: the AArch64 checks (test/unit/neon,
# the vision kernels' NEON check) cross-built a second time with
# aarch64-linux-gnu-g++ and -fsanitize=address,undefined, and run under
# qemu-user like their plain builds. GCC's cross toolchain (Debian's
# g++-aarch64-linux-gnu, scripts/install-deps.sh) ships the AArch64 ASan and
# UBSan runtimes; clang-22's are x86-64 only here, so the plain checks keep
# clang and these use gcc, which also compiles the intrinsics a second way.
#
# LeakSanitizer is off (detect_leaks=0): it cannot stop the threads it scans
# under qemu-user and dies with a fatal error before the check runs. Every
# other report aborts the check (halt/abort on error, no recovery), so that
# it fails its test: an out-of-bounds NEON load or store, a misaligned or
# overflowing integer operation in the scalar tails. Not
# detect_stack_use_after_return: under qemu its fake stacks made the plain
# ARMv8 check take 150 s against 12 s without (measured here).
#
#   fm_add_neon_sanitized_check(TEST NAME OUTPUT FILE MARCH ARCH STD STD
#                               SOURCES ... DEPENDS ... [FLAGS ...])
# adds the build (an ALL target: fm_ and OUTPUT's file name) and the ctest
# NAME; does nothing (one status line at configure) where the cross
# compiler or its ASan runtime is missing.
set(_fm_neon_asan_sysroot /usr/aarch64-linux-gnu)
find_program(FM_AARCH64_GXX NAMES aarch64-linux-gnu-g++)
if(FM_AARCH64_GXX)
  execute_process(COMMAND ${FM_AARCH64_GXX} -print-file-name=libasan.so
                  OUTPUT_VARIABLE _fm_neon_asan_lib OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
if(FM_AARCH64_GXX AND IS_ABSOLUTE "${_fm_neon_asan_lib}" AND EXISTS "${_fm_neon_asan_lib}")
  set(FM_NEON_SANITIZE ON)
else()
  set(FM_NEON_SANITIZE OFF)
  message(STATUS "fm: NEON checks under ASan + UBSan off (need aarch64-linux-gnu-g++ "
                 "with its libasan: g++-aarch64-linux-gnu)")
endif()

function(fm_add_neon_sanitized_check)
  cmake_parse_arguments(A "" "TEST;OUTPUT;MARCH;STD" "SOURCES;DEPENDS;FLAGS" ${ARGN})
  if(NOT FM_NEON_SANITIZE OR NOT FM_QEMU_AARCH64)
    return()
  endif()
  get_filename_component(_name ${A_OUTPUT} NAME)
  add_custom_command(OUTPUT ${A_OUTPUT}
    COMMAND ${FM_AARCH64_GXX} -march=${A_MARCH} -O1 -g -fno-omit-frame-pointer
            -fsanitize=address,undefined -fno-sanitize-recover=all -Wno-psabi
            -std=${A_STD} ${A_FLAGS} ${A_SOURCES} -o ${A_OUTPUT} -lpthread
    DEPENDS ${A_SOURCES} ${A_DEPENDS}
    COMMENT "Cross-building ${_name} with ASan + UBSan (${A_MARCH})"
    VERBATIM)
  add_custom_target(fm_${_name} ALL DEPENDS ${A_OUTPUT})
  add_test(NAME ${A_TEST}
    COMMAND ${FM_QEMU_AARCH64_RUN} ${A_OUTPUT})
  set_tests_properties(${A_TEST} PROPERTIES ENVIRONMENT
    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1;UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1")
endfunction()
