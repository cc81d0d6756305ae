# What `cmake --install` puts under the prefix, in two components:
#   runtime   libfmrt (shared, SONAME libfmrt.so.ABI, and static), the public
#             application headers (fm/fm.h, the C++ API; no artifact
#             internals, no generated FlatBuffers header), fm-run and
#             fm-tokenize, the CMake package (find_package(fmrt CONFIG):
#             fmrt::fmrt, fmrt::fmrt_static) and fmrt.pc;
#   compiler  fmc and fm-opt (fm_install_compiler(), once they exist).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The headers an application includes: the C API and the C++ API with what
# it includes (a closed set: test/install checks that no other fm/ header
# is needed).
set(FM_PUBLIC_HEADERS
  fm.h
  chat_template.h communicator.h constrained_logits.h conversation.h
  device_info.h grammar.h guided.h guided_tokenizer.h image.h image_prompt.h
  logits_processor.h perplexity.h runtime.h sampler.h status.h tokenizer.h
  tool_call_stream.h)
list(TRANSFORM FM_PUBLIC_HEADERS PREPEND ${CMAKE_SOURCE_DIR}/runtime/include/fm/)
install(FILES ${FM_PUBLIC_HEADERS}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fm COMPONENT runtime)

install(TARGETS fmrt_shared fmrt_static EXPORT fmrtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS fm-run fm-tokenize
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

set(FM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fmrt)
install(EXPORT fmrtTargets NAMESPACE fmrt:: DESTINATION ${FM_CMAKE_DIR}
  COMPONENT runtime)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/fmrtConfig.cmake.in
  ${CMAKE_BINARY_DIR}/fmrtConfig.cmake INSTALL_DESTINATION ${FM_CMAKE_DIR})
# 0.x: a package of another minor version is refused (its ABI may differ).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/fmrtConfigVersion.cmake
  VERSION ${FM_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/fmrtConfig.cmake
              ${CMAKE_BINARY_DIR}/fmrtConfigVersion.cmake
  DESTINATION ${FM_CMAKE_DIR} COMPONENT runtime)

# fmrt.pc: relocatable (the prefix is found from the file's own place).
list(JOIN FM_RUNTIME_SYSTEM_LIBS " " FM_PC_LIBS_PRIVATE)
file(RELATIVE_PATH FM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/fmrt.pc.in ${CMAKE_BINARY_DIR}/fmrt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/fmrt.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT runtime)

# The compiler's tools, a component of their own; they find the LLVM/MLIR
# libraries they were linked with from the prefix too.
function(fm_install_compiler)
  set_target_properties(fmc fm-opt PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS fmc fm-opt
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT compiler)
endfunction()
