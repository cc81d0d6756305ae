# The CUDA device (runtime/hal/cuda): built when the CUDA toolkit's headers
# are found (FM_CUDA_PATH, default /usr/local/cuda) and a clang with CUDA
# support compiles the kernels; no nvcc, and no driver at build time (the
# device loads libcuda.so.1 when it opens). Included from
# runtime/hal/CMakeLists.txt after fm_hal is defined.
#   kernels/*.cu --clang++ -x cuda --cuda-device-only -S--> <stem>.ptx
#   *.ptx --embed_ptx.cmake--> CudaPtx.cpp (in fm_hal)
#   ctest runtime.cuda.ptxas: ptxas -v on every PTX for sm_80 and sm_90.

set(FM_CUDA_PATH "/usr/local/cuda" CACHE PATH "CUDA toolkit (headers for clang's CUDA mode, ptxas)")
set(FM_CUDA_ARCH "sm_80" CACHE STRING "GPU architecture of the embedded PTX (the driver JITs it for newer GPUs)")
option(FM_WITH_CUDA "Build the CUDA device when the toolkit is found" ON)

if(NOT FM_WITH_CUDA)
  message(STATUS "CUDA device: off (FM_WITH_CUDA=OFF)")
  return()
endif()
if(NOT EXISTS "${FM_CUDA_PATH}/include/cuda_runtime.h")
  message(STATUS "CUDA device: skipped, no CUDA toolkit headers at ${FM_CUDA_PATH}/include (set FM_CUDA_PATH)")
  return()
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(FM_CUDA_CLANG ${CMAKE_CXX_COMPILER})
else()
  find_program(FM_CUDA_CLANG NAMES clang++-22 clang++)
endif()
if(NOT FM_CUDA_CLANG)
  message(STATUS "CUDA device: skipped, no clang++ to compile kernels/*.cu")
  return()
endif()

set(_fm_cuda_dir ${CMAKE_CURRENT_SOURCE_DIR}/cuda)
set(_fm_cuda_out ${CMAKE_CURRENT_BINARY_DIR}/cuda)
file(MAKE_DIRECTORY ${_fm_cuda_out})
set(FM_CUDA_KERNELS matvec embed attention rows gemm moe vision lora)
set(FM_CUDA_PTX "")
foreach(k IN LISTS FM_CUDA_KERNELS)
  set(ptx ${_fm_cuda_out}/${k}.ptx)
  add_custom_command(OUTPUT ${ptx}
    COMMAND ${FM_CUDA_CLANG} -x cuda --cuda-device-only
            --cuda-gpu-arch=${FM_CUDA_ARCH} --cuda-path=${FM_CUDA_PATH}
            # PTX 8.0 (CUDA 12.0 drivers and newer), not clang's newest.
            --cuda-feature=+ptx80 -Wno-unknown-cuda-version
            -std=c++17 -O3 -Wall -Wextra -Werror -I${CMAKE_SOURCE_DIR}/runtime -S
            ${_fm_cuda_dir}/kernels/${k}.cu -o ${ptx}
    DEPENDS ${_fm_cuda_dir}/kernels/${k}.cu ${_fm_cuda_dir}/kernels/common.cuh
            ${_fm_cuda_dir}/kernels/qdecode.h ${CMAKE_SOURCE_DIR}/runtime/kernels/moe_route.h
    COMMENT "CUDA kernels: kernels/${k}.cu -> ${k}.ptx"
    VERBATIM)
  list(APPEND FM_CUDA_PTX ${ptx})
endforeach()
add_custom_command(OUTPUT ${_fm_cuda_out}/CudaPtx.cpp
  COMMAND ${CMAKE_COMMAND} -DOUT=${_fm_cuda_out}/CudaPtx.cpp
          "-DPTX=${FM_CUDA_PTX}" -P ${_fm_cuda_dir}/embed_ptx.cmake
  DEPENDS ${FM_CUDA_PTX} ${_fm_cuda_dir}/embed_ptx.cmake
  COMMENT "CUDA kernels: embedding the PTX"
  VERBATIM)

target_sources(fm_hal PRIVATE
  ${_fm_cuda_dir}/CudaDevice.cpp
  ${_fm_cuda_dir}/CudaDriver.cpp
  ${_fm_cuda_dir}/CudaExecutable.cpp
  ${_fm_cuda_dir}/CudaGraph.cpp
  ${_fm_cuda_dir}/CudaKernels.cpp
  ${_fm_cuda_dir}/CudaLinear.cpp
  ${_fm_cuda_dir}/CudaMoe.cpp
  ${_fm_cuda_dir}/CudaVision.cpp
  ${_fm_cuda_dir}/Nccl.cpp
  ${_fm_cuda_out}/CudaPtx.cpp)
target_compile_definitions(fm_hal PRIVATE FM_HAL_CUDA=1)
message(STATUS "CUDA device: on (${FM_CUDA_ARCH} PTX by ${FM_CUDA_CLANG}, toolkit ${FM_CUDA_PATH})")

