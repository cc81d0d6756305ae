// fm::Communicator over MPI_COMM_WORLD (built only when CMake finds MPI,
// with FM_HAVE_MPI).
#pragma once

#include "fm/communicator.h"

namespace fm::rt {

/// The MPI world: rank and size of MPI_COMM_WORLD; collectives are
/// MPI_Allreduce (MPI_IN_PLACE, MPI_SUM) and MPI_Bcast. Constructing it
/// initializes MPI, destroying it finalizes MPI.
class MpiCommunicator final : public Communicator {
public:
  /// MPI_Init_thread(MPI_THREAD_FUNNELED); an error when MPI cannot start.
  static Expected<std::unique_ptr<Communicator>> create(int *argc, char ***argv);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allReduceSum(float *data, int64_t count) override;
  Status broadcast(int32_t *data, int64_t count, int root) override;
  void abort(int code) override;

private:
  MpiCommunicator() = default;
  int rank_ = 0, size_ = 1;
};

} // namespace fm::rt
