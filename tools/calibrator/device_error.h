#pragma once

// Failures of the CUDA runtime, cuBLASLt or NCCL, and the checks that raise them.
//
// Every call into those libraries goes through check_cuda / check_cublas / check_nccl, and every
// kernel launch is followed by check_last_launch (METHOD.md, "Correct first": exit code 0 proves
// nothing unless each call was checked).

#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace clustersim::calibrate {

// A call into the CUDA runtime, cuBLASLt or NCCL failed: the machine, driver or library refused.
// Neither bad user input nor a clustersim bug; main() reports it and exits with code 1.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message) : std::runtime_error(message) {}
};

// Throw DeviceError "what: <library message> (code N)" unless the status is success.
void check_cuda(cudaError_t status, const char* what);
void check_cublas(cublasStatus_t status, const char* what);
void check_nccl(ncclResult_t status, const char* what);

// Checks cudaGetLastError() after a kernel launch (launch configuration errors).
void check_last_launch(const char* kernel);

}  // namespace clustersim::calibrate
