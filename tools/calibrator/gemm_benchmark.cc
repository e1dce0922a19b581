#include "tools/calibrator/gemm_benchmark.h"

#include <algorithm>
#include <cmath>

#include <cublasLt.h>

#include "core/error.h"
#include "tools/calibrator/cuda_resources.h"
#include "tools/calibrator/kernels.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

namespace {

// 64 MiB: above the 32 MiB that NVIDIA recommends for Hopper in the cuBLAS documentation
// ("cublasSetWorkspace": 32 MiB for Hopper) and what Transformer Engine gives cuBLASLt on Hopper.
constexpr size_t kWorkspaceBytes = size_t{64} << 20;
// Device memory kept free beside the operands.
constexpr size_t kGemmHeadroomBytes = size_t{1} << 30;
constexpr int64_t kMaxInputSets = 8;

struct LtTypes {
  cudaDataType_t ab;  // A and B
  cudaDataType_t cd;  // C and D
  cublasComputeType_t compute;
  int64_t ab_bytes;
  int64_t cd_bytes;
};

LtTypes lt_types(DataType type) {
  switch (type) {
    case DataType::kBf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
    case DataType::kFp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
    case DataType::kFp8: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
    case DataType::kTf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case DataType::kFp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4};
  }
  throw InternalError("lt_types: data type outside the table");
}

// Replaces characters that the raw format forbids in a cell.
std::string clean_cell(std::string text) {
  for (char& c : text) {
    if (c == ',' || c == '"' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// The descriptors, layouts and heuristic algorithm of one GEMM shape (TN layout, see the header).
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, const GemmShape& shape, const float* scale_one) : handle_(handle) {
    const LtTypes types = lt_types(shape.dtype);
    check_cublas(cublasLtMatmulDescCreate(&op_, types.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transa = CUBLAS_OP_T;
    const cublasOperation_t transb = CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
                 "set TRANSA");
    check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
                 "set TRANSB");
    if (shape.dtype == DataType::kFp8) {
      // fp8 inputs are dequantised by per-tensor scales (cuBLASLt FP8 documentation); 1.0 here.
      check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_one,
                                                  sizeof scale_one),
                   "set A_SCALE_POINTER");
      check_cublas(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_one,
                                                  sizeof scale_one),
                   "set B_SCALE_POINTER");
    }
    const auto m = static_cast<uint64_t>(shape.m);
    const auto n = static_cast<uint64_t>(shape.n);
    const auto k = static_cast<uint64_t>(shape.k);
    check_cublas(cublasLtMatrixLayoutCreate(&a_, types.ab, k, m, static_cast<int64_t>(k)), "layout A");
    check_cublas(cublasLtMatrixLayoutCreate(&b_, types.ab, k, n, static_cast<int64_t>(k)), "layout B");
    check_cublas(cublasLtMatrixLayoutCreate(&d_, types.cd, m, n, static_cast<int64_t>(m)), "layout D");
    check_cublas(cublasLtMatmulPreferenceCreate(&preference_), "cublasLtMatmulPreferenceCreate");
    const uint64_t workspace = kWorkspaceBytes;
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace, sizeof workspace),
                 "set MAX_WORKSPACE_BYTES");
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, preference_, 1,
                                                                 &heuristic_, &returned);
    if (status != CUBLAS_STATUS_SUCCESS) {
      reason_ = std::string("cublasLtMatmulAlgoGetHeuristic: ") + cublasLtGetStatusName(status);
    } else if (returned == 0) {
      reason_ = "cublasLtMatmulAlgoGetHeuristic returned no algorithm";
    }
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm() {
    if (preference_ != nullptr) cublasLtMatmulPreferenceDestroy(preference_);
    if (d_ != nullptr) cublasLtMatrixLayoutDestroy(d_);
    if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
    if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
    if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  }

  bool supported() const { return reason_.empty(); }
  const std::string& reason() const { return reason_; }
  const cublasLtMatmulHeuristicResult_t& heuristic() const { return heuristic_; }

  // D = op(A)·B on `stream`.
  void run(const void* a, const void* b, void* d, void* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    check_cublas(cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &heuristic_.algo,
                                workspace, kWorkspaceBytes, stream),
                 "cublasLtMatmul");
  }

  void fill_algorithm_info(GemmMeasurement& m) const {
    size_t written = 0;
    check_cublas(cublasLtMatmulAlgoConfigGetAttribute(&heuristic_.algo, CUBLASLT_ALGO_CONFIG_ID, &m.algo_id,
                                                      sizeof m.algo_id, &written),
                 "get ALGO_CONFIG_ID");
    check_cublas(cublasLtMatmulAlgoConfigGetAttribute(&heuristic_.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &m.tile_id,
                                                      sizeof m.tile_id, &written),
                 "get ALGO_CONFIG_TILE_ID");
    check_cublas(cublasLtMatmulAlgoConfigGetAttribute(&heuristic_.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                      &m.split_k, sizeof m.split_k, &written),
                 "get ALGO_CONFIG_SPLITK_NUM");
    m.workspace_bytes = static_cast<int64_t>(heuristic_.workspaceSize);
    m.waves = static_cast<double>(heuristic_.wavesCount);
  }

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr;
  cublasLtMatrixLayout_t b_ = nullptr;
  cublasLtMatrixLayout_t d_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  std::string reason_;
};

