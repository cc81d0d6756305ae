# The Metal device (runtime/hal/metal): part of fm_hal on Apple platforms
# only (included by runtime/hal/CMakeLists.txt inside if(APPLE), in its
# scope). Its kernels are the Vulkan device's GLSL (runtime/hal/vulkan/
# shaders), compiled here with glslc and translated to MSL 2.3 by fm-msl's
# translation (targets/metal/SpirvToMsl.cpp, the SPIRV-Cross C API), then
# embedded as source text (MetalShaders.h); the device compiles them with
# newLibraryWithSource at first use. UNVERIFIED: this file has never been
# configured on a Mac (no Mac builds fmc); scripts/check-metal.sh is what a
# Mac runs to check it.
#
# Needs glslc (shaderc or the Vulkan SDK: `brew install shaderc`) and the
# SPIRV-Cross C API (`brew install spirv-cross`).

# name | source | glslc defines: the same table as Vulkan.cmake's
# FM_VULKAN_SHADERS (the kernels must match the Vulkan device's one for one).
set(FM_METAL_SHADERS
  "matmul_f32|matmul.comp|-DWKIND=0"
  "matmul_f16|matmul.comp|-DWKIND=1"
  "matmul_q|matmul.comp|-DWKIND=2"
  "matmul_lora_f32|matmul.comp|-DWKIND=0 -DLORA=1"
  "matmul_lora_f16|matmul.comp|-DWKIND=1 -DLORA=1"
  "matmul_lora_q|matmul.comp|-DWKIND=2 -DLORA=1"
  "embed_f32|embed.comp|-DWKIND=0"
  "embed_f16|embed.comp|-DWKIND=1"
  "embed_q|embed.comp|-DWKIND=2"
  "attention_f32|attention.comp|-DKV8=0"
  "attention_i8|attention.comp|-DKV8=1"
  "rows|rows.comp|"
  "moe_route|moe_route.comp|"
  "moe_plan|moe_plan.comp|"
  "moe_up_f32|moe_up.comp|-DWKIND=0"
  "moe_up_f16|moe_up.comp|-DWKIND=1"
  "moe_up_q|moe_up.comp|-DWKIND=2"
  "moe_down_f32|moe_down.comp|-DWKIND=0"
  "moe_down_f16|moe_down.comp|-DWKIND=1"
  "moe_down_q|moe_down.comp|-DWKIND=2"
  "moe_combine|moe_combine.comp|"
  "lora_up_f16|lora_up.comp|-DWKIND=1"
  "lora_up_q|lora_up.comp|-DWKIND=2"
  "bias_act|bias_act.comp|"
  "layer_norm|layer_norm.comp|"
  "patch_embed|patch_embed.comp|"
  "vit_attention|vit_attention.comp|"
  "unfold3x3|unfold3x3.comp|"
  "avg_pool|avg_pool.comp|"
)
set(FM_METAL_DIR ${CMAKE_CURRENT_LIST_DIR})
# The table must be Vulkan.cmake's, entry for entry.
file(READ ${FM_METAL_DIR}/../vulkan/Vulkan.cmake _vk)
string(REGEX MATCHALL "\"[a-z0-9_]+\\|[a-z0-9_]+\\.comp\\|[^\"]*\"" _vk_entries "${_vk}")
list(LENGTH _vk_entries _vk_n)
list(LENGTH FM_METAL_SHADERS _mtl_n)
foreach(_entry ${FM_METAL_SHADERS})
  string(FIND "${_vk}" "\"${_entry}\"" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "Metal.cmake: kernel entry '${_entry}' is not in Vulkan.cmake's FM_VULKAN_SHADERS")
  endif()
endforeach()
if(NOT _vk_n EQUAL _mtl_n)
  message(FATAL_ERROR "Metal.cmake: ${_mtl_n} kernels, Vulkan.cmake has ${_vk_n}: keep the tables equal")
endif()
set(FM_METAL_SHADER_DIR ${CMAKE_CURRENT_LIST_DIR}/../vulkan/shaders)
set(FM_METAL_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/metal)
file(MAKE_DIRECTORY ${FM_METAL_GEN_DIR}/spv ${FM_METAL_GEN_DIR}/msl)

# The translator, built for the build machine from the Metal target's
# sources (no MLIR in them).
add_executable(fm_metal_msl
  ${CMAKE_SOURCE_DIR}/targets/metal/fm-msl.cpp
  ${CMAKE_SOURCE_DIR}/targets/metal/SpirvToMsl.cpp
  ${CMAKE_SOURCE_DIR}/targets/metal/ThreadgroupMemory.cpp)
