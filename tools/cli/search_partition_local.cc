// make_search_partition() for builds without MPI: always one process. Started by an MPI launcher
// with more than one process, it refuses rather than let every process search the whole space
// and print the same report.

#include <cstdlib>
#include <fmt/format.h>

#include "core/error.h"
#include "tools/cli/search_command.h"

namespace clustersim {

std::unique_ptr<SearchPartition> make_search_partition() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size != nullptr && std::atoi(size) > 1) {
    throw InputError(fmt::format("started by mpirun with {} processes, but this clustersim was built without MPI "
                                 "(install OpenMPI with scripts/install-deps and reconfigure); run it as one process",
                                 size));
  }
  return std::make_unique<SingleProcess>();
}

}  // namespace clustersim
