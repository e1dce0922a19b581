#include "tools/calibrator/process_group.h"

namespace clustersim::calibrate {

namespace {

// One process: every reduction is the identity.
class SingleProcess final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int node_count() const override { return 1; }
  void broadcast(void*, size_t) override {}
  double reduce(double value, Reduction) override { return value; }
  void barrier() override {}
  void abort(int) override {}
  std::string description() const override { return "single process"; }
};

}  // namespace

std::unique_ptr<ProcessGroup> make_process_group(int*, char***) { return std::make_unique<SingleProcess>(); }

}  // namespace clustersim::calibrate
