# Image-encoder kernels (docs/vit.md): the packed GEMM, LayerNorm and the
# GELU family, patch embedding / 3x3 conv / average pooling, and ViT
# attention with relative positions, registers and windows. Included from
# runtime/CMakeLists.txt after fm_kernels is defined; adds to that target.

if(NOT TARGET fm_kernels)
  message(FATAL_ERROR "runtime/kernels/vision.cmake needs the fm_kernels target")
endif()

set(_fm_vision_dir ${CMAKE_CURRENT_LIST_DIR})

target_sources(fm_kernels PRIVATE
  ${_fm_vision_dir}/conv.cpp
  ${_fm_vision_dir}/gemm.cpp
  ${_fm_vision_dir}/gemm_generic.cpp
  ${_fm_vision_dir}/pointwise.cpp
  ${_fm_vision_dir}/vit_attention.cpp)

# Instruction-set paths, each in its own file with its own flags; the entry
# points pick one at run time (kernels/isa.h). FM_KERNELS_X86 /
# FM_KERNELS_NEON come from runtime/CMakeLists.txt.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(_fm_vision_avx2
    ${_fm_vision_dir}/gemm_avx2.cpp
    ${_fm_vision_dir}/pointwise_avx2.cpp
    ${_fm_vision_dir}/vit_attention_avx2.cpp)
  set(_fm_vision_avx512
    ${_fm_vision_dir}/gemm_avx512.cpp
    ${_fm_vision_dir}/pointwise_avx512.cpp
    ${_fm_vision_dir}/vit_attention_avx512.cpp)
  target_sources(fm_kernels PRIVATE ${_fm_vision_avx2} ${_fm_vision_avx512})
  # Source properties are per directory: set them on the directory that
  # owns fm_kernels, whichever file includes this one.
  get_target_property(_fm_kernels_dir fm_kernels SOURCE_DIR)
  set_source_files_properties(${_fm_vision_avx2} DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_fm_vision_avx512} DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mprefer-vector-width=512")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  target_sources(fm_kernels PRIVATE ${_fm_vision_dir}/gemm_neon.cpp)
endif()

if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_vision_kernels_test
    ${_fm_vision_dir}/conv_test.cpp
    ${_fm_vision_dir}/gemm_test.cpp
    ${_fm_vision_dir}/pointwise_test.cpp
    ${_fm_vision_dir}/vit_attention_test.cpp)
  target_link_libraries(fm_vision_kernels_test PRIVATE fm_kernels GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_vision_kernels_test PRIVATE -O2 -Wall -Wextra)
  endif()
  # runtime.vision_kernels, and its AVX-512 cases as .avx512 on x86-64.
  fm_add_kernel_path_tests(runtime.vision_kernels fm_vision_kernels_test)
endif()

# The NEON GEMM (and the generic kernels as AArch64 compiles them),
# cross-built with clang and run under qemu-user, as test/unit/neon does for
# matmul; here so that runtime-only builds run it too. Skipped with a note
# where qemu-aarch64 or the AArch64 sysroot is missing
# (scripts/install-deps.sh installs both).
include(${CMAKE_SOURCE_DIR}/cmake/FmQemu.cmake)
set(_fm_sysroot /usr/aarch64-linux-gnu)
if(FM_BUILD_TESTS AND FM_QEMU_AARCH64 AND EXISTS ${_fm_sysroot}/lib/libc.so.6 AND
   CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND
   CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  get_filename_component(_fm_rt ${_fm_vision_dir} DIRECTORY)
  set(_fm_neon_sources
    ${_fm_vision_dir}/vision_neon_check.cpp
    ${_fm_vision_dir}/isa.cpp
    ${_fm_vision_dir}/gemm.cpp
    ${_fm_vision_dir}/gemm_generic.cpp
    ${_fm_vision_dir}/gemm_neon.cpp
    ${_fm_vision_dir}/pointwise.cpp
    ${_fm_vision_dir}/vit_attention.cpp
    ${_fm_rt}/base/ThreadPool.cpp)
  file(GLOB _fm_neon_headers ${_fm_vision_dir}/*.h ${_fm_rt}/base/ThreadPool.h)
  set(_fm_neon_out ${CMAKE_CURRENT_BINARY_DIR}/vision_neon_check)
  add_custom_command(OUTPUT ${_fm_neon_out}
    COMMAND ${CMAKE_CXX_COMPILER} --target=aarch64-linux-gnu -march=armv8-a
            -O2 -std=c++17 -fno-trapping-math -DFM_KERNELS_NEON=1 -I${_fm_rt}
            -I${_fm_rt}/include ${_fm_neon_sources} -o ${_fm_neon_out} -lpthread
    DEPENDS ${_fm_neon_sources} ${_fm_neon_headers}
    COMMENT "Cross-building the vision kernels' NEON check (armv8-a)"
    VERBATIM)
  add_custom_target(fm_vision_neon_check ALL DEPENDS ${_fm_neon_out})
  add_test(NAME runtime.vision_kernels.neon
    COMMAND ${FM_QEMU_AARCH64_RUN} ${_fm_neon_out})
  # The same check under ASan + UBSan (cmake/FmNeonSanitize.cmake).
  include(${PROJECT_SOURCE_DIR}/cmake/FmNeonSanitize.cmake)
  fm_add_neon_sanitized_check(TEST runtime.vision_kernels.neon.sanitize
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/vision_neon_check_sanitize
    MARCH armv8-a STD c++17
    FLAGS -fno-trapping-math -DFM_KERNELS_NEON=1 -I${_fm_rt} -I${_fm_rt}/include
    SOURCES ${_fm_neon_sources} DEPENDS ${_fm_neon_headers})
  unset(_fm_rt)
  unset(_fm_neon_sources)
  unset(_fm_neon_headers)
  unset(_fm_neon_out)
elseif(FM_BUILD_TESTS)
  message(STATUS "fm: vision NEON check off (needs clang, qemu-aarch64 and ${_fm_sysroot})")
endif()
unset(_fm_sysroot)

unset(_fm_vision_dir)
unset(_fm_vision_avx2)
unset(_fm_vision_avx512)
unset(_fm_kernels_dir)