std::string shape_text(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

}  // namespace

struct GemmBenchmark::State {
  int device = 0;
  TimingPolicy policy;
  cublasLtHandle_t handle = nullptr;
  Stream stream;
  DeviceBuffer workspace{kWorkspaceBytes};
  DeviceBuffer scale_one{sizeof(float)};
  int64_t l2_bytes = 0;
  uint64_t next_seed = 1;

  ~State() {
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

double gemm_check_tolerance(DataType type) {
  switch (type) {
    case DataType::kFp32: return 1e-5;
    case DataType::kTf32: return 5e-3;
    case DataType::kBf16:
    case DataType::kFp16: return 1e-2;
    case DataType::kFp8: return 2e-2;
  }
  throw InternalError("gemm_check_tolerance: data type outside the table");
}

namespace {
// Sets the device before State's members allocate on it.
int select_device(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  return device;
}
}  // namespace

GemmBenchmark::GemmBenchmark(int device, TimingPolicy policy) {
  select_device(device);
  state_ = std::make_unique<State>();
  state_->device = device;
  state_->policy = policy;
  check_cublas(cublasLtCreate(&state_->handle), "cublasLtCreate");
  int l2 = 0;
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  state_->l2_bytes = l2;
  fill_constant(state_->scale_one.as<float>(), 1, 1.0f, state_->stream.get());
  state_->stream.synchronize();
}

GemmBenchmark::~GemmBenchmark() = default;

std::vector<GemmCheck> GemmBenchmark::check(DataType type) {
  State& st = *state_;
  check_cuda(cudaSetDevice(st.device), "cudaSetDevice");
  std::vector<GemmShape> shapes;
  if (type == DataType::kFp8) {
    shapes.push_back(GemmShape{96, 80, 64, type, "check", ""});
  } else {
    shapes.push_back(GemmShape{128, 96, 64, type, "check", ""});
    shapes.push_back(GemmShape{67, 45, 129, type, "check", ""});
  }
  std::vector<GemmCheck> checks;
  for (const GemmShape& shape : shapes) {
    GemmCheck check;
    check.shape = shape;
    check.tolerance = gemm_check_tolerance(type);
    LtGemm gemm(st.handle, shape, st.scale_one.as<float>());
    if (!gemm.supported()) {
      check.message = gemm.reason();
      checks.push_back(check);
      continue;
    }
    const LtTypes types = lt_types(type);
    const int64_t a_count = shape.k * shape.m;
    const int64_t b_count = shape.k * shape.n;
    const int64_t d_count = shape.m * shape.n;
    DeviceBuffer a(static_cast<size_t>(a_count * types.ab_bytes));
    DeviceBuffer b(static_cast<size_t>(b_count * types.ab_bytes));
    DeviceBuffer d(static_cast<size_t>(d_count * types.cd_bytes));
    DeviceBuffer a32(static_cast<size_t>(a_count) * sizeof(float));
    DeviceBuffer b32(static_cast<size_t>(b_count) * sizeof(float));
    DeviceBuffer d32(static_cast<size_t>(d_count) * sizeof(float));
    const cudaStream_t stream = st.stream.get();
    fill_uniform(a.data(), a_count, type, st.next_seed++, stream);
    fill_uniform(b.data(), b_count, type, st.next_seed++, stream);
    // Poison D: all-ones bytes are NaN in fp32, bf16 and fp16, so an unwritten element fails.
    check_cuda(cudaMemsetAsync(d.data(), 0xFF, d.bytes(), stream), "cudaMemsetAsync");
    gemm.run(a.data(), b.data(), d.data(), st.workspace.data(), stream);
    const DataType d_type = type == DataType::kFp8 ? DataType::kBf16 : type;
    convert_to_float(a.data(), a_count, type, a32.as<float>(), stream);
    convert_to_float(b.data(), b_count, type, b32.as<float>(), stream);
    convert_to_float(d.data(), d_count, d_type, d32.as<float>(), stream);
    std::vector<float> ha(static_cast<size_t>(a_count));
    std::vector<float> hb(static_cast<size_t>(b_count));
    std::vector<float> hd(static_cast<size_t>(d_count));
    check_cuda(cudaMemcpyAsync(ha.data(), a32.data(), a32.bytes(), cudaMemcpyDeviceToHost, stream), "copy A");
    check_cuda(cudaMemcpyAsync(hb.data(), b32.data(), b32.bytes(), cudaMemcpyDeviceToHost, stream), "copy B");
    check_cuda(cudaMemcpyAsync(hd.data(), d32.data(), d32.bytes(), cudaMemcpyDeviceToHost, stream), "copy D");
    st.stream.synchronize();
    // ref[i + j·M] = Σ_k A[k + i·K] · B[k + j·K]   (A stored K×M and transposed, B stored K×N)
    double diff2 = 0;
    double ref2 = 0;
    for (int64_t j = 0; j < shape.n; ++j) {
      for (int64_t i = 0; i < shape.m; ++i) {
        double ref = 0;
        for (int64_t p = 0; p < shape.k; ++p) {
          ref += static_cast<double>(ha[static_cast<size_t>(p + i * shape.k)]) *
                 static_cast<double>(hb[static_cast<size_t>(p + j * shape.k)]);
        }
        const double got = hd[static_cast<size_t>(i + j * shape.m)];
        if (!std::isfinite(got)) {
          ++check.non_finite;
          continue;
        }
        diff2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
      }
    }
    check.relative_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : 0.0;
    check.passed = check.non_finite == 0 && ref2 > 0 && check.relative_error <= check.tolerance;
    if (!check.passed) {
      check.message = check.non_finite > 0 ? std::to_string(check.non_finite) + " elements not finite"
                                           : "relative error above tolerance";
    }
    checks.push_back(check);
  }
  return checks;
}

GemmMeasurement GemmBenchmark::measure(const GemmShape& shape) {
  State& st = *state_;
  check_cuda(cudaSetDevice(st.device), "cudaSetDevice");
  const cudaStream_t stream = st.stream.get();
  GemmMeasurement result;
  result.shape = shape;
  LtGemm gemm(st.handle, shape, st.scale_one.as<float>());
  if (!gemm.supported()) {
    result.status = "unsupported";
    result.message = gemm.reason();
    return result;
  }
  gemm.fill_algorithm_info(result);

  const LtTypes types = lt_types(shape.dtype);
  const auto a_bytes = static_cast<size_t>(shape.k * shape.m * types.ab_bytes);
  const auto b_bytes = static_cast<size_t>(shape.k * shape.n * types.ab_bytes);
  const auto d_bytes = static_cast<size_t>(shape.m * shape.n * types.cd_bytes);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const size_t per_set = a_bytes + b_bytes;
  if (per_set + d_bytes + kGemmHeadroomBytes > free_bytes) {
    result.status = "out_of_memory";
    result.message = "operands need " + std::to_string(per_set + d_bytes) + " B; " +
                     std::to_string(free_bytes) + " B free";
    return result;
  }
  // Enough sets that the inputs of consecutive calls together exceed 3× L2.
  const auto wanted = static_cast<int64_t>((3 * static_cast<size_t>(st.l2_bytes) + per_set - 1) / per_set);
  const auto fit = static_cast<int64_t>((free_bytes - kGemmHeadroomBytes - d_bytes) / per_set);
  result.input_sets = std::clamp<int64_t>(std::min(wanted, fit), 1, kMaxInputSets);

  std::vector<DeviceBuffer> as;
  std::vector<DeviceBuffer> bs;
  for (int64_t s = 0; s < result.input_sets; ++s) {
    as.emplace_back(a_bytes);
    bs.emplace_back(b_bytes);
    fill_uniform(as.back().data(), shape.k * shape.m, shape.dtype, st.next_seed++, stream);
    fill_uniform(bs.back().data(), shape.k * shape.n, shape.dtype, st.next_seed++, stream);
  }
  DeviceBuffer d(d_bytes);
  const int64_t sets = result.input_sets;
  auto call = [&](int64_t i) {
    const auto s = static_cast<size_t>(i % sets);
    gemm.run(as[s].data(), bs[s].data(), d.data(), st.workspace.data(), stream);
  };

  // A matmul that cuBLASLt refuses at run time is reported, not fatal.
  try {
    BatchTiming timing = measure_calls(stream, st.policy, call, /*use_graph=*/true);
    result.timing = timing.timing;
    result.calls_per_batch = timing.calls_per_batch;
    result.seconds = std::move(timing.seconds);
  } catch (const DeviceError& e) {
    cudaGetLastError();
    cudaStreamSynchronize(stream);
    result.status = "failed";
    result.message = e.what();
    return result;
  }
  result.status = "ok";
  return result;
}

std::vector<std::string> gemm_columns() {
  return {"set",       "label",     "dtype",   "m",          "n",           "k",
          "layout",    "status",    "algo_id", "tile_id",    "split_k",     "workspace_bytes",
          "waves",     "input_sets", "timing", "calls_per_batch", "samples", "median_us",
          "min_us",    "max_us",    "tflops",  "samples_us", "message"};
}

std::vector<std::string> gemm_row(const GemmMeasurement& m) {
  const bool timed = !m.seconds.empty();
  const bool chosen = m.algo_id >= 0;
  std::vector<double> us;
  for (double s : m.seconds) us.push_back(s * 1e6);
  SampleSummary summary;
  if (timed) summary = summarize(us);
  // TFLOP/s = 2·M·N·K / t: FLOP per microsecond is 1e6 FLOP/s, times 1e-12 for tera.
  const double tflops = timed ? m.shape.flops() / summary.median * 1e-6 : 0.0;
  return {m.shape.set,
          m.shape.label,
          std::string(gemm_data_type_name(m.shape.dtype)),
          std::to_string(m.shape.m),
          std::to_string(m.shape.n),
          std::to_string(m.shape.k),
          "TN",
          m.status,
          chosen ? std::to_string(m.algo_id) : "",
          chosen ? std::to_string(m.tile_id) : "",
          chosen ? std::to_string(m.split_k) : "",
          chosen ? std::to_string(m.workspace_bytes) : "",
          chosen ? format_number(m.waves) : "",
          timed ? std::to_string(m.input_sets) : "",
          m.timing,
          timed ? std::to_string(m.calls_per_batch) : "",
          timed ? std::to_string(summary.count) : "",
          timed ? format_number(summary.median) : "",
          timed ? format_number(summary.min) : "",
          timed ? format_number(summary.max) : "",
          timed ? format_number(tflops) : "",
          join_samples(us),
          clean_cell(m.message)};
}

Metadata gemm_check_metadata(const std::vector<GemmCheck>& checks) {
  Metadata lines;
  for (const GemmCheck& c : checks) {
    std::string value = "rel_err=" + format_number(c.relative_error, 3) +
                        " tol=" + format_number(c.tolerance, 3) + (c.passed ? " pass" : " FAIL");
    if (!c.message.empty()) value += " (" + clean_cell(c.message) + ")";
    lines.emplace_back("check_" + std::string(gemm_data_type_name(c.shape.dtype)) + "_" + shape_text(c.shape),
                       value);
  }
  return lines;
}

}  // namespace clustersim::calibrate
