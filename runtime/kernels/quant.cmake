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
# VNNI and GFNI). FM_KERNELS_X86 / FM_KERNELS_NEON come from
# runtime/CMakeLists.txt.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_sources(fm_kernels PRIVATE
    ${_fm_quant_dir}/qmatmul_avx2.cpp
    ${_fm_quant_dir}/qmatmul_avx512.cpp
    ${_fm_quant_dir}/qmatmul_avx512_gfni.cpp
    ${_fm_quant_dir}/qmatmul_avx512_f32.cpp
    ${_fm_quant_dir}/quantize_avx2.cpp
    ${_fm_quant_dir}/quantize_avx512.cpp)
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
  set_source_files_properties(${_fm_quant_dir}/qmatmul_avx512_gfni.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mgfni;-mf16c;-mfma")
  set_source_files_properties(${_fm_quant_dir}/qmatmul_avx512_f32.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl;-mf16c;-mfma")
  # The quantizer's search must round like the generic build (no FMA
  # contraction), so that the packed bytes do not depend on the machine.
  set_source_files_properties(${_fm_quant_dir}/quantize_avx2.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mf16c;-ffp-contract=off")
  set_source_files_properties(${_fm_quant_dir}/quantize_avx512.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mf16c;-mprefer-vector-width=512;-ffp-contract=off")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  target_sources(fm_kernels PRIVATE ${_fm_quant_dir}/qmatmul_neon.cpp)
endif()

get_target_property(_fm_kernels_dir fm_kernels SOURCE_DIR)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${_fm_quant_dir}/quantize.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
endif()

# The previous quantizer, for tests and benchmarks only (quantize_reference.h).
add_library(fm_quantize_reference STATIC ${_fm_quant_dir}/quantize_reference.cpp)
target_link_libraries(fm_quantize_reference PUBLIC fm_kernels)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  # As fm_kernels built it (the baseline x86-64 build had no FMA to contract).
  target_compile_options(fm_quantize_reference PRIVATE
    -O3 -fno-trapping-math -ffp-contract=off)
endif()

if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_qkernels_test
    ${_fm_quant_dir}/quantize_test.cpp
    ${_fm_quant_dir}/qmatmul_test.cpp)
  target_link_libraries(fm_qkernels_test PRIVATE fm_kernels fm_quantize_reference
    GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_qkernels_test PRIVATE -O2 -Wall -Wextra)
  endif()
  # The GFNI planes' test needs AVX512-VNNI with GFNI (not on every CI
  # machine): an entry of its own, which ctest reports Skipped on a CPU
  # without them (its skip message); runtime.qkernels runs the rest.
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
     CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    add_test(NAME runtime.qkernels COMMAND fm_qkernels_test
      --gtest_filter=-QMatmul.GfniPlanesMatchShiftAndMask)
    add_test(NAME runtime.qkernels.gfni COMMAND fm_qkernels_test
      --gtest_filter=QMatmul.GfniPlanesMatchShiftAndMask)
    set_tests_properties(runtime.qkernels.gfni PROPERTIES
      SKIP_REGULAR_EXPRESSION "no AVX512-VNNI with GFNI on this CPU"
      FAIL_REGULAR_EXPRESSION "Running 0 tests")
  else()
    add_test(NAME runtime.qkernels COMMAND fm_qkernels_test)
  endif()
endif()

# The prefill GEMM over repacked weights.
include(${_fm_quant_dir}/qgemm.cmake)

unset(_fm_quant_dir)
unset(_fm_kernels_dir)
