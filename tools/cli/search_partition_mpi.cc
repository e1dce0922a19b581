// make_search_partition() for builds with MPI (OpenMPI). MPI is initialised only when an MPI
// launcher started the process (mpirun sets OMPI_COMM_WORLD_SIZE; PMIx launchers set PMIX_RANK), so
// a plain `clustersim search` stays a single process with no MPI start-up cost.

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <fmt/format.h>

#include "core/error.h"
#include "tools/cli/search_command.h"

namespace clustersim {

namespace {

// The MPI world as a SearchPartition: MPI_Init on construction, MPI_Finalize on destruction.
class MpiPartition final : public SearchPartition {
 public:
  MpiPartition() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiPartition() override { MPI_Finalize(); }
  MpiPartition(const MpiPartition&) = delete;
  MpiPartition& operator=(const MpiPartition&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Sizes first (MPI_Allgather), then the bytes (MPI_Allgatherv), in rank order.
  std::vector<std::string> all_gather(const std::string& mine) override {
    if (mine.size() > static_cast<size_t>(INT_MAX)) {
      throw InputError(fmt::format("search results of one process ({} bytes) exceed what one MPI message carries; "
                                   "use more processes",
                                   mine.size()));
    }
    const int count = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<size_t>(size_));
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> displacements(static_cast<size_t>(size_));
    long long total = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (total > INT_MAX) throw InputError("gathered search results exceed what one MPI message carries");
      displacements[r] = static_cast<int>(total);
      total += counts[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displacements.data(), MPI_CHAR,
                   MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (size_t r = 0; r < counts.size(); ++r) {
      out.push_back(all.substr(static_cast<size_t>(displacements[r]), static_cast<size_t>(counts[r])));
    }
    return out;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace

std::unique_ptr<SearchPartition> make_search_partition() {
  if (launched_by_mpi()) return std::make_unique<MpiPartition>();
  return std::make_unique<SingleProcess>();
}

}  // namespace clustersim