if(FM_BUILD_TESTS)
  find_program(FM_PTXAS ptxas HINTS ${FM_CUDA_PATH}/bin NO_DEFAULT_PATH)
  add_custom_target(fm_cuda_ptx ALL DEPENDS ${FM_CUDA_PTX})
  # Every PTX through ptxas for the oldest and the newest architecture we
  # target: errors, register spills and hot kernels over their register
  # ceiling fail the test; skipped (77) without ptxas. The GEMM's 128 is 2
  # blocks of 256 threads per SM (64K registers); the matvec's and the
  # attention's are their counts when set, so growth is seen.
  set(FM_CUDA_REG_CEILINGS --max-regs fm_qgemm_mma_=128
      --max-regs fm_qmatvec_=40 --max-regs fm_attention_split_=48)
  add_test(NAME runtime.cuda.ptxas
    COMMAND ${CMAKE_SOURCE_DIR}/scripts/check-ptx.sh "${FM_PTXAS}" sm_80,sm_90
            ${FM_CUDA_REG_CEILINGS} ${FM_CUDA_PTX})
  set_tests_properties(runtime.cuda.ptxas PROPERTIES SKIP_RETURN_CODE 77)
  # The ceiling can fail: the GEMM against 64 registers must.
  add_test(NAME runtime.cuda.ptxas-ceiling
    COMMAND ${CMAKE_SOURCE_DIR}/scripts/check-ptx.sh "${FM_PTXAS}" sm_80
            --max-regs fm_qgemm_mma_=64 ${_fm_cuda_out}/gemm.ptx)
  set_tests_properties(runtime.cuda.ptxas-ceiling PROPERTIES
    PASS_REGULAR_EXPRESSION "FAIL \\(over the ceiling of 64 registers\\): sm_80 gemm.ptx fm_qgemm_mma_q"
    SKIP_REGULAR_EXPRESSION "skipped: no ptxas")
endif()

