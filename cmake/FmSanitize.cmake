# FM_SANITIZE: the whole build (compiler, runtime, tools, tests) under
# sanitizers, for `make check-sanitize` (scripts/check-sanitize.sh):
#   address,undefined  ASan + UBSan of everything, every test
#   thread             TSan, for the runtime's threaded tests
# Such builds allocate the runtime's arenas, KV caches and scratch on the
# heap (FM_HEAP_HOST_MEMORY, runtime/base/HostMemory.cpp), each block exactly
# its size, so that a kernel or command overrunning its buffer meets a
# redzone instead of the rest of an anonymous mapping.
set(FM_SANITIZE "" CACHE STRING
    "sanitizers for the whole build: address,undefined or thread (empty: none)")
if(NOT FM_SANITIZE)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "FM_SANITIZE needs clang (CMAKE_CXX_COMPILER=clang++-22)")
endif()
message(STATUS "fmc: sanitizers ${FM_SANITIZE}")
# -O1 and line tables: sanitizer builds are for finding bugs, and compile
# in about the time of a release build (full -g would double the links).
# Assertions on (-UNDEBUG): a failed assert is a finding too.
set(FM_SANITIZE_FLAGS -fsanitize=${FM_SANITIZE} -fno-omit-frame-pointer
    -O1 -gline-tables-only -UNDEBUG)
if(FM_SANITIZE MATCHES "undefined")
  # Every UBSan report fails its test (the default only prints and goes on).
  # vptr is off: LLVM and MLIR are built without RTTI, so the check cannot
  # see the dynamic type of their objects and would report every cast.
  list(APPEND FM_SANITIZE_FLAGS -fno-sanitize-recover=all -fno-sanitize=vptr)
  # One third-party header's known report, justified in the file.
  list(APPEND FM_SANITIZE_FLAGS
       -fsanitize-ignorelist=${CMAKE_CURRENT_LIST_DIR}/ubsan-ignorelist.txt)
endif()
add_compile_options(${FM_SANITIZE_FLAGS})
add_link_options(-fsanitize=${FM_SANITIZE})
add_compile_definitions(FM_HEAP_HOST_MEMORY=1)

# Most targets ask for -O2 or -O3 of their own (the kernels, the tests), and
# target options come after the directory's, which would undo the -O1 above:
# once every directory is configured, each target's -O2/-O3 becomes -O1.
# Measured on the slowest file (qmatmul_avx512.cpp, ASan+UBSan): 20 s at -O1
# against 50 s at -O3, which is most of the sanitizer builds' time in CI.
function(fm_sanitize_opt_level dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    get_target_property(opts ${t} COMPILE_OPTIONS)
    if(opts)
      list(TRANSFORM opts REPLACE "^-O[23]$" "-O1")
      set_target_properties(${t} PROPERTIES COMPILE_OPTIONS "${opts}")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    fm_sanitize_opt_level(${d})
  endforeach()
endfunction()
cmake_language(DEFER CALL fm_sanitize_opt_level ${CMAKE_SOURCE_DIR})
