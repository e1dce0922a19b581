#pragma once

// Runs the measurements of one clustersim-calibrate invocation and writes the raw-sample files.

#include <string>
#include <vector>

#include "tools/calibrator/options.h"
#include "tools/calibrator/process_group.h"

namespace clustersim::calibrate {

// Runs `options.mode` and returns the exit code: 0, or 1 when a correctness check failed (the
// files are still written, with the failed check in their metadata). gemm, memory and launch run
// on process 0 only; nccl runs on every process. `command_line` is recorded in every file.
// Throws InputError for bad options (an unreadable shapes file, an unknown device), DeviceError
// for failures of the machine.
int run_calibration(const CalibrateOptions& options, ProcessGroup& group, const std::string& command_line);

}  // namespace clustersim::calibrate
