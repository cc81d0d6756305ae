// SPIRV-Cross C API calls (SpirvToMsl.h).
#include "targets/metal/SpirvToMsl.h"

#include "targets/metal/ThreadgroupMemory.h"

#include <spirv_cross_c.h>

#include <algorithm>

namespace fm::msl {
namespace {

struct Context {
  spvc_context ctx = nullptr;
  std::string lastError;
  Context() {
    spvc_context_create(&ctx);
    spvc_context_set_error_callback(
        ctx, [](void *self, const char *msg) { static_cast<Context *>(self)->lastError = msg; },
        this);
  }
  ~Context() {
    if (ctx)
      spvc_context_destroy(ctx);
  }
};

} // namespace

const char *platformName(Platform p) { return p == Platform::IOS ? "ios" : "macos"; }

bool translate(const uint32_t *words, size_t count, const std::string &entry,
               uint32_t bindings, Platform platform, Function *out, std::string *error,
               const std::string &rename) {
  Context c;
  auto fail = [&](const char *stage) {
    *error = std::string("spirv-cross: ") + stage + " failed" +
             (c.lastError.empty() ? "" : ": " + c.lastError);
    return false;
  };
  if (!c.ctx)
    return fail("spvc_context_create");
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(c.ctx, words, count, &ir) != SPVC_SUCCESS)
    return fail("parsing the SPIR-V");
  spvc_compiler compiler = nullptr;
  if (spvc_context_create_compiler(c.ctx, SPVC_BACKEND_MSL, ir,
                                   SPVC_CAPTURE_MODE_TAKE_OWNERSHIP,
                                   &compiler) != SPVC_SUCCESS)
    return fail("creating the MSL compiler");
  if (spvc_compiler_set_entry_point(compiler, entry.c_str(), SpvExecutionModelGLCompute) !=
      SPVC_SUCCESS)
    return fail(("selecting entry point '" + entry + "'").c_str());
  if (!rename.empty() && rename != entry &&
      spvc_compiler_rename_entry_point(compiler, entry.c_str(), rename.c_str(),
                                       SpvExecutionModelGLCompute) != SPVC_SUCCESS)
    return fail("renaming the entry point");
  if (bindings == kReflectBindings) {
    spvc_resources resources = nullptr;
    const spvc_reflected_resource *list = nullptr;
    size_t n = 0;
    if (spvc_compiler_create_shader_resources(compiler, &resources) != SPVC_SUCCESS ||
        spvc_resources_get_resource_list_for_type(
            resources, SPVC_RESOURCE_TYPE_STORAGE_BUFFER, &list, &n) != SPVC_SUCCESS)
      return fail("reflecting the storage buffers");
    bindings = 0;
    for (size_t i = 0; i < n; ++i) {
      if (spvc_compiler_get_decoration(compiler, list[i].id, SpvDecorationDescriptorSet) != 0)
        return fail("reflection: a storage buffer outside descriptor set 0");
      bindings = std::max(bindings,
                          spvc_compiler_get_decoration(compiler, list[i].id,
                                                       SpvDecorationBinding) + 1);
    }
  }
  out->bindings = bindings;
  spvc_compiler_options options = nullptr;
  if (spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS)
    return fail("creating the options");
  spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_MSL_VERSION,
                                 SPVC_MAKE_MSL_VERSION(2, 3, 0));
  spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_MSL_PLATFORM,
                                 platform == Platform::IOS ? SPVC_MSL_PLATFORM_IOS
                                                           : SPVC_MSL_PLATFORM_MACOS);
  if (platform == Platform::IOS)
    spvc_compiler_options_set_bool(options,
                                   SPVC_COMPILER_OPTION_MSL_IOS_USE_SIMDGROUP_FUNCTIONS,
                                   SPVC_TRUE);
  if (spvc_compiler_install_compiler_options(compiler, options) != SPVC_SUCCESS)
    return fail("installing the options");
  // Buffer i at [[buffer(i)]], the push constants after them.
  for (uint32_t i = 0; i <= bindings; ++i) {
    spvc_msl_resource_binding b;
    spvc_msl_resource_binding_init(&b);
    b.stage = SpvExecutionModelGLCompute;
    b.desc_set = i < bindings ? 0 : SPVC_MSL_PUSH_CONSTANT_DESC_SET;
    b.binding = i < bindings ? i : SPVC_MSL_PUSH_CONSTANT_BINDING;
    b.msl_buffer = i;
    if (spvc_compiler_msl_add_resource_binding(compiler, &b) != SPVC_SUCCESS)
      return fail("binding the buffers");
  }
  const char *source = nullptr;
  if (spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS || !source)
    return fail(("translating '" + entry + "' to MSL").c_str());
  out->source = source;
  const char *name = spvc_compiler_get_cleansed_entry_point_name(
      compiler, rename.empty() ? entry.c_str() : rename.c_str(), SpvExecutionModelGLCompute);
  out->entry = name ? name : entry;
  for (unsigned d = 0; d < 3; ++d)
    out->workgroup[d] =
        spvc_compiler_get_execution_mode_argument_by_index(compiler, SpvExecutionModeLocalSize, d);
  // Metal refuses a pipeline over its threadgroup-memory limit: refuse the
  // kernel now, where the artifact is built.
  uint64_t shared = 0;
  if (!threadgroupBytes(words, count, entry, &shared, error))
    return false;
  if (shared > kMetalThreadgroupBytes) {
    *error = "kernel '" + entry + "' needs " + std::to_string(shared) +
             " bytes of threadgroup memory, more than Metal's " +
             std::to_string(kMetalThreadgroupBytes) + " (maxTotalThreadgroupMemoryLength)";
    return false;
  }
  out->threadgroupBytes = shared;
  return true;
}

} // namespace fm::msl
