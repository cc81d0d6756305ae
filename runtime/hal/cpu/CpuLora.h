// The CPU device's matmul with LoRA side paths (MatmulDesc::lora): the
// base kernel, unchanged, then y += Σ scale · B·(A·x) on runtime/kernels/
// lora.h, A·x once per input for every term whose A's lie back to back.
#pragma once

#include "hal/Device.h"

#include <memory>

namespace fm::hal {

/// Wraps `base` (the device's kernel for desc without its lora terms) with
/// the side path of desc.lora, which must not be empty.
std::unique_ptr<Kernel> makeLoraMatmul(const MatmulDesc &desc,
                                       std::unique_ptr<Kernel> base);

} // namespace fm::hal
