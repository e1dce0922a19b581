#pragma once

// A training campaign: the steps of a whole run, its checkpoints and its failures (DESIGN.md, "Beyond
// one step: campaigns"). The step simulation gives the step time; this models the wall-clock time
// of the run around it:
//   work W = steps × step time, cut into segments of checkpoint interval τ (compute time between
//   two checkpoints, a whole number of steps); after each segment a checkpoint: synchronous, the
//   training waits for the write δ; asynchronous (Megatron-LM --async-save, PyTorch DCP async_save),
//   the training waits only for the copy of its state to host memory b, and the write δ runs in the
//   background: the checkpoint counts once written.
//   failures arrive as a Poisson process of rate Σ components × rate (exponential times between
//   them); each one rolls the run back to the last written checkpoint and costs a restart R =
//   relaunch + checkpoint load; a failure during a restart restarts it.
// simulate_campaign() runs that process on the discrete-event engine for `seeds` seeded runs
// (failures and restarts are events; the segments between two failures are counted in closed form,
// so a run costs a few events per failure) and reports the mean and the spread.
//
// Closed forms it is checked against (campaign/campaign_test.cc):
//   Young (1974): the optimum interval τ* = √(2 c M), c the time the training waits per checkpoint,
//     M the job's mean time between failures.
//   first-order expected wall time (Young 1974; Daly 2006, Future Gener. Comput. Syst. 22(3) eq. 7):
//     T₁ = W (1 + c/τ) / (1 − (R + (τ + c)/2) / M);
//   exact expectation for exponential failures with failing restarts (Daly 2006 eq. 13):
//     T = (W/τ) · M · e^{R/M} · (e^{(τ+c)/M} − 1)   (synchronous save, W a multiple of τ).
//
// Spare nodes (CampaignSpec::spare_nodes): in the Monte-Carlo only; the closed forms assume a spare
// is always at hand. Not modelled: the bandwidth an asynchronous write takes from the training,
// planned maintenance, and failures that do not stop the job.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace clustersim {

// Failure rates per component in FIT (failures per 10^9 component-hours).
struct FailureRates {
  double gpu = 0;       // per GPU: the GPU, its HBM and SRAM, GSP, thermal interface, silent data corruption
  double host = 0;      // per node: CPU, memory, SSD, power supply, chassis, IO board, unplanned maintenance
  double nic = 0;       // per compute NIC
  double network = 0;   // per compute NIC port: its share of the switches and cables of the fabric
  double software = 0;  // per GPU: software bugs, NCCL watchdog timeouts, dependencies
};

// The defaults, from the unexpected interruptions of Llama 3 405B's pre-training (Llama Team, "The
// Llama 3 Herd of Models", arXiv:2407.21783, 2024, §3.3.4 Table 5): 419 in 54 days on 16,384 H100
// GPUs in 2,048 nodes with one NIC per GPU (16,384 NIC ports): GPU 268 (faulty GPU 148, HBM3 72,
// SRAM 19, system processor 17, silent data corruption 6, thermal interface and sensor 6), host 46
// (host maintenance 32, SSD 3, power supply 3, chassis 2, IO expansion board 2, CPU 2, system
// memory 2), NIC 7, network switch and cable 35, software 63 (software bug 54, NCCL watchdog 7,
// dependency 2). Per component: count / (components × 1,296 h) × 10^9.
FailureRates llama3_failure_rates();

struct CampaignSpec {
  // Exactly one of the two: tokens to train (the steps are rounded up) or optimizer steps.
  std::optional<double> tokens;
  std::optional<int64_t> steps;
  double gpu_hour_price = 0;                // any currency per GPU-hour; 0: not priced
  std::optional<double> checkpoint_interval_s;  // compute time between checkpoints; absent: Young's optimum
  bool async_save = false;
  FailureRates failures = llama3_failure_rates();
  double relaunch_s = 0;  // from a failure to the job running again, checkpoint load not included
  // Spare nodes: a failure of a GPU, host or NIC takes its node out for `repair_s`; the job
  // relaunches at once on a spare, or waits for a node back from repair when none is left. Absent:
  // a spare is always at hand (the closed forms' assumption).
  std::optional<int> spare_nodes;
  double repair_s = 0;
  int seeds = 1000;
  uint64_t seed = 1;
  // "file:line:column: campaign.checkpoint.interval: " (or where the campaign was given), for messages.
  std::string interval_where;
  std::string campaign_where;
};

