// Launcher detection, and initMpi for a runtime built without MPI
// (Mpi.cpp defines it otherwise).
#include "fm/communicator.h"

#include <cstdlib>

namespace fm {

int mpiLaunchSize() {
  // Open MPI, MPICH / Intel MPI (Hydra's PMI), MVAPICH.
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (const char *value = std::getenv(name)) {
      int size = std::atoi(value);
      if (size > 0)
        return size;
    }
  return 0;
}

#if !FM_HAVE_MPI
bool mpiAvailable() { return false; }

Expected<std::unique_ptr<Communicator>> initMpi(int *, char ***) {
  return Status::error("this runtime was built without MPI (install an MPI "
                       "implementation, e.g. libopenmpi-dev, and rebuild)");
}
#endif

} // namespace fm
