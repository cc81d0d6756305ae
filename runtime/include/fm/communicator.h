// The ranks that run one partitioned model together: the two collectives
// the runtime needs (an in-place float sum, a token broadcast) behind an
// interface, so the runtime builds and runs single-process without MPI.
#pragma once

#include "fm/status.h"

#include <cstdint>
#include <memory>

namespace fm {

/// A fixed group of ranks 0 .. size() - 1. Every rank makes the same
/// collective calls in the same order (each call blocks until all ranks
/// made it). Used from one thread per rank.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Sums `count` floats element-wise over all ranks, in place: afterwards
  /// every rank holds the same sums.
  virtual Status allReduceSum(float *data, int64_t count) = 0;
  /// Copies `count` ints from rank `root` to every other rank.
  virtual Status broadcast(int32_t *data, int64_t count, int root) = 0;
  /// Ends the whole group (after an error on one rank, so that the others
  /// do not wait in a collective forever). Single process: does nothing.
  virtual void abort(int code) { (void)code; }
};

/// One process on its own: rank 0 of 1, whose collectives do nothing.
class SingleProcess final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allReduceSum(float *, int64_t) override { return Status::ok(); }
  Status broadcast(int32_t *, int64_t, int) override { return Status::ok(); }
};

/// The world size that an MPI launcher (mpirun, mpiexec) gave this process,
/// read from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// MV2_COMM_WORLD_SIZE); 0 when no launcher started it.
int mpiLaunchSize();

/// Whether this runtime was built with MPI (initMpi can succeed).
bool mpiAvailable();

/// Initializes MPI (MPI_Init_thread, funneled: only the thread that calls
/// the session uses MPI) and returns a communicator over MPI_COMM_WORLD
/// that finalizes MPI when destroyed. At most once per process; call it
/// only when mpiLaunchSize() > 0. Without MPI support: an error.
Expected<std::unique_ptr<Communicator>> initMpi(int *argc, char ***argv);

} // namespace fm