# The CUDA device's tests (test/unit/cuda): NoDriver.* where no driver is
# installed, Gpu.* (each kernel against the CPU reference) where a GPU is;
# each prints why it skips.
if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  set(_fm_cuda_test_dir ${CMAKE_SOURCE_DIR}/test/unit/cuda)
  # The CUDA block emulator (test/unit/cuda/emu): every kernels/*.cu built
  # for the host too, each kernel registered under the name its PTX gives,
  # so that the Gpu tests run here on host threads (runtime.cuda.emulated).
  set(_fm_cuda_emu_src "")
  foreach(k IN LISTS FM_CUDA_KERNELS)
    set(src ${_fm_cuda_out}/emu_${k}.cpp)
    add_custom_command(OUTPUT ${src}
      COMMAND ${CMAKE_COMMAND} -DCU=${_fm_cuda_dir}/kernels/${k}.cu
              -DPTX=${_fm_cuda_out}/${k}.ptx -DOUT=${src}
              -P ${_fm_cuda_test_dir}/emu/emu_kernels.cmake
      DEPENDS ${_fm_cuda_out}/${k}.ptx ${_fm_cuda_test_dir}/emu/emu_kernels.cmake
      COMMENT "CUDA emulator: kernels/${k}.cu for the host"
      VERBATIM)
    list(APPEND _fm_cuda_emu_src ${src})
  endforeach()
  set(_fm_cuda_emu_options -Wno-unused-parameter)
  if(FM_SANITIZE MATCHES "address")
    # Code that runs on the emulator's fibers keeps its frames on the fiber
    # stacks: with ASan's fake stacks (detect_stack_use_after_return) every
    # fiber would map and unmap one of its own, minutes of system time.
    list(APPEND _fm_cuda_emu_options -fsanitize-address-use-after-return=never)
  endif()
  set_source_files_properties(${_fm_cuda_emu_src} PROPERTIES
    COMPILE_DEFINITIONS FM_CUDA_EMU=1 COMPILE_OPTIONS "${_fm_cuda_emu_options}")
  set_source_files_properties(${_fm_cuda_test_dir}/emu/CudaEmu.cpp PROPERTIES
    COMPILE_OPTIONS "${_fm_cuda_emu_options}")
  add_executable(fm_cuda_test ${_fm_cuda_test_dir}/cuda_test.cpp
    ${_fm_cuda_test_dir}/qdecode_test.cpp ${_fm_cuda_test_dir}/moe_test.cpp
    ${_fm_cuda_test_dir}/graph_test.cpp ${_fm_cuda_test_dir}/vision_test.cpp
    ${_fm_cuda_test_dir}/lora_test.cpp ${_fm_cuda_test_dir}/nccl_test.cpp
    ${_fm_cuda_test_dir}/emu/CudaEmu.cpp
    ${_fm_cuda_emu_src})
  # Nccl.h's declarations against nccl.h, where the toolkit ships it.
  if(EXISTS "${FM_CUDA_PATH}/include/nccl.h")
    target_sources(fm_cuda_test PRIVATE ${_fm_cuda_test_dir}/nccl_abi_check.cpp)
    set_source_files_properties(${_fm_cuda_test_dir}/nccl_abi_check.cpp PROPERTIES
      INCLUDE_DIRECTORIES "${FM_CUDA_PATH}/include")
  endif()
  target_include_directories(fm_cuda_test PRIVATE
    ${CMAKE_SOURCE_DIR}/runtime/src ${CMAKE_SOURCE_DIR}/test/unit/runtime
    ${_fm_cuda_test_dir}/emu ${CMAKE_SOURCE_DIR}/test/unit/gpu)
  target_link_libraries(fm_cuda_test PRIVATE fm_runtime fm_hal fm_schema
    GTest::gtest_main ${CMAKE_DL_LIBS})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_cuda_test PRIVATE -O2 -Wall -Wextra)
  endif()
  add_test(NAME runtime.cuda.nodriver COMMAND fm_cuda_test
    --gtest_filter=NoDriver.*)
  # The Gpu tests on a real GPU: only where this machine has a CUDA driver
  # (CI machines have none; scripts/check-cuda.sh runs them on a lent GPU).
  find_library(FM_LIBCUDA NAMES libcuda.so.1 cuda)
  if(FM_LIBCUDA)
    add_test(NAME runtime.cuda.gpu COMMAND fm_cuda_test --gtest_filter=Gpu*)
    set_tests_properties(runtime.cuda.gpu PROPERTIES
      SKIP_REGULAR_EXPRESSION "skipped: no CUDA device")
  endif()
  # The same tests on the block emulator: the kernels' source on host
  # threads behind an emulated driver (no GPU, no PTX run). Every case runs:
  # a skipped one fails the test. Two run elsewhere with what they need:
  # the vision encoder with the artifact test/targets/cuda_vision.test
  # compiles, the tracks across MPI ranks in runtime.mpi.cuda-nccl.
  add_test(NAME runtime.cuda.emulated COMMAND fm_cuda_test
    --gtest_filter=Gpu*:-GpuVision.EncoderOnCudaMatchesTheCpu:GpuNccl.TracksOnRanksMatchTheCpu)
  set_tests_properties(runtime.cuda.emulated PROPERTIES ENVIRONMENT FM_CUDA_EMULATE=1
    FAIL_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  # Generated code's launch metadata against its PTX (no driver needed).
  add_test(NAME runtime.cuda.ptx-metadata COMMAND fm_cuda_test
    --gtest_filter=CudaPtx.*)
  # The tensor-core GEMM's weight decoding and tile mapping on the host.
  add_test(NAME runtime.cuda.gemm-index COMMAND fm_cuda_test
    --gtest_filter=CudaGemmIndex.*)
  # CUDA graph replay against a fake driver table (no GPU), and the device
  # on that table: what its kernels record and when they reach the stream.
  add_test(NAME runtime.cuda.graph COMMAND fm_cuda_test
    --gtest_filter=CudaGraph.*:CudaGraphDevice.*)
  # The all-reduce through NCCL on the fake driver and a fake NCCL (what is
  # recorded, captured, grouped; host staging where a rank lacks NCCL), and
  # the machine's libnccl.so.2 bound where it is installed. Across MPI
  # ranks on the emulator: runtime.mpi.cuda-nccl (test/CMakeLists.txt).
  add_test(NAME runtime.cuda.nccl COMMAND fm_cuda_test
    --gtest_filter=CudaNcclDevice.*:NcclLoader.*)
  # The MoE routing plan and the matmul launch geometry on the host.
  add_test(NAME runtime.cuda.moe-plan COMMAND fm_cuda_test
    --gtest_filter=CudaMoePlan.*:CudaLaunchGeometry.*)
  # Which GPU a process (an MPI rank) opens, from its environment.
  add_test(NAME runtime.cuda.ordinal COMMAND fm_cuda_test --gtest_filter=CudaOrdinal.*)
  # fm-run without a driver: cuda listed as absent with the reason, and
  # --device cuda a clear error (on the artifact runtime.cuda.nodriver
  # writes).
  set_tests_properties(runtime.cuda.nodriver PROPERTIES
    ENVIRONMENT FM_CUDA_TEST_FMB=${CMAKE_CURRENT_BINARY_DIR}/cuda_nodriver.fmb
    FIXTURES_SETUP fm_cuda_fmb)
  add_test(NAME runtime.cuda.fm-run
    COMMAND ${_fm_cuda_test_dir}/fm_run_nodriver.sh $<TARGET_FILE:fm-run>
            ${CMAKE_CURRENT_BINARY_DIR}/cuda_nodriver.fmb)
  set_tests_properties(runtime.cuda.fm-run PROPERTIES
    FIXTURES_REQUIRED fm_cuda_fmb SKIP_RETURN_CODE 77)
  # Counted as skipped, not passed, when nothing could run.
  set_tests_properties(runtime.cuda.nodriver PROPERTIES
    SKIP_REGULAR_EXPRESSION "a CUDA driver is installed here")
  unset(_fm_cuda_test_dir)
endif()
unset(_fm_cuda_dir)
unset(_fm_cuda_out)
