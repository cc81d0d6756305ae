# The Vulkan device (runtime/hal/vulkan): part of fm_hal when Vulkan and
# glslc are found (included by runtime/hal/CMakeLists.txt, in its scope). Its
# kernels are GLSL compute shaders compiled here with glslc and embedded into
# the library (VulkanShaders.h).

# name | source | glslc defines
set(FM_VULKAN_SHADERS
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
  # The unfused up product: the Metal device's (Metal.cmake's table must
  # equal this one), and the Vulkan device's where matmul_lora_* binds more
  # storage buffers than the device allows (VulkanLora.cpp).
  "lora_up_f16|lora_up.comp|-DWKIND=1"
  "lora_up_q|lora_up.comp|-DWKIND=2"
  "bias_act|bias_act.comp|"
  "layer_norm|layer_norm.comp|"
  "patch_embed|patch_embed.comp|"
  "vit_attention|vit_attention.comp|"
  "unfold3x3|unfold3x3.comp|"
  "avg_pool|avg_pool.comp|"
)
set(FM_VULKAN_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FM_VULKAN_SHADER_DIR ${FM_VULKAN_DIR}/shaders)
set(FM_VULKAN_SPV_DIR ${CMAKE_CURRENT_BINARY_DIR}/vulkan/spv)
file(MAKE_DIRECTORY ${FM_VULKAN_SPV_DIR})
set(_names)
set(_files)
foreach(_entry ${FM_VULKAN_SHADERS})
  string(REPLACE "|" ";" _parts "${_entry}")
  list(GET _parts 0 _name)
  list(GET _parts 1 _src)
  list(LENGTH _parts _n)
  set(_defs)
  if(_n GREATER 2)
    list(GET _parts 2 _defs)
    separate_arguments(_defs)
  endif()
  set(_spv ${FM_VULKAN_SPV_DIR}/${_name}.spv)
  add_custom_command(
    OUTPUT ${_spv}
    COMMAND ${FM_GLSLC} --target-env=vulkan1.1 -O -I ${FM_VULKAN_SHADER_DIR}
            ${_defs} -MD -MF ${_spv}.d ${FM_VULKAN_SHADER_DIR}/${_src} -o ${_spv}
    DEPENDS ${FM_VULKAN_SHADER_DIR}/${_src}
    DEPFILE ${_spv}.d
    COMMENT "glslc ${_src} -> ${_name}.spv"
    VERBATIM)
  list(APPEND _names ${_name})
  list(APPEND _files ${_spv})
endforeach()
set(FM_VULKAN_SPV_FILES ${_files})
set(FM_VULKAN_SPV_NAMES ${_names})

set(_embedded ${CMAKE_CURRENT_BINARY_DIR}/vulkan/VulkanShaders.cpp)
add_custom_command(
  OUTPUT ${_embedded}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_embedded} -DNAMESPACE=fm::hal::vk
          "-DNAMES=${_names}" "-DFILES=${_files}"
          -P ${CMAKE_SOURCE_DIR}/cmake/EmbedSpirv.cmake
  DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/EmbedSpirv.cmake
  COMMENT "Embedding the Vulkan kernels"
  VERBATIM)

set(_sources
  VulkanContext.cpp
  VulkanDevice.cpp
  VulkanExecutable.cpp
  VulkanKernels.cpp
  VulkanLora.cpp
  VulkanMatmulPlan.cpp
  VulkanMoe.cpp
  VulkanPipelines.cpp
  VulkanQueue.cpp
  VulkanVision.cpp
)
list(TRANSFORM _sources PREPEND ${FM_VULKAN_DIR}/)
target_sources(fm_hal PRIVATE ${_embedded} ${_sources})
# A target of its own, so that variants of fm_hal in other folders (the
# instrumented one of test/fuzz) wait for the generated source too.
add_custom_target(fm_vulkan_shaders DEPENDS ${_embedded})
add_dependencies(fm_hal fm_vulkan_shaders)
set_target_properties(Vulkan::Vulkan PROPERTIES IMPORTED_GLOBAL TRUE)
# Vulkan's create-info idiom, {VK_STRUCTURE_TYPE_...}, leaves the rest zero.
set_source_files_properties(${_sources} PROPERTIES
  COMPILE_OPTIONS "-Wno-missing-field-initializers")
target_link_libraries(fm_hal PRIVATE Vulkan::Vulkan)
target_compile_definitions(fm_hal PUBLIC FM_HAVE_VULKAN=1)

# The kernels on the Vulkan device that Vulkan finds here, against the CPU
# device (test/unit/vulkan). CI machines have lavapipe (mesa-vulkan-drivers):
# the test asks for it through VK_ICD_FILENAMES when its ICD is installed.
find_file(FM_LAVAPIPE_ICD NAMES lvp_icd.x86_64.json lvp_icd.aarch64.json lvp_icd.json
          PATHS /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d NO_DEFAULT_PATH)
if(FM_LAVAPIPE_ICD)
  set(FM_VULKAN_TEST_ENV "VK_ICD_FILENAMES=${FM_LAVAPIPE_ICD}")
else()
  set(FM_VULKAN_TEST_ENV "")
endif()
if(FM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  add_executable(fm_vulkan_test ${CMAKE_SOURCE_DIR}/test/unit/vulkan/vulkan_kernels_test.cpp)
  target_link_libraries(fm_vulkan_test PRIVATE fm_hal Vulkan::Vulkan GTest::gtest_main)
  target_include_directories(fm_vulkan_test PRIVATE ${CMAKE_SOURCE_DIR}/test/unit/gpu)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(fm_vulkan_test PRIVATE -O2 -Wall -Wextra)
  endif()
  add_test(NAME runtime.vulkan COMMAND fm_vulkan_test)
  # Label vulkan: it loads a Vulkan driver (check-sanitize.sh runs such tests
  # in its vulkan stage).
  set_tests_properties(runtime.vulkan PROPERTIES ENVIRONMENT "${FM_VULKAN_TEST_ENV}" LABELS vulkan)
endif()
