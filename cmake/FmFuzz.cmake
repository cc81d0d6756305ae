# libFuzzer targets, registered in one place each and run as ctests under one
# time budget.
#
#   fm_fuzz_library(<lib> <name>)
#   fm_fuzz_target(<name> SOURCES <cpp>... LIBS <lib>... CORPUS <dir>
#                  [DICT <file>] [EXE <executable name>] [ARGS <arg>...])
#
# The fuzz targets are built in the ASan + UBSan build only
# (FM_SANITIZE=address,undefined: `make check-sanitize`), from that build's
# own objects: fm_fuzz_library adds libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link) to a library a fuzzer tests and names it
# <name> for the LIBS of fm_fuzz_target, and fm_fuzz_target links its
# SOURCES with -fsanitize=fuzzer. So no source is compiled twice: the plain
# build compiles each library once and builds no fuzzer (it spent 29% of its
# cold compile on instrumented copies), and the ASan build compiles each
# once, its tests and fuzzers on the same objects. The fuzzers run with
# UBSan too, and with the runtime's heap arenas (FM_HEAP_HOST_MEMORY), so
# that an overrun traps. Each target is recorded; at the end of the
# configure step (a deferred call of the top directory) every recorded
# target becomes the test fuzz.<name>: the target runs from its committed
# seed CORPUS (new inputs go to a scratch directory of the build, never into
# the repository) for
#   min(FM_FUZZ_SECONDS, FM_FUZZ_TOTAL_SECONDS / number of targets)
# seconds, so that all fuzzers together stay within the total however many
# the other layers add. A crash, leak or timeout fails the test; libFuzzer
# writes the input (crash-<sha1>) into the build directory: fix the bug and
# commit that input to CORPUS as a regression seed.
#
# Skipped without clang's libFuzzer, and in every build but ASan's.
if(COMMAND fm_fuzz_target)
  return()
endif()
set(FM_FUZZ_SECONDS 30 CACHE STRING "most seconds one fuzz target runs in ctest")
# 180 s in all (10 s each for the 18 targets) keeps check-sanitize's share
# of CI small (it was 260 s, 15 s each). Measured in the clean-clone run
# (7f53b49), executions in 10 s (-print_final_stats, in the ctest log): from
# 60 (grammar_schema: each input compiles a whole schema grammar) and 743
# (fmb) to 5841 (tokenizer_json), 4335 (grammar_regex) and 17k-1.1M for the
# rest; the slow two get few new inputs either way, and longer runs are
# FM_FUZZ_TOTAL_SECONDS=300 (the issue's most) or a fuzzer by hand.
set(FM_FUZZ_TOTAL_SECONDS 180 CACHE STRING
    "seconds all fuzz targets together run in ctest")

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address")
check_cxx_source_compiles(
  "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }"
  FM_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT FM_SANITIZE MATCHES "address")
  set(FM_FUZZ_ENABLED OFF)
  message(STATUS "fmc: fuzz targets not built here (the ASan build of `make check-sanitize` builds and runs them)")
elseif(NOT FM_HAVE_LIBFUZZER)
  set(FM_FUZZ_ENABLED OFF)
  message(STATUS "fmc: libFuzzer not available (clang + libclang-rt); fuzz targets skipped")
else()
  set(FM_FUZZ_ENABLED ON)
endif()

# fm_fuzz_library: see above. <name> is an interface target, so that the
# LIBS of a fuzzer say which libraries carry the coverage it is guided by.
function(fm_fuzz_library lib name)
  if(NOT FM_FUZZ_ENABLED)
    return()
  endif()
  target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link)
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE ${lib})
endfunction()

# fm_fuzz_target: see above.
function(fm_fuzz_target name)
  cmake_parse_arguments(ARG "" "CORPUS;DICT;EXE" "SOURCES;LIBS;ARGS" ${ARGN})
  if(NOT FM_FUZZ_ENABLED)
    return()
  endif()
  if(NOT ARG_CORPUS OR NOT IS_DIRECTORY ${ARG_CORPUS})
    message(FATAL_ERROR "fm_fuzz_target(${name}): CORPUS '${ARG_CORPUS}' is not a directory")
  endif()
  set(exe ${name}_fuzz)
  if(ARG_EXE)
    set(exe ${ARG_EXE})
  endif()
  add_executable(${exe} ${ARG_SOURCES})
  # ASan and UBSan come from the build's own flags (cmake/FmSanitize.cmake).
  target_compile_options(${exe} PRIVATE -fsanitize=fuzzer)
  target_link_options(${exe} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${exe} PRIVATE ${ARG_LIBS})
  set(args ${ARG_ARGS})
  if(ARG_DICT)
    list(APPEND args -dict=${ARG_DICT})
  endif()
  set_property(GLOBAL APPEND PROPERTY FM_FUZZ_TARGETS ${name})
  set_property(GLOBAL PROPERTY FM_FUZZ_${name}_EXE ${exe})
  set_property(GLOBAL PROPERTY FM_FUZZ_${name}_CORPUS ${ARG_CORPUS})
  set_property(GLOBAL PROPERTY FM_FUZZ_${name}_ARGS "${args}")
  set_property(GLOBAL PROPERTY FM_FUZZ_${name}_DIR ${CMAKE_CURRENT_BINARY_DIR})
endfunction()

# The tests, once every target is known (deferred to the end of the top
# directory's CMakeLists.txt, runtime-only builds included).
function(fm_fuzz_tests)
  get_property(targets GLOBAL PROPERTY FM_FUZZ_TARGETS)
  list(LENGTH targets n)
  if(n EQUAL 0)
    return()
  endif()
  math(EXPR seconds "${FM_FUZZ_TOTAL_SECONDS} / ${n}")
  if(seconds GREATER FM_FUZZ_SECONDS)
    set(seconds ${FM_FUZZ_SECONDS})
  endif()
  if(seconds LESS 1)
    set(seconds 1)
  endif()
  message(STATUS "fmc: ${n} fuzz targets, ${seconds} s each in ctest")
  foreach(name ${targets})
    get_property(exe GLOBAL PROPERTY FM_FUZZ_${name}_EXE)
    get_property(corpus GLOBAL PROPERTY FM_FUZZ_${name}_CORPUS)
    get_property(args GLOBAL PROPERTY FM_FUZZ_${name}_ARGS)
    get_property(dir GLOBAL PROPERTY FM_FUZZ_${name}_DIR)
    set(scratch ${dir}/scratch_${name})
    file(MAKE_DIRECTORY ${scratch})
    # allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons and unpoisons
    # its slabs in header code, which is instrumented where our files
    # inline it but not inside the prebuilt libLLVM/libMLIR; in such a
    # mixed build its manual poisoning is wrong (a use-after-poison in
    # libMLIR's own memmove, test/fuzz/corpus/fm_dialect/
    # regression_llvm_poisoning.mlir). fmc itself poisons nothing by hand.
    add_test(NAME fuzz.${name}
      COMMAND ${CMAKE_COMMAND} -E env
              ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0
              $<TARGET_FILE:${exe}> -max_total_time=${seconds}
              -print_final_stats=1 ${args} ${scratch} ${corpus}
      WORKING_DIRECTORY ${dir})
    # Loading the corpus and the final report come on top of the time.
    math(EXPR timeout "${seconds} * 2 + 60")
    set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT ${timeout}
      LABELS fuzz)
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL fm_fuzz_tests)
