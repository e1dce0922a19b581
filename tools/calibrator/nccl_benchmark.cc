#include "tools/calibrator/nccl_benchmark.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <nccl.h>

#include "core/error.h"
#include "tools/calibrator/cuda_resources.h"
#include "tools/calibrator/kernels.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

namespace {

constexpr int64_t kElementBytes = 4;  // ncclFloat
// Device memory kept free beside the two buffers of each rank.
constexpr size_t kNcclHeadroomBytes = size_t{2} << 30;
// nccl-tests' default -n 20 iterations; fewer when one operation is long.
constexpr int64_t kMaxIters = 20;
constexpr double kIterSeconds = 5e-3;

const char* kNcclEnv[] = {"NCCL_ALGO", "NCCL_PROTO"};

// The value an environment variable had when the program started, restored for "auto".
struct SavedEnvironment {
  std::optional<std::string> algo;
  std::optional<std::string> proto;
  SavedEnvironment() {
    if (const char* v = std::getenv(kNcclEnv[0])) algo = v;
    if (const char* v = std::getenv(kNcclEnv[1])) proto = v;
  }
  void restore() const {
    restore_one(kNcclEnv[0], algo);
    restore_one(kNcclEnv[1], proto);
  }
  static void restore_one(const char* name, const std::optional<std::string>& value) {
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
};

// This process's share of the ranks: one entry per local GPU it drives.
struct LocalRank {
  int device = 0;
  int rank = 0;  // global NCCL rank
  ncclComm_t comm = nullptr;
  std::optional<Stream> stream;
  DeviceBuffer send;
  DeviceBuffer recv;
};

class Communicators {
 public:
  Communicators(ProcessGroup& group, int device_count) : group_(group) {
    if (group.size() == 1) {
      nranks_ = device_count;
      for (int d = 0; d < device_count; ++d) ranks_.push_back(LocalRank{d, d, nullptr, std::nullopt, {}, {}});
    } else {
      nranks_ = group.size();
      ranks_.push_back(LocalRank{group.local_rank() % device_count, group.rank(), nullptr, std::nullopt, {}, {}});
    }
    for (LocalRank& r : ranks_) {
      check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
      r.stream.emplace();
    }
  }
  ~Communicators() { destroy(); }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;

  int nranks() const { return nranks_; }
  std::vector<LocalRank>& ranks() { return ranks_; }

  // Buffers of `bytes` for send and receive on every local rank.
  void allocate(size_t bytes) {
    for (LocalRank& r : ranks_) {
      check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
      r.send = DeviceBuffer(bytes);
      r.recv = DeviceBuffer(bytes);
      fill_uniform(r.send.data(), static_cast<int64_t>(bytes) / kElementBytes, DataType::kFp32,
                   static_cast<uint64_t>(100 + r.rank), r.stream->get());
    }
    synchronize();
  }

  // Fresh communicators, created under the current environment (NCCL_ALGO/NCCL_PROTO).
  void init() {
    destroy();
    if (group_.size() == 1) {
      std::vector<ncclComm_t> comms(ranks_.size());
      std::vector<int> devices;
      for (const LocalRank& r : ranks_) devices.push_back(r.device);
      check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()), "ncclCommInitAll");
      for (size_t i = 0; i < ranks_.size(); ++i) ranks_[i].comm = comms[i];
    } else {
      ncclUniqueId id{};
      if (group_.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      group_.broadcast(&id, sizeof id);
      LocalRank& r = ranks_.front();
      check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
      check_nccl(ncclCommInitRank(&r.comm, nranks_, id, r.rank), "ncclCommInitRank");
    }
  }

  void destroy() {
    for (LocalRank& r : ranks_) {
      if (r.comm != nullptr) {
        ncclCommDestroy(r.comm);
        r.comm = nullptr;
      }
    }
  }

  void synchronize() {
    for (LocalRank& r : ranks_) {
      check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
      r.stream->synchronize();
    }
  }

