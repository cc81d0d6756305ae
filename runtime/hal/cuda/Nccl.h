// NCCL, loaded at run time with dlopen (libnccl.so.2, or the file
// FM_NCCL_LIBRARY names), so that the runtime builds without it and runs
// without it: where every rank has it, the CUDA device sums a track block's
// rows across the ranks with ncclAllReduce on its stream (device memory to
// device memory, inside the decode step's CUDA graph); elsewhere the rows
// are staged through the host and the MPI communicator. The few types and
// entry points used are declared here (ABI of nccl.h 2.x; no NCCL header is
// needed to build).
#pragma once

#include "fm/communicator.h"
#include "fm/status.h"
#include "hal/cuda/CudaDriver.h"

#include <cstddef>
#include <memory>
#include <string>

namespace fm::hal::cuda {

using ncclResult_t = int;
using ncclComm_t = struct ncclComm *;
/// nccl.h's NCCL_UNIQUE_ID_BYTES: rank 0 makes it, every rank joins with it.
struct ncclUniqueId {
  char internal[128];
};
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes in nccl.h");
constexpr ncclResult_t ncclSuccess = 0;
constexpr int ncclFloat32 = 7; // ncclDataType_t
constexpr int ncclSum = 0;     // ncclRedOp_t

/// NCCL's entry points.
struct NcclApi {
  ncclResult_t (*ncclGetVersion)(int *);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t *, int nranks, ncclUniqueId id, int rank);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclAllReduce)(const void *send, void *recv, size_t count, int datatype,
                                int op, ncclComm_t, CUstream);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  const char *(*ncclGetErrorString)(ncclResult_t);
};

/// The process's NCCL: loaded once, on first use, never unloaded. Off
/// (an error saying so) where FM_NCCL=0; the library is FM_NCCL_LIBRARY
/// when set, else libnccl.so.2 on the loader's path. An error says why
/// there is none ("no NCCL here (libnccl.so.2: cannot open shared object
/// file ...)").
Expected<const NcclApi *> nccl();

/// Makes nccl() return `api` from now on (null: the process's library
/// again): the tests' fake and emulated NCCL. `api` must outlive every
/// communicator made with it.
void setNcclForTests(const NcclApi *api);

/// `what` failed: ok for ncclSuccess, else "nccl: WHAT: <error string>".
Status ncclCheck(const NcclApi &api, ncclResult_t r, const char *what);

/// An NCCL communicator over the ranks of an fm::Communicator, on one GPU
/// per rank (the device's context must be current when it is made).
class NcclComm {
public:
  /// Makes one over every rank of `ranks`, all of which loaded NCCL (the
  /// ranks agreed on it first: hal::agreeCollectives): rank 0's unique id
  /// reaches the others (one broadcast), then ncclCommInitRank. Every rank
  /// calls it at the same point. An error where NCCL fails.
  static Expected<std::unique_ptr<NcclComm>> create(Communicator &ranks);
  ~NcclComm();
  NcclComm(const NcclComm &) = delete;
  NcclComm &operator=(const NcclComm &) = delete;

  const NcclApi &api() const { return api_; }
  ncclComm_t handle() const { return comm_; }
  /// "NCCL 2.21.5" (ncclGetVersion).
  const std::string &version() const { return version_; }

private:
  NcclComm(const NcclApi &api, ncclComm_t comm, std::string version)
      : api_(api), comm_(comm), version_(std::move(version)) {}
  const NcclApi &api_;
  ncclComm_t comm_;
  std::string version_;
};

} // namespace fm::hal::cuda
