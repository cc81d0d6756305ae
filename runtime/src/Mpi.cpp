// fm::Communicator over MPI_COMM_WORLD.
#include "Mpi.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>

namespace fm {
namespace rt {
namespace {

std::string mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = 0;
  return std::string(call) + " failed: " +
         (length > 0 ? std::string(text, length) : "error " + std::to_string(code));
}

} // namespace

Expected<std::unique_ptr<Communicator>>
MpiCommunicator::create(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return Status::error("MPI is already initialized (initMpi is called once "
                         "per process)");
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS)
    return Status::error(mpiError("MPI_Init_thread", rc));
  // Errors come back as codes, to be reported as Status, not as aborts.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiCommunicator> comm(new MpiCommunicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &comm->size_);
  return std::unique_ptr<Communicator>(std::move(comm));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

Status MpiCommunicator::allReduceSum(float *data, int64_t count) {
  // MPI counts are ints: large buffers go in pieces.
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    int rc = MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      return Status::error("rank " + std::to_string(rank_) + ": " +
                           mpiError("MPI_Allreduce", rc));
    done += n;
  }
  return Status::ok();
}

Status MpiCommunicator::broadcast(int32_t *data, int64_t count, int root) {
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    int rc = MPI_Bcast(data + done, n, MPI_INT32_T, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      return Status::error("rank " + std::to_string(rank_) + ": " +
                           mpiError("MPI_Bcast", rc));
    done += n;
  }
  return Status::ok();
}

void MpiCommunicator::abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

} // namespace rt

bool mpiAvailable() { return true; }

Expected<std::unique_ptr<Communicator>> initMpi(int *argc, char ***argv) {
  return rt::MpiCommunicator::create(argc, argv);
}

} // namespace fm
