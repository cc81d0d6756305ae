// Loads an artifact's "ptx" executable (fmc --target cuda): one PTX module,
// a CUfunction per Function, launched by its metadata. The kernel ABI
// (targets/cuda/NvvmKernels.h): argument i is the five parameters of a 1-D
// memref descriptor (pointer at its row 0, the same pointer, offset 0, its
// element count, stride 1: 64 bits each), then one 32-bit parameter per push
// constant (rows, pos); grid rows x 1 x 1, block Function.workgroup_size.
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "hal/Device.h"
#include "hal/cuda/CudaDriver.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace fm::hal::cuda {

/// One function's launch metadata, as read and checked from the artifact.
struct PtxFunction {
  std::string name;
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t buffers = 0; // bound arguments, in Dispatch order
  enum class Push : uint8_t { Rows, Pos };
  std::vector<Push> push; // the 32-bit parameters after the buffers
};

/// The 64-bit parameters of one buffer argument.
constexpr uint32_t kParamsPerBuffer = 5;

/// The functions of a "ptx" executable, each checked against the PTX: its
/// `.entry` exists with kParamsPerBuffer 64-bit parameters per binding
/// followed by one 32-bit parameter per push constant. Errors start with
/// "<artifactName>: cuda executable: " and name the function. No driver
/// is needed (the loader and the tests call it).
Expected<std::vector<PtxFunction>> readPtxFunctions(const artifact::Executable &exe,
                                                    const std::string &artifactName);

/// The parameter sizes (8 or 4 bytes) of `.entry name(...)` in `ptx`, or an
/// error when the PTX has no such entry.
Expected<std::vector<uint32_t>> ptxEntryParams(const std::string &ptx,
                                               const std::string &name);

class CudaDevice;

class CudaExecutable final : public Executable {
public:
  static Expected<std::unique_ptr<CudaExecutable>>
  load(const CudaDevice &device, const artifact::Executable &exe,
       const std::string &artifactName);
  ~CudaExecutable() override;

  size_t numFunctions() const override { return functions_.size(); }
  const PtxFunction &function(size_t i) const { return functions_[i]; }
  CUfunction handle(size_t i) const { return handles_[i]; }

private:
  explicit CudaExecutable(const CudaDevice &device) : device_(device) {}
  const CudaDevice &device_;
  CUmodule module_ = nullptr;
  std::vector<PtxFunction> functions_;
  std::vector<CUfunction> handles_;
};

/// A Dispatch of a generated function (CudaDevice::prepareDispatch).
Expected<std::unique_ptr<Kernel>> makeDispatchKernel(CudaDevice &device,
                                                     const DispatchDesc &desc);

} // namespace fm::hal::cuda
