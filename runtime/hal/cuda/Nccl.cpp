// Loads NCCL with dlopen and makes communicators over an fm::Communicator
// (Nccl.h).
#include "hal/cuda/Nccl.h"

#include "hal/cuda/DlLibrary.h"

#include <cstdlib>
#include <cstring>

namespace fm::hal::cuda {
namespace {

using Loaded = LoadedLibrary<NcclApi>;

Loaded load() {
  Loaded l;
  const char *off = std::getenv("FM_NCCL");
  if (off && std::strcmp(off, "0") == 0) {
    l.status = Status::error("NCCL off (FM_NCCL=0)");
    return l;
  }
  const char *named = std::getenv("FM_NCCL_LIBRARY");
  const std::string path = named && *named ? named : "libnccl.so.2";
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    l.status = Status::error("no NCCL here (" + (why ? std::string(why) : path + " not found") +
                             ")");
    return l;
  }
  NcclApi &a = l.api;
  std::string missing;
  bindSymbol(lib, "ncclGetVersion", a.ncclGetVersion, missing);
  bindSymbol(lib, "ncclGetUniqueId", a.ncclGetUniqueId, missing);
  bindSymbol(lib, "ncclCommInitRank", a.ncclCommInitRank, missing);
  bindSymbol(lib, "ncclCommDestroy", a.ncclCommDestroy, missing);
  bindSymbol(lib, "ncclAllReduce", a.ncclAllReduce, missing);
  bindSymbol(lib, "ncclGroupStart", a.ncclGroupStart, missing);
  bindSymbol(lib, "ncclGroupEnd", a.ncclGroupEnd, missing);
  bindSymbol(lib, "ncclGetErrorString", a.ncclGetErrorString, missing);
  if (!missing.empty())
    l.status = Status::error(path + " lacks " + missing + " (not NCCL 2?)");
  return l;
}

std::atomic<const NcclApi *> gTestNccl{nullptr};

std::string versionText(const NcclApi &api) {
  int code = 0;
  if (api.ncclGetVersion(&code) != ncclSuccess || code <= 0)
    return "NCCL (version unknown)";
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9,
  // major * 1000 + minor * 100 + patch before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

} // namespace

void setNcclForTests(const NcclApi *api) { gTestNccl.store(api); }

Expected<const NcclApi *> nccl() { return loadOnce(gTestNccl, &load); }

Status ncclCheck(const NcclApi &api, ncclResult_t r, const char *what) {
  if (r == ncclSuccess)
    return Status::ok();
  const char *text = api.ncclGetErrorString ? api.ncclGetErrorString(r) : nullptr;
  return Status::error(std::string("nccl: ") + what + ": " +
                       (text ? std::string(text) : "error " + std::to_string(r)));
}

Expected<std::unique_ptr<NcclComm>> NcclComm::create(Communicator &ranks) {
  const int rank = ranks.rank(), size = ranks.size();
  auto api = nccl();
  if (!api)
    return Status::error("rank " + std::to_string(rank) + ": " + api.message());
  const NcclApi &a = **api;
  ncclUniqueId id{};
  Status made = Status::ok();
  if (rank == 0)
    made = ncclCheck(a, a.ncclGetUniqueId(&id), "ncclGetUniqueId");
  // Rank 0's id (or its failure, as an all-zero id every rank refuses)
  // reaches every rank, so that none waits in a broadcast alone.
  int32_t words[sizeof(id) / 4];
  std::memcpy(words, &id, sizeof(id));
  FM_RETURN_IF_ERROR(ranks.broadcast(words, sizeof(id) / 4, 0));
  std::memcpy(&id, words, sizeof(id));
  FM_RETURN_IF_ERROR(made);
  bool any = false;
  for (char c : id.internal)
    any |= c != 0;
  if (!any)
    return Status::error("rank " + std::to_string(rank) +
                         ": nccl: rank 0 could not make a unique id (ncclGetUniqueId failed "
                         "there)");
  ncclComm_t comm = nullptr;
  FM_RETURN_IF_ERROR(ncclCheck(a, a.ncclCommInitRank(&comm, size, id, rank),
                               ("ncclCommInitRank (rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + ")")
                                   .c_str()));
  return std::unique_ptr<NcclComm>(new NcclComm(a, comm, versionText(a)));
}

NcclComm::~NcclComm() {
  if (comm_)
    api_.ncclCommDestroy(comm_);
}

} // namespace fm::hal::cuda
