# Benchmarks that are plain programs (no Google Benchmark): each prints a
# table of medians over interleaved rounds against a peer measured in the
# same run. Included from bench/kernels/CMakeLists.txt.

# fm-gemm-yardstick: qgemm against oneDNN's s8s8s32 matmul (libdnnl-dev, a
# benchmark-only dependency) and against the previous prefill path.
# (Debian's dnnl-config.cmake insists on OpenCL for its GPU runtime: look
# for the library and header directly.)
find_library(FM_DNNL_LIBRARY NAMES dnnl)
find_path(FM_DNNL_INCLUDE NAMES dnnl.hpp PATH_SUFFIXES oneapi/dnnl)
find_library(FM_GOMP_LIBRARY NAMES libgomp.so.1 gomp)
if(FM_DNNL_LIBRARY AND FM_DNNL_INCLUDE AND FM_GOMP_LIBRARY AND TARGET fm_kernels)
  add_executable(fm-gemm-yardstick ${CMAKE_CURRENT_LIST_DIR}/gemm_yardstick.cpp)
  # Debian's oneDNN runs on libgomp; the benchmark sets its thread count.
  target_include_directories(fm-gemm-yardstick PRIVATE ${FM_DNNL_INCLUDE})
  target_link_libraries(fm-gemm-yardstick PRIVATE fm_kernels ${FM_DNNL_LIBRARY}
    ${FM_GOMP_LIBRARY})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm-gemm-yardstick PRIVATE -O2 -Wall -Wextra)
  endif()
else()
  message(STATUS "fm: oneDNN (libdnnl-dev) not found, skipping fm-gemm-yardstick")
endif()

# fm-quantize-bench: quantizeRows against the quantizer it replaced.
if(TARGET fm_quantize_reference)
  add_executable(fm-quantize-bench ${CMAKE_CURRENT_LIST_DIR}/quantize_bench.cpp)
  target_link_libraries(fm-quantize-bench PRIVATE fm_quantize_reference)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm-quantize-bench PRIVATE -O2 -Wall -Wextra)
  endif()
endif()

# fm-qmatvec-planes: the decode matvec with GFNI planes against its
# shift-and-mask version, alternating in pairs.
if(TARGET fm_kernels)
  add_executable(fm-qmatvec-planes ${CMAKE_CURRENT_LIST_DIR}/qmatvec_planes.cpp)
  target_link_libraries(fm-qmatvec-planes PRIVATE fm_kernels)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm-qmatvec-planes PRIVATE -O2 -Wall -Wextra)
  endif()
endif()

# fm-matvec-layouts: decode's matvec from the row layout against qgemm's
# lone-row pass over the Panel16 copy, alternating in pairs, cold and hot.
if(TARGET fm_kernels)
  add_executable(fm-matvec-layouts ${CMAKE_CURRENT_LIST_DIR}/matvec_layouts.cpp)
  target_link_libraries(fm-matvec-layouts PRIVATE fm_kernels)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm-matvec-layouts PRIVATE -O2 -Wall -Wextra)
  endif()
endif()