// What the cluster and the step simulation give the campaign.
struct CampaignInputs {
  double step_time_s = 0;
  double tokens_per_step = 0;  // global batch × sequence length
  int gpus = 0;
  int nodes = 0;
  int nics = 0;  // compute NICs, all nodes
  // The checkpoint: every byte of model and optimizer state once (data-parallel replicas save one
  // copy between them, as Megatron's fully parallel save does), written to and read from storage.
  double checkpoint_bytes = 0;
  double storage_write_bytes_per_s = 0;  // the bottleneck of the storage's aggregate and the nodes' links
  double storage_read_bytes_per_s = 0;
  // Asynchronous save: the training waits for its GPUs to copy their shards to host memory.
  double async_copy_s = 0;
  // Power (W) of the whole cluster while it trains and while it waits (checkpoints, restarts), the
  // facility's PUE not included; 0: not known (no energy figures).
  double training_power_w = 0;
  double waiting_power_w = 0;
  double pue = 1;
};

struct CampaignResult {
  int64_t steps = 0;
  double work_s = 0;                  // steps × step time
  double checkpoint_write_s = 0;      // δ: bytes / write bandwidth
  double checkpoint_wait_s = 0;       // c: what the training waits per checkpoint (δ, or the copy if async)
  double checkpoint_load_s = 0;       // bytes / read bandwidth
  double checkpoint_bytes = 0;        // CampaignInputs::checkpoint_bytes
  double restart_s = 0;               // R = relaunch + load
  double checkpoint_interval_s = 0;   // τ, a whole number of steps
  int64_t checkpoint_interval_steps = 0;
  bool interval_is_optimum = false;   // τ from Young's formula
  double failures_per_hour = 0;       // of the whole job
  double mtbf_s = 0;                  // M = 1 / rate
  // Monte-Carlo over the seeds.
  int seeds = 0;
  double wall_s = 0;                  // mean
  double wall_s_p10 = 0;
  double wall_s_p90 = 0;
  double interruptions = 0;           // mean failures per run
  double spare_wait_s = 0;            // mean time a run waited for a node back from repair
  double goodput = 0;                 // W / mean wall time (effective training time ratio)
  double gpu_hours = 0;               // GPUs × mean wall time
  double cost = 0;                    // gpu_hours × price (0 without a price)
  std::optional<double> energy_mwh;   // facility energy of the mean run, PUE included
  uint64_t events = 0;                // engine events over all seeds
  // Closed forms at the same τ (header comment).
  double first_order_wall_s = 0;
  double exact_wall_s = 0;
};

// Young's optimum interval √(2 · wait · mtbf) (s). Throws InputError unless both are > 0 and finite.
double young_interval(double checkpoint_wait_s, double mtbf_s);
// The first-order expected wall time T₁ (header comment; s); +inf when the failures leave no
// progress (R + (τ+c)/2 ≥ M).
double first_order_wall_time(double work_s, double interval_s, double wait_s, double restart_s, double mtbf_s);
// The exact expectation for exponential failures, synchronous save (header comment; s); the last,
// shorter segment is priced by its own length. Infinite mtbf: W + checkpoints.
double exact_wall_time(double work_s, double interval_s, double wait_s, double restart_s, double mtbf_s);

// Everything but the Monte-Carlo: the interval, the checkpoint and restart times, the MTBF and the
// closed forms (seeds 0; wall_s = exact_wall_s, and gpu_hours, cost and energy_mwh of that
// expectation, energy with the lost work at the training power: F = wall / M failures losing
// (τ + c)/2 each, a first-order count). For a search that ranks thousands of layouts by time to train.
// Throws as simulate_campaign().
CampaignResult plan_campaign(const CampaignSpec& spec, const CampaignInputs& inputs);

// Runs the campaign. Throws InputError (located by spec.interval_where / campaign_where) when the
// interval is shorter than one step or than an asynchronous write, when the campaign would take
// longer than 10^11 s (the failures leave it no progress), or the inputs are not positive.
// `progress`, when given, is called after each seeded run with the runs done and spec.seeds (a
// campaign at its bound of kMaxFailureEvents takes a few seconds: clustersim run shows it).
CampaignResult simulate_campaign(const CampaignSpec& spec, const CampaignInputs& inputs,
                                 const std::function<void(int done, int total)>& progress = {});

}  // namespace clustersim
