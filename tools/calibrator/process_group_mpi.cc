#include <mpi.h>

#include <climits>

#include "tools/calibrator/device_error.h"
#include "tools/calibrator/process_group.h"

namespace clustersim::calibrate {

namespace {

void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS) throw DeviceError(std::string(what) + ": MPI error " + std::to_string(status));
}

// One process per GPU under mpirun; the local rank comes from a shared-memory split of
// MPI_COMM_WORLD (MPI-3 MPI_COMM_TYPE_SHARED), which works with any launcher.
class MpiProcesses final : public ProcessGroup {
 public:
  MpiProcesses(int* argc, char*** argv) {
    check_mpi(MPI_Init(argc, argv), "MPI_Init");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_),
              "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(local_, &local_rank_), "MPI_Comm_rank(local)");
    int leader = local_rank_ == 0 ? 1 : 0;
    check_mpi(MPI_Allreduce(&leader, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce(nodes)");
  }
  ~MpiProcesses() override {
    MPI_Comm_free(&local_);
    MPI_Finalize();
  }
  MpiProcesses(const MpiProcesses&) = delete;
  MpiProcesses& operator=(const MpiProcesses&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int node_count() const override { return nodes_; }
  void broadcast(void* data, size_t bytes) override {
    if (bytes > static_cast<size_t>(INT_MAX)) throw DeviceError("MPI broadcast above INT_MAX bytes");
    check_mpi(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  double reduce(double value, Reduction reduction) override {
    double result = 0;
    const MPI_Op op = reduction == Reduction::kMin ? MPI_MIN : reduction == Reduction::kMax ? MPI_MAX : MPI_SUM;
    check_mpi(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, op, MPI_COMM_WORLD), "MPI_Allreduce");
    return reduction == Reduction::kAverage ? result / size_ : result;
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  void abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }
  std::string description() const override {
    return "MPI, " + std::to_string(size_) + " processes on " + std::to_string(nodes_) + " nodes";
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int nodes_ = 1;
  MPI_Comm local_ = MPI_COMM_NULL;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv) {
  return std::make_unique<MpiProcesses>(argc, argv);
}

}  // namespace clustersim::calibrate
