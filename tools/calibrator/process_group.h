#pragma once

// The processes of one calibration run. clustersim-calibrate is one process driving every local
// GPU (process_group_single.cc); clustersim-calibrate-mpi is one process per GPU under mpirun,
// across nodes (process_group_mpi.cc). Each program links exactly one of the two files, so no
// code path is switched by #ifdef.

#include <cstddef>
#include <memory>
#include <string>

namespace clustersim::calibrate {

enum class Reduction { kMin, kMax, kAverage };

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;        // this process, 0-based
  virtual int size() const = 0;        // number of processes
  virtual int local_rank() const = 0;  // index among the processes of this host (picks the GPU)
  virtual int node_count() const = 0;  // hosts taking part
  // Copies `bytes` at `data` from process 0 to every process.
  virtual void broadcast(void* data, size_t bytes) = 0;
  // `value` reduced over all processes, returned on every process.
  virtual double reduce(double value, Reduction reduction) = 0;
  virtual void barrier() = 0;
  // Ends every process after a fatal error on this one (MPI_Abort), so none waits forever.
  virtual void abort(int exit_code) = 0;
  // "single process" or "MPI, 16 processes on 2 nodes".
  virtual std::string description() const = 0;
};

// Starts the process group of this program (MPI_Init for the MPI program; it may consume MPI's
// own arguments from argc/argv).
std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv);

}  // namespace clustersim::calibrate
