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
  add_test(NAME runtime.vision_kernels COMMAND fm_vision_kernels_test)
endif()

unset(_fm_vision_dir)
unset(_fm_vision_avx2)
unset(_fm_vision_avx512)
unset(_fm_kernels_dir)
