# The LoRA side-path kernels (lora*.cpp): y += s · B(A·x) on f16 or 8-bit
# packed adapter matrices. Included from runtime/CMakeLists.txt after
# fm_kernels is defined; adds to that target, like quant.cmake.

if(NOT TARGET fm_kernels)
  message(FATAL_ERROR "runtime/kernels/lora.cmake needs the fm_kernels target")
endif()

set(_fm_lora_dir ${CMAKE_CURRENT_LIST_DIR})

target_sources(fm_kernels PRIVATE
  ${_fm_lora_dir}/lora.cpp
  ${_fm_lora_dir}/lora_generic.cpp)

# Instruction-set paths, each in its own file with its own flags; lora.cpp
# picks one at run time (kernels/isa.h). AArch64 runs the generic path.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND
   CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_sources(fm_kernels PRIVATE
    ${_fm_lora_dir}/lora_avx2.cpp
    ${_fm_lora_dir}/lora_avx512.cpp)
  get_target_property(_fm_kernels_dir fm_kernels SOURCE_DIR)
  set_source_files_properties(${_fm_lora_dir}/lora_avx2.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_fm_lora_dir}/lora_avx512.cpp
    DIRECTORY ${_fm_kernels_dir}
    PROPERTIES COMPILE_OPTIONS "-mavx512f;-mavx512bw;-mavx512vl")
endif()

if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_lora_test ${_fm_lora_dir}/lora_test.cpp)
  target_link_libraries(fm_lora_test PRIVATE fm_kernels GTest::gtest_main)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_lora_test PRIVATE -O2 -Wall -Wextra)
  endif()
  add_test(NAME runtime.lora COMMAND fm_lora_test)
endif()

unset(_fm_lora_dir)
unset(_fm_kernels_dir)
