// The shared Metal objects (MetalContext.h) and the registry's entry points
// (MetalProbe.h).
#include "hal/metal/MetalContext.h"

#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalProbe.h"

namespace fm::hal::mtl {

NSString *toNs(const std::string &s) { return [NSString stringWithUTF8String:s.c_str()]; }

std::string fromNs(NSString *s) {
  const char *c = s ? [s UTF8String] : nullptr;
  return c ? std::string(c) : std::string();
}

Status nsError(NSError *error, const std::string &what) {
  return Status::error("metal: " + what + ": " +
                       (error ? fromNs([error localizedDescription]) : "failed (no error given)"));
}

Expected<std::shared_ptr<MetalContext>> MetalContext::create() {
  std::shared_ptr<MetalContext> ctx(new MetalContext());
  ctx->device_ = MTLCreateSystemDefaultDevice();
  if (!ctx->device_)
    return Status::error("metal: MTLCreateSystemDefaultDevice found no Metal device");
  ctx->queue_ = [ctx->device_ newCommandQueue];
  if (!ctx->queue_)
    return Status::error("metal: newCommandQueue failed on " + fromNs([ctx->device_ name]));
  return ctx;
}

std::string MetalContext::description() const {
  std::string d = fromNs([device_ name]);
  if (@available(macOS 10.15, iOS 13.0, *))
    d += [device_ hasUnifiedMemory] ? ", unified memory" : ", discrete memory";
  return d;
}

Expected<CompiledKernel>
MetalContext::compile(const std::string &source, const std::string &entry,
                      MTLFunctionConstantValues *constants, const std::string &what) const {
  @autoreleasepool {
    MTLCompileOptions *options = [[MTLCompileOptions alloc] init];
    options.languageVersion = MTLLanguageVersion2_3;
    NSError *error = nil;
    id<MTLLibrary> library = [device_ newLibraryWithSource:toNs(source)
                                                   options:options
                                                     error:&error];
    if (!library)
      return nsError(error, "compiling the MSL of " + what);
    // Always through constantValues (empty when none are given): a function
    // that declares function constants (glslc's specialization constants,
    // present in every variant of the kernels that include common.glsl)
    // is specialized there; the undefined ones take their defaults
    // (SPIRV-Cross's is_function_constant_defined).
    if (!constants)
      constants = [[MTLFunctionConstantValues alloc] init];
    id<MTLFunction> function = [library newFunctionWithName:toNs(entry)
                                             constantValues:constants
                                                      error:&error];
    if (!function)
      return nsError(error, "kernel function '" + entry + "' of " + what);
    id<MTLComputePipelineState> state =
        [device_ newComputePipelineStateWithFunction:function error:&error];
    if (!state)
      return nsError(error, "creating the pipeline of kernel '" + entry + "' of " + what);
    return CompiledKernel{state};
  }
}

MetalProbe probeMetal() {
  MetalProbe probe;
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (!device) {
      probe.description = "no Metal device (MTLCreateSystemDefaultDevice returned nil)";
      return probe;
    }
    probe.found = true;
    probe.description = fromNs([device name]);
  }
  return probe;
}

Expected<std::unique_ptr<Device>> openMetalDevice() {
  auto device = MetalDevice::open();
  if (!device)
    return device.status();
  return std::unique_ptr<Device>(std::move(*device));
}

} // namespace fm::hal::mtl
