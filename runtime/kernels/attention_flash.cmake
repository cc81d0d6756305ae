# The blocked (flash-style) prefill attention (attention_flash*.cpp).
# Included from runtime/CMakeLists.txt after fm_kernels is defined.
set(_fm_flash_dir ${CMAKE_CURRENT_LIST_DIR})
get_target_property(_fm_flash_kernels_dir fm_kernels SOURCE_DIR)
target_sources(fm_kernels PRIVATE ${_fm_flash_dir}/attention_flash.cpp)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_sources(fm_kernels PRIVATE
    ${_fm_flash_dir}/attention_flash_avx2.cpp
    ${_fm_flash_dir}/attention_flash_avx512.cpp)
  set_source_files_properties(${_fm_flash_dir}/attention_flash_avx2.cpp
    DIRECTORY ${_fm_flash_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_fm_flash_dir}/attention_flash_avx512.cpp
    DIRECTORY ${_fm_flash_kernels_dir}
    PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mprefer-vector-width=512")
endif()
if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_attention_flash_test ${_fm_flash_dir}/attention_flash_test.cpp)
  target_link_libraries(fm_attention_flash_test PRIVATE fm_kernels GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_attention_flash_test PRIVATE -O2 -Wall -Wextra)
  endif()
  add_test(NAME runtime.attention_flash COMMAND fm_attention_flash_test)
endif()
unset(_fm_flash_dir)
unset(_fm_flash_kernels_dir)
