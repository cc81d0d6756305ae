# Packed low-bit weights: formats (qformat.h), packing (quantize.cpp) and the
# fused-dequantization matmul (qmatmul*.cpp). Included from
# runtime/CMakeLists.txt after fm_kernels is defined; adds to that target.

if(NOT TARGET fm_kernels)
  message(FATAL_ERROR "runtime/kernels/quant.cmake needs the fm_kernels target")
endif()

set(_fm_quant_dir ${CMAKE_CURRENT_LIST_DIR})

target_sources(fm_kernels PRIVATE
  ${_fm_quant_dir}/quantize.cpp
  ${_fm_quant_dir}/qmatmul.cpp
  ${_fm_quant_dir}/qmatmul_generic.cpp)

# Instruction-set paths, each in its own file with its own flags; qmatmul.cpp
# picks one at run time (kernels/isa.h, plus __builtin_cpu_supports for
# VNNI). FM_KERNELS_X86 / FM_KERNELS_NEON come from runtime/CMakeLists.txt.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_sources(fm_kernels PRIVATE
    ${_fm_quant_dir}/qmatmul_avx2.cpp
    ${_fm_quant_dir}/qmatmul_avx512.cpp
    ${_fm_quant_dir}/qmatmul_avx512_f32.cpp)
  # Source properties are per directory: set them on the directory that
  # owns fm_kernels, whichever file includes this one.
  get_target_property(_fm_kernels_dir fm_kernels SOURCE_DIR)
  set_source_files_properties(${_fm_quant_dir}/qmatmul_avx2.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_fm_quant_dir}/qmatmul_avx512.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mf16c;-mfma")
  set_source_files_properties(${_fm_quant_dir}/qmatmul_avx512_f32.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mf16c;-mfma")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  target_sources(fm_kernels PRIVATE ${_fm_quant_dir}/qmatmul_neon.cpp)
endif()

if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_qkernels_test
    ${_fm_quant_dir}/quantize_test.cpp
    ${_fm_quant_dir}/qmatmul_test.cpp)
  target_link_libraries(fm_qkernels_test PRIVATE fm_kernels GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_qkernels_test PRIVATE -O2 -Wall -Wextra)
  endif()
  add_test(NAME runtime.qkernels COMMAND fm_qkernels_test)
endif()

unset(_fm_quant_dir)
unset(_fm_kernels_dir)