  // Enqueues one `collective` with `counts` on every local rank, as one NCCL group.
  void enqueue(Collective collective, const CollectiveCounts& counts) {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (LocalRank& r : ranks_) {
      const cudaStream_t s = r.stream->get();
      const auto count = static_cast<size_t>(counts.param_count);
      void* send = r.send.data();
      void* recv = r.recv.data();
      switch (collective) {
        case Collective::kAllReduce:
          check_nccl(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, r.comm, s), "ncclAllReduce");
          break;
        case Collective::kAllGather:
          check_nccl(ncclAllGather(send, recv, count, ncclFloat, r.comm, s), "ncclAllGather");
          break;
        case Collective::kReduceScatter:
          check_nccl(ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, r.comm, s), "ncclReduceScatter");
          break;
        case Collective::kBroadcast:
          check_nccl(ncclBroadcast(send, recv, count, ncclFloat, 0, r.comm, s), "ncclBroadcast");
          break;
        case Collective::kAllToAll:
          // As nccl-tests src/alltoall.cu: a grouped send and receive of `count` to every peer.
          for (int peer = 0; peer < nranks_; ++peer) {
            const size_t offset = static_cast<size_t>(peer) * count * kElementBytes;
            check_nccl(ncclSend(static_cast<char*>(send) + offset, count, ncclFloat, peer, r.comm, s), "ncclSend");
            check_nccl(ncclRecv(static_cast<char*>(recv) + offset, count, ncclFloat, peer, r.comm, s), "ncclRecv");
          }
          break;
        case Collective::kSendRecv:
          // As nccl-tests src/sendrecv.cu: send to the next rank, receive from the previous one.
          check_nccl(ncclSend(send, count, ncclFloat, (r.rank + 1) % nranks_, r.comm, s), "ncclSend");
          check_nccl(ncclRecv(recv, count, ncclFloat, (r.rank + nranks_ - 1) % nranks_, r.comm, s), "ncclRecv");
          break;
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

 private:
  ProcessGroup& group_;
  int nranks_ = 0;
  std::vector<LocalRank> ranks_;
};

// All-reduce of rank+1 over up to 1 Mi floats must give n(n+1)/2 everywhere; all-gather of rank+1 must
// put r+1 in the r-th chunk. Run on the "auto" communicators before any timing.
bool check_results(Communicators& comms, ProcessGroup& group, size_t buffer_bytes, std::string& message) {
  const int n = comms.nranks();
  // 1 Mi floats, or what the buffers hold, rounded down to whole chunks per rank.
  const int64_t count = std::min<int64_t>(int64_t{1} << 20, static_cast<int64_t>(buffer_bytes) / kElementBytes) / n * n;
  if (count == 0) return true;
  for (LocalRank& r : comms.ranks()) {
    check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
    fill_constant(r.send.as<float>(), count, static_cast<float>(r.rank + 1), r.stream->get());
  }
  const CollectiveCounts reduce = collective_counts(Collective::kAllReduce, count * kElementBytes, kElementBytes, n);
  comms.enqueue(Collective::kAllReduce, reduce);
  comms.synchronize();
  int64_t wrong = 0;
  std::vector<float> host(static_cast<size_t>(count));
  for (LocalRank& r : comms.ranks()) {
    check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
    check_cuda(cudaMemcpy(host.data(), r.recv.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    const float expected = static_cast<float>(n) * static_cast<float>(n + 1) / 2.0f;
    wrong += std::count_if(host.begin(), host.end(), [&](float v) { return v != expected; });
  }
  const CollectiveCounts gather = collective_counts(Collective::kAllGather, count * kElementBytes, kElementBytes, n);
  comms.enqueue(Collective::kAllGather, gather);
  comms.synchronize();
  for (LocalRank& r : comms.ranks()) {
    check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
    host.resize(static_cast<size_t>(gather.recv_count));
    check_cuda(cudaMemcpy(host.data(), r.recv.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    for (int64_t i = 0; i < gather.recv_count; ++i) {
      if (host[static_cast<size_t>(i)] != static_cast<float>(i / gather.send_count + 1)) ++wrong;
    }
  }
  const double total_wrong = group.reduce(static_cast<double>(wrong), Reduction::kMax);
  if (total_wrong > 0) {
    message = std::to_string(static_cast<int64_t>(total_wrong)) + " wrong elements in the all_reduce/all_gather check";
    return false;
  }
  return true;
}

// Times one point; nccl-tests' method (see the header).
NcclMeasurement measure_point(Communicators& comms, ProcessGroup& group, const CalibrateOptions& options,
                              Collective collective, const NcclSetting& setting, const CollectiveCounts& counts) {
  using Clock = std::chrono::steady_clock;
  NcclMeasurement m;
  m.collective = collective;
  m.setting = setting;
  m.nranks = comms.nranks();
  m.size_bytes = counts.total_bytes;
  m.count = counts.total_bytes / kElementBytes;
  auto run = [&](int64_t iters) {
    group.barrier();
    const auto start = Clock::now();
    for (int64_t i = 0; i < iters; ++i) comms.enqueue(collective, counts);
    comms.synchronize();
    const double local = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(iters);
    return group.reduce(local, Reduction::kAverage);
  };
  run(1);  // warm-up (connection setup for this size and setting)
  const double estimate = group.reduce(run(1), Reduction::kMax);
  m.iters = repeats_for_target(estimate, kIterSeconds, 1, kMaxIters);
  // A fifth of a GEMM point's budget: NCCL sweeps have many more points.
  const int64_t samples = repeats_for_target(estimate * static_cast<double>(m.iters), options.seconds_per_point / 5,
                                             std::min<int64_t>(options.min_samples, 3), options.max_samples);
  for (int64_t s = 0; s < samples; ++s) m.seconds.push_back(run(m.iters));
  m.status = "ok";
  return m;
}

size_t largest_buffer(const CalibrateOptions& options, Communicators& comms, ProcessGroup& group) {
  double smallest_free = 0;
  bool first = true;
  for (LocalRank& r : comms.ranks()) {
    check_cuda(cudaSetDevice(r.device), "cudaSetDevice");
    size_t free_bytes = 0;
    size_t total = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    if (first || static_cast<double>(free_bytes) < smallest_free) smallest_free = static_cast<double>(free_bytes);
    first = false;
  }
  smallest_free = group.reduce(smallest_free, Reduction::kMin);
  const double usable = std::max(0.0, (smallest_free - static_cast<double>(kNcclHeadroomBytes)) / 2.0);
  // The largest size of the sweep that fits in each of the two buffers.
  int64_t largest = 0;
  for (int64_t size : geometric_sizes(options.nccl_min_bytes, options.nccl_max_bytes)) {
    if (static_cast<double>(size) <= usable) largest = size;
  }
  return static_cast<size_t>(largest);
}

}  // namespace

std::vector<NcclSetting> nccl_settings(Collective collective, bool forced) {
  std::vector<NcclSetting> settings{NcclSetting{}};
  if (!forced || collective == Collective::kAllToAll || collective == Collective::kSendRecv) return settings;
  std::vector<std::string> algos{"Ring"};
  if (collective == Collective::kAllReduce) algos.push_back("Tree");
  for (const auto& algo : algos) {
    for (const char* proto : {"LL", "LL128", "Simple"}) settings.push_back(NcclSetting{algo, proto});
  }
  return settings;
}

Metadata nccl_metadata(ProcessGroup& group) {
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int nranks = group.size() == 1 ? devices : group.size();
  Metadata lines{{"nccl_ranks", std::to_string(nranks)},
                 {"nccl_processes", std::to_string(group.size())},
                 {"nccl_nodes", std::to_string(group.node_count())},
                 {"process_group", group.description()},
                 {"nccl_data_type", "float (fp32)"},
                 {"nccl_timing", "host clock over iters ops + stream sync / iters; average over processes; "
                                 "median over samples (nccl-tests src/common.cu)"}};
  for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
                           "NCCL_NET", "NCCL_SOCKET_IFNAME", "NCCL_TUNER_PLUGIN"}) {
    const char* value = std::getenv(name);
    std::string key = "env_";
    for (const char* c = name; *c != '\0'; ++c) key += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    lines.emplace_back(key, value ? value : "(unset)");
  }
  return lines;
}

NcclRunResult run_nccl_benchmarks(const CalibrateOptions& options, ProcessGroup& group, RawTableWriter* writer) {
  NcclRunResult result;
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int nranks = group.size() == 1 ? devices : group.size();
  if (nranks < 2) {
    result.skipped = true;
    result.skip_reason = "NCCL needs at least 2 ranks; this run has " + std::to_string(nranks) + " (" +
                         std::to_string(devices) + " GPU(s), " + group.description() + ")";
    return result;
  }
  const SavedEnvironment saved;
  Communicators comms(group, devices);
  const size_t buffer_bytes = largest_buffer(options, comms, group);
  if (buffer_bytes == 0) {
    result.skipped = true;
    result.skip_reason = "not enough free GPU memory for the smallest NCCL size";
    return result;
  }
  comms.allocate(buffer_bytes);
  const std::vector<int64_t> sizes = geometric_sizes(options.nccl_min_bytes, static_cast<int64_t>(buffer_bytes));

  // Every distinct setting, each with the collectives it applies to.
  std::vector<std::pair<NcclSetting, std::vector<Collective>>> plan;
  for (Collective c : options.collectives) {
    for (const NcclSetting& s : nccl_settings(c, options.nccl_forced)) {
      auto it = std::find_if(plan.begin(), plan.end(),
                             [&](const auto& p) { return p.first.algo == s.algo && p.first.proto == s.proto; });
      if (it == plan.end()) {
        plan.push_back({s, {c}});
      } else {
        it->second.push_back(c);
      }
    }
  }

  const bool root = group.rank() == 0;
  for (const auto& [setting, collectives] : plan) {
    saved.restore();
    if (setting.algo != "auto") setenv("NCCL_ALGO", setting.algo.c_str(), 1);
    if (setting.proto != "auto") setenv("NCCL_PROTO", setting.proto.c_str(), 1);
    comms.init();
    const bool is_auto = setting.algo == "auto" && setting.proto == "auto";
    if (is_auto) {
      std::string message;
      result.check_passed = check_results(comms, group, buffer_bytes, message);
      if (root) std::cout << "nccl check (" << nranks << " ranks): " << (result.check_passed ? "pass" : message) << "\n";
      comms.allocate(buffer_bytes);  // random data again after the check's constants
    }
    const int64_t max_size = is_auto ? static_cast<int64_t>(buffer_bytes) : options.nccl_forced_max_bytes;
    for (Collective collective : collectives) {
      for (int64_t size : sizes) {
        if (size > max_size) break;
        const CollectiveCounts counts = collective_counts(collective, size, kElementBytes, nranks);
        if (counts.total_bytes == 0) continue;
        NcclMeasurement m;
        try {
          m = measure_point(comms, group, options, collective, setting, counts);
        } catch (const DeviceError& e) {
          // A forced setting NCCL cannot run: report it and start this setting afresh.
          m.collective = collective;
          m.setting = setting;
          m.nranks = nranks;
          m.size_bytes = counts.total_bytes;
          m.count = counts.total_bytes / kElementBytes;
          m.status = "failed";
          m.message = e.what();
          cudaGetLastError();
          comms.init();
        }
        if (root && writer != nullptr) writer->add_row(nccl_row(m, group.size(), group.node_count()));
        const bool failed = m.status != "ok";
        result.measurements.push_back(std::move(m));
        if (failed) break;  // the larger sizes of this setting would fail the same way
      }
    }
    if (root) {
      std::cout << "nccl " << setting.algo << "/" << setting.proto << ": " << collectives.size()
                << " collective(s) done\n";
    }
  }
  comms.destroy();
  saved.restore();
  return result;
}

std::vector<std::string> nccl_columns() {
  return {"collective", "nranks", "nprocs", "nodes", "algo", "proto", "size_bytes", "count", "type",
          "redop", "root", "status", "iters", "samples", "time_us", "min_us", "max_us", "algbw_gbps",
          "busbw_gbps", "samples_us", "message"};
}

std::vector<std::string> nccl_row(const NcclMeasurement& m, int nprocs, int nodes) {
  const bool timed = !m.seconds.empty();
  std::vector<double> us;
  for (double s : m.seconds) us.push_back(s * 1e6);
  SampleSummary summary;
  if (timed) summary = summarize(us);
  // algbw = S / t in GB/s: bytes / (t_us · 1e-6) / 1e9 = bytes / t_us · 1e-3.
  const double algbw = timed ? static_cast<double>(m.size_bytes) / summary.median * 1e-3 : 0.0;
  const double busbw = algbw * bus_bandwidth_factor(m.collective, m.nranks);
  const bool reduces = m.collective == Collective::kAllReduce || m.collective == Collective::kReduceScatter;
  std::string message = m.message;
  for (char& c : message) {
    if (c == ',' || c == '"' || c == '\n' || c == '\r') c = ' ';
  }
  return {std::string(collective_name(m.collective)),
          std::to_string(m.nranks),
          std::to_string(nprocs),
          std::to_string(nodes),
          m.setting.algo,
          m.setting.proto,
          std::to_string(m.size_bytes),
          std::to_string(m.count),
          "float",
          reduces ? "sum" : "none",
          m.collective == Collective::kBroadcast ? "0" : "-1",
          m.status,
          timed ? std::to_string(m.iters) : "",
          timed ? std::to_string(summary.count) : "",
          timed ? format_number(summary.median) : "",
          timed ? format_number(summary.min) : "",
          timed ? format_number(summary.max) : "",
          timed ? format_number(algbw) : "",
          timed ? format_number(busbw) : "",
          join_samples(us),
          message};
}

}  // namespace clustersim::calibrate
