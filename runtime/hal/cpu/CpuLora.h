// The CPU device's matmul with LoRA side paths (MatmulDesc::lora), fused:
// y = act(x·Wᵀ + bias + Σ scale · B·(A·x)) in one thread-pool dispatch.
#pragma once

#include "hal/Device.h"
#include "hal/cpu/GemmWeights.h"

#include <memory>

namespace fm::hal {

/// The matmul of desc (whose lora must not be empty) as one kernel: the
/// threads split the rank rows of every A (A·x once per input, for all the
/// stacked projections that share it) and prepare their rows of x, meet at
/// one barrier inside the same dispatch, then each computes its columns of
/// the base product and adds the B·t up-product to those same columns. Every
/// weight format, decode and prefill; `gemm` holds the Panel16 copies that
/// launches of several rows multiply packed weights by.
Expected<std::unique_ptr<Kernel>> makeLoraMatmul(const MatmulDesc &desc,
                                       GemmWeights &gemm);

} // namespace fm::hal
