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
