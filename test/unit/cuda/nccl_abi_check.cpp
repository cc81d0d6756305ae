// Nccl.h declares NCCL's few types and entry points itself (the runtime
// loads libnccl.so.2 with dlopen and builds without nccl.h). Where the CUDA
// toolkit ships nccl.h, this file holds those declarations to it at compile
// time (built into fm_cuda_test only then: runtime/hal/cuda/cuda.cmake).
#include <nccl.h>

#include "hal/cuda/Nccl.h"

#include <type_traits>

namespace ours = fm::hal::cuda;

static_assert(sizeof(ours::ncclUniqueId) == sizeof(::ncclUniqueId) &&
                  alignof(ours::ncclUniqueId) == alignof(::ncclUniqueId),
              "ncclUniqueId: passed by value to ncclCommInitRank, so its size is ABI");
static_assert(ours::ncclSuccess == int(::ncclSuccess), "ncclSuccess");
static_assert(ours::ncclFloat32 == int(::ncclFloat32), "ncclFloat32");
static_assert(ours::ncclSum == int(::ncclSum), "ncclSum");
// The enums travel as int.
static_assert(sizeof(::ncclResult_t) == sizeof(ours::ncclResult_t), "ncclResult_t");
static_assert(sizeof(::ncclDataType_t) == sizeof(int), "ncclDataType_t");
static_assert(sizeof(::ncclRedOp_t) == sizeof(int), "ncclRedOp_t");
static_assert(std::is_pointer<::ncclComm_t>::value && std::is_pointer<::cudaStream_t>::value,
              "ncclComm_t and cudaStream_t are handles (pointers), as ours");