target_include_directories(fm_metal_msl PRIVATE ${CMAKE_SOURCE_DIR} ${FM_SPIRV_CROSS_INCLUDE_DIR})
target_link_libraries(fm_metal_msl PRIVATE ${FM_SPIRV_CROSS_LIBRARY})
target_compile_features(fm_metal_msl PRIVATE cxx_std_17)

set(_names)
set(_msl)
foreach(_entry ${FM_METAL_SHADERS})
  string(REPLACE "|" ";" _parts "${_entry}")
  list(GET _parts 0 _name)
  list(GET _parts 1 _src)
  list(LENGTH _parts _n)
  set(_defs)
  if(_n GREATER 2)
    list(GET _parts 2 _defs)
    separate_arguments(_defs)
  endif()
  set(_spv ${FM_METAL_GEN_DIR}/spv/${_name}.spv)
  set(_out ${FM_METAL_GEN_DIR}/msl/${_name}.metal)
  # fm-msl writes DIR/<name>.metal and one line with the threadgroup size
  # (kept in <name>.txt for EmbedMsl.cmake).
  add_custom_command(
    OUTPUT ${_out} ${_out}.txt
    COMMAND ${FM_GLSLC} --target-env=vulkan1.1 -O -I ${FM_METAL_SHADER_DIR}
            ${_defs} ${FM_METAL_SHADER_DIR}/${_src} -o ${_spv}
    COMMAND ${CMAKE_COMMAND} -DMSL=$<TARGET_FILE:fm_metal_msl> -DSPV=${_spv}
            -DDIR=${FM_METAL_GEN_DIR}/msl -DLOG=${_out}.txt
            -P ${FM_METAL_DIR}/RunMsl.cmake
    DEPENDS ${FM_METAL_SHADER_DIR}/${_src} ${FM_METAL_SHADER_DIR}/common.glsl
            ${FM_METAL_SHADER_DIR}/dot.glsl fm_metal_msl ${FM_METAL_DIR}/RunMsl.cmake
    COMMENT "glslc + fm-msl ${_src} -> ${_name}.metal"
    VERBATIM)
  list(APPEND _names ${_name})
  list(APPEND _msl ${_out})
endforeach()

set(_embedded ${FM_METAL_GEN_DIR}/MetalShaders.cpp)
add_custom_command(
  OUTPUT ${_embedded}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_embedded} "-DNAMES=${_names}" "-DFILES=${_msl}"
          -P ${FM_METAL_DIR}/EmbedMsl.cmake
  DEPENDS ${_msl} ${FM_METAL_DIR}/EmbedMsl.cmake
  COMMENT "Embedding the Metal kernels"
  VERBATIM)

set(_sources
  MetalContext.mm
  MetalDevice.mm
  MetalExecutable.mm
  MetalKernels.mm
  MetalLora.mm
  MetalMoe.mm
  MetalPipelines.mm
  MetalQueue.mm
  MetalVision.mm
)
list(TRANSFORM _sources PREPEND ${FM_METAL_DIR}/)
target_sources(fm_hal PRIVATE ${_embedded} ${_sources})
add_custom_target(fm_metal_shaders DEPENDS ${_embedded})
add_dependencies(fm_hal fm_metal_shaders)
# ARC for the Objective-C++ files (Metal objects are released with the C++
# objects that hold them), and C++17 for them as for the C++ files. On the
# target rather than the sources, so that copies of fm_hal made in other
# folders (test/fuzz's instrumented variant) keep them.
target_compile_options(fm_hal PRIVATE $<$<COMPILE_LANGUAGE:OBJCXX>:-fobjc-arc>)
set_target_properties(fm_hal PROPERTIES OBJCXX_STANDARD 17 OBJCXX_STANDARD_REQUIRED ON)
target_link_libraries(fm_hal PUBLIC "-framework Metal" "-framework Foundation")
target_compile_definitions(fm_hal PUBLIC FM_HAVE_METAL=1)

# The kernels on the Metal device against the CPU device (test/unit/metal,
# ported from the Vulkan test). Never built by the project (no Mac).
if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_metal_test ${CMAKE_SOURCE_DIR}/test/unit/metal/metal_kernels_test.mm)
  target_link_libraries(fm_metal_test PRIVATE fm_hal GTest::gtest_main)
  target_compile_options(fm_metal_test PRIVATE -fobjc-arc -O2 -Wall -Wextra)
  set_target_properties(fm_metal_test PROPERTIES OBJCXX_STANDARD 17 OBJCXX_STANDARD_REQUIRED ON)
  add_test(NAME runtime.metal COMMAND fm_metal_test)
endif()
