# Per-layer libraries with per-layer include roots.
#
# Every layer of the compiler is one static library. Its headers are
# included by their source path ("dialects/fm/IR/FmOps.h",
# "targets/Target.h"), but no target sees the whole source tree: each layer
# publishes an include root of its own under ${CMAKE_BINARY_DIR}/layers/<lib>
# that holds links to just its own folders or files. A file can then include
# a header only from a library it links, and since every library links only
# the layers below it, an include that runs back up the layers does not
# compile. (scripts/check-layers.py checks the same from the sources, in
# ctest.)

set(FM_LAYERS_ROOT ${CMAKE_BINARY_DIR}/layers)

# fm_layer_root(<lib> <kind> PATHS <rel>...): a directory that holds, for
# each <rel> (a folder or file relative to <kind>'s root: SOURCE or BINARY),
# a link at the same relative path; it becomes a PUBLIC include directory
# of <lib>.
function(fm_layer_root lib kind)
  cmake_parse_arguments(ARG "" "" "PATHS" ${ARGN})
  set(root ${FM_LAYERS_ROOT}/${lib}-${kind})
  if(kind STREQUAL "SOURCE")
    set(base ${CMAKE_SOURCE_DIR})
  else()
    set(base ${CMAKE_BINARY_DIR})
  endif()
  foreach(rel ${ARG_PATHS})
    get_filename_component(parent ${root}/${rel} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    if(kind STREQUAL "BINARY")
      file(MAKE_DIRECTORY ${base}/${rel})
    endif()
    if(NOT EXISTS ${root}/${rel})
      file(CREATE_LINK ${base}/${rel} ${root}/${rel} SYMBOLIC)
    endif()
  endforeach()
  target_include_directories(${lib} PUBLIC ${root})
endfunction()

# fm_layer(<lib> SOURCES ... PUBLISH <rel>... [GENERATED <rel>...]
#          [DEPENDS <lib>...]): a static library of one layer.
function(fm_layer lib)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLISH;GENERATED;DEPENDS" ${ARGN})
  add_library(${lib} STATIC ${ARG_SOURCES})
  set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  fm_layer_root(${lib} SOURCE PATHS ${ARG_PUBLISH})
  if(ARG_GENERATED)
    fm_layer_root(${lib} BINARY PATHS ${ARG_GENERATED})
  endif()
  target_link_libraries(${lib} PUBLIC ${ARG_DEPENDS})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${lib} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  endif()
endfunction()

# fm_instrumented_variant(<lib> <new> <options> [REPLACE <old> <new>...]):
# a copy of library <lib> (its sources, include directories, definitions
# and links, with each <old> link replaced by its <new>) compiled with extra
# <options>, e.g. for a fuzzer that needs its code under test instrumented:
# the fuzzers link the project's libraries, not lists of their sources.
function(fm_instrumented_variant lib new options)
  cmake_parse_arguments(ARG "" "" "REPLACE" ${ARGN})
  get_target_property(dir ${lib} SOURCE_DIR)
  get_target_property(sources ${lib} SOURCES)
  set(abs)
  foreach(s ${sources})
    if(IS_ABSOLUTE ${s})
      list(APPEND abs ${s})
    else()
      list(APPEND abs ${dir}/${s})
    endif()
  endforeach()
  add_library(${new} STATIC ${abs})
  foreach(prop INCLUDE_DIRECTORIES COMPILE_DEFINITIONS)
    get_target_property(v ${lib} ${prop})
    if(v)
      set_property(TARGET ${new} PROPERTY ${prop} ${v})
    endif()
  endforeach()
  foreach(prop INTERFACE_INCLUDE_DIRECTORIES INTERFACE_COMPILE_DEFINITIONS)
    get_target_property(v ${lib} ${prop})
    if(v)
      set_property(TARGET ${new} PROPERTY ${prop} ${v})
    endif()
  endforeach()
  get_target_property(links ${lib} LINK_LIBRARIES)
  if(links)
    set(mapped)
    foreach(l ${links})
      list(FIND ARG_REPLACE ${l} at)
      if(at GREATER -1)
        math(EXPR at "${at} + 1")
        list(GET ARG_REPLACE ${at} l)
      endif()
      list(APPEND mapped ${l})
    endforeach()
    target_link_libraries(${new} PUBLIC ${mapped})
  endif()
  get_target_property(deps ${lib} MANUALLY_ADDED_DEPENDENCIES)
  if(deps)
    add_dependencies(${new} ${deps})
  endif()
  target_compile_options(${new} PRIVATE ${options})
endfunction()
