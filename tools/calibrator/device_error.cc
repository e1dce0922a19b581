#include "tools/calibrator/device_error.h"

namespace clustersim::calibrate {

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw DeviceError(std::string(what) + ": " + cudaGetErrorString(status) + " (CUDA error " +
                    std::to_string(static_cast<int>(status)) + ")");
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(what) + ": " + cublasLtGetStatusName(status) + " - " +
                    cublasLtGetStatusString(status));
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status == ncclSuccess) return;
  throw DeviceError(std::string(what) + ": " + ncclGetErrorString(status) + " (NCCL result " +
                    std::to_string(static_cast<int>(status)) + ")");
}

void check_last_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
}

}  // namespace clustersim::calibrate
