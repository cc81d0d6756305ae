# Prefill GEMM over repacked low-bit weights (qgemm*.cpp). Included from
# quant.cmake; adds to fm_kernels.
set(_fm_gemm_dir ${CMAKE_CURRENT_LIST_DIR})
get_target_property(_fm_gemm_kernels_dir fm_kernels SOURCE_DIR)

target_sources(fm_kernels PRIVATE
  ${_fm_gemm_dir}/qgemm.cpp
  ${_fm_gemm_dir}/qgemm_generic.cpp
  ${_fm_gemm_dir}/qgemm_repack.cpp)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_sources(fm_kernels PRIVATE
    ${_fm_gemm_dir}/qgemm_avx2.cpp
    ${_fm_gemm_dir}/qgemm_avx512.cpp
    ${_fm_gemm_dir}/qgemm_matvec_gfni.cpp
    ${_fm_gemm_dir}/qgemm_amx.cpp)
  set_source_files_properties(${_fm_gemm_dir}/qgemm_avx2.cpp
    DIRECTORY ${_fm_gemm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_fm_gemm_dir}/qgemm_avx512.cpp
    DIRECTORY ${_fm_gemm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mf16c;-mfma;-mprefer-vector-width=512")
  set_source_files_properties(${_fm_gemm_dir}/qgemm_matvec_gfni.cpp
    DIRECTORY ${_fm_gemm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mgfni;-mf16c;-mfma;-mprefer-vector-width=512")
  set_source_files_properties(${_fm_gemm_dir}/qgemm_amx.cpp
    DIRECTORY ${_fm_gemm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mf16c;-mfma;-mamx-tile;-mamx-int8;-mprefer-vector-width=512")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  target_sources(fm_kernels PRIVATE ${_fm_gemm_dir}/qgemm_neon.cpp)
endif()

if(FM_BUILD_TESTS)
  add_executable(fm_qgemm_test ${_fm_gemm_dir}/qgemm_test.cpp)
  target_link_libraries(fm_qgemm_test PRIVATE fm_kernels GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_qgemm_test PRIVATE -O2 -Wall -Wextra)
  endif()
  # The x86 paths that some machines lack (AVX-512 VNNI, AMX) run in entries
  # of their own, which ctest reports Skipped on a CPU without the path
  # (qgemm_test.cpp's FM_TEST_GEMM_PATHS): runtime.qgemm runs the other
  # paths and the tests that do not depend on the path, so that each case
  # runs once. An entry that selects no test fails.
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
     CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    add_test(NAME runtime.qgemm COMMAND fm_qgemm_test)
    set_tests_properties(runtime.qgemm PROPERTIES
      ENVIRONMENT "FM_TEST_GEMM_PATHS=-avx512-vnni,-amx")
    foreach(_fm_path avx512-vnni amx)
      add_test(NAME runtime.qgemm.${_fm_path}
        COMMAND fm_qgemm_test --gtest_filter=QGemm.*)
      set_tests_properties(runtime.qgemm.${_fm_path} PROPERTIES
        ENVIRONMENT "FM_TEST_GEMM_PATHS=${_fm_path}"
        SKIP_REGULAR_EXPRESSION "qgemm path ${_fm_path} is not available on this CPU"
        FAIL_REGULAR_EXPRESSION "Running 0 tests")
    endforeach()
    unset(_fm_path)
  else()
    add_test(NAME runtime.qgemm COMMAND fm_qgemm_test)
  endif()
endif()

unset(_fm_gemm_dir)
unset(_fm_gemm_kernels_dir)
