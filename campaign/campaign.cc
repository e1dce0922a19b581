#include "campaign/campaign.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/random.h"
#include "core/units.h"
#include "engine/simulator.h"

namespace clustersim {

namespace {

// Llama 3 405B's pre-training (campaign.h): 54 days, 16,384 GPUs, 2,048 nodes, 16,384 NICs.
constexpr double kLlama3Hours = 54.0 * 24.0;
constexpr double kLlama3Gpus = 16384.0;
constexpr double kLlama3Nodes = 2048.0;
constexpr double kLlama3Nics = 16384.0;
double fit(double failures, double components) { return failures / (components * kLlama3Hours) * 1e9; }

// The campaign runs on the engine's clock with one tick (a picosecond of Time) standing for one
// microsecond: int64 ticks then reach 9.2e12 s, beyond any campaign simulate_campaign() accepts.
constexpr double kTicksPerSecond = 1e6;
constexpr double kMaxWallSeconds = 1e11;
// Monte-Carlo work bound: seeds × expected failures per run. About 10 s: 10,000 seeds of the
// Llama-3-405B campaign (8.8 M failures) took 9.3 s on this project's 2-core machine.
constexpr double kMaxFailureEvents = 1e7;

Time tick(double seconds) { return Time::from_ps(std::llround(seconds * kTicksPerSecond)); }

// The progress of a run between two failures, from a resume point with `remaining` work: segments
// of `interval` work, each followed by a wait `wait` (the training stopped for the checkpoint); a
// checkpoint is written `commit_delay` after its wait ends (0: synchronous, the write was the wait).
struct Timeline {
  double interval = 0;
  double wait = 0;
  double commit_delay = 0;

  // Checkpoints taken before the remaining work is done (none after the last segment).
  int64_t checkpoints(double remaining) const {
    return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(remaining / interval - 1e-12)) - 1);
  }
  double time_to_finish(double remaining) const { return remaining + static_cast<double>(checkpoints(remaining)) * wait; }
  // Work written to checkpoints `elapsed` after the resume.
  double committed(double remaining, double elapsed) const {
    if (elapsed < commit_delay) return 0;
    const auto written = static_cast<int64_t>(std::floor((elapsed - commit_delay) / (interval + wait)));
    return interval * static_cast<double>(std::min(written, checkpoints(remaining)));
  }
  // Of `elapsed` after the resume, the time spent training (the rest waited for checkpoints).
  double training(double elapsed) const {
    const double periods = std::floor(elapsed / (interval + wait));
    return periods * interval + std::min(elapsed - periods * (interval + wait), interval);
  }
};

struct RunOutcome {
  double wall = 0;
  int64_t failures = 0;
  double training = 0;       // time the GPUs trained (lost work included)
  double spare_wait = 0;     // time the job waited for a node back from repair
  uint64_t events = 0;
};

// The spare-node pool of one run: `limited` false, a spare is always at hand.
struct Spares {
  bool limited = false;
  int nodes = 0;
  double repair = 0;      // s until a failed node is back in the pool
  double node_share = 0;  // the share of failures that take a node out (GPU, host, NIC)
};

RunOutcome run_once(double work, const Timeline& line, double restart, double mtbf, const Spares& pool,
                    uint64_t seed) {
  Simulator sim;
  SplitMix64 rng(seed);
  RunOutcome out;
  double committed = 0;
  double resumed_at = 0;
  bool running = true;
  bool done = false;
  bool waiting = false;   // down, for want of a node
  double waiting_since = 0;
  int spares = pool.nodes;  // below 0: nodes missing
  EventId finish_id{};
  EventId restart_id{};
  EventId failure_id{};

  std::function<void(double)> start;
  std::function<void(double)> fail;
  auto finish = [&](double t) {
    done = true;
    out.wall = t;
    out.training += line.training(t - resumed_at);
    if (std::isfinite(mtbf)) sim.cancel(failure_id);
  };
  start = [&](double t) {
    running = true;
    resumed_at = t;
    const double at = t + line.time_to_finish(work - committed);
    finish_id = sim.schedule_at(tick(at), [&, at] { finish(at); });
  };
  auto restarted = [&](double t) { start(t); };
  auto relaunch = [&](double t) {
    const double back = t + restart;
    restart_id = sim.schedule_at(tick(back), [&, back] { restarted(back); });
  };
  fail = [&](double t) {
    if (done) return;
    ++out.failures;
    if (running) {
      const double elapsed = t - resumed_at;
      out.training += line.training(elapsed);
      committed += line.committed(work - committed, elapsed);
      sim.cancel(finish_id);
      running = false;
    } else if (!waiting) {
      sim.cancel(restart_id);
    }
    if (pool.limited && rng.uniform() <= pool.node_share) {
      --spares;
      const double repaired = t + pool.repair;
      sim.schedule_at(tick(repaired), [&, repaired] {
        ++spares;
        if (waiting && spares >= 0 && !done) {
          waiting = false;
          out.spare_wait += repaired - waiting_since;
          relaunch(repaired);
        }
      });
    }
    if (spares >= 0) {
      relaunch(t);
    } else if (!waiting) {
      waiting = true;
      waiting_since = t;
    }
    const double next = t + rng.exponential(mtbf);
    failure_id = sim.schedule_at(tick(next), [&, next] { fail(next); });
  };
  if (std::isfinite(mtbf)) {
    const double first = rng.exponential(mtbf);
    failure_id = sim.schedule_at(tick(first), [&, first] { fail(first); });
  }
  start(0);
  sim.run();
  out.events = sim.events_executed();
  return out;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

FailureRates llama3_failure_rates() {
  FailureRates r;
  r.gpu = fit(148 + 72 + 19 + 17 + 6 + 6, kLlama3Gpus);
  r.host = fit(32 + 3 + 3 + 2 + 2 + 2 + 2, kLlama3Nodes);
  r.nic = fit(7, kLlama3Nics);
  r.network = fit(35, kLlama3Nics);
  r.software = fit(54 + 7 + 2, kLlama3Gpus);
  return r;
}

double young_interval(double checkpoint_wait_s, double mtbf_s) {
  if (!(checkpoint_wait_s > 0) || !(mtbf_s > 0) || !std::isfinite(checkpoint_wait_s) || !std::isfinite(mtbf_s)) {
    throw InputError(fmt::format("Young's interval needs a checkpoint time and an MTBF above 0 s, got {} s and {} s",
                                 checkpoint_wait_s, mtbf_s));
  }
  return std::sqrt(2.0 * checkpoint_wait_s * mtbf_s);
}

double first_order_wall_time(double work_s, double interval_s, double wait_s, double restart_s, double mtbf_s) {
  const double lost = (restart_s + (interval_s + wait_s) / 2.0) / mtbf_s;
  if (lost >= 1) return std::numeric_limits<double>::infinity();
  return work_s * (1.0 + wait_s / interval_s) / (1.0 - lost);
}

double exact_wall_time(double work_s, double interval_s, double wait_s, double restart_s, double mtbf_s) {
  const Timeline line{interval_s, wait_s, 0};
  const auto checkpoints = line.checkpoints(work_s);
  const double last = work_s - static_cast<double>(checkpoints) * interval_s;
  if (!std::isfinite(mtbf_s)) return line.time_to_finish(work_s);
  auto segment = [&](double s) { return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1(s / mtbf_s); };
  return static_cast<double>(checkpoints) * segment(interval_s + wait_s) + segment(last);
}

CampaignResult plan_campaign(const CampaignSpec& spec, const CampaignInputs& in) {
  auto at_campaign = [&](const std::string& message) { return InputError(spec.campaign_where + message); };
  if (!(in.step_time_s > 0) || !(in.tokens_per_step > 0) || in.gpus <= 0 || in.nodes <= 0) {
    throw InternalError("simulate_campaign: the step time, tokens per step, GPUs and nodes must be positive");
  }
  if (spec.tokens.has_value() == spec.steps.has_value()) {
    throw at_campaign("give the run's length as training.tokens or training.steps (one of the two)");
  }
  CampaignResult r;
  r.steps = spec.steps ? *spec.steps : static_cast<int64_t>(std::ceil(*spec.tokens / in.tokens_per_step));
  r.work_s = static_cast<double>(r.steps) * in.step_time_s;
  if (!(r.work_s <= kMaxWallSeconds)) {
    throw at_campaign(fmt::format("{} steps of {:.3f} s are {:.3g} s of training, more than this model's {:.0e} s",
                                  r.steps, in.step_time_s, r.work_s, kMaxWallSeconds));
  }
  if (!(in.storage_write_bytes_per_s > 0) || !(in.storage_read_bytes_per_s > 0)) {
    throw InternalError("simulate_campaign: storage bandwidths must be positive");
  }
  r.checkpoint_bytes = in.checkpoint_bytes;
  r.checkpoint_write_s = in.checkpoint_bytes / in.storage_write_bytes_per_s;
  r.checkpoint_load_s = in.checkpoint_bytes / in.storage_read_bytes_per_s;
  r.checkpoint_wait_s = spec.async_save ? in.async_copy_s : r.checkpoint_write_s;
  r.restart_s = spec.relaunch_s + r.checkpoint_load_s;

  const FailureRates& f = spec.failures;
  r.failures_per_hour = 1e-9 * (in.gpus * (f.gpu + f.software) + in.nodes * f.host + in.nics * (f.nic + f.network));
  r.mtbf_s = r.failures_per_hour > 0 ? 3600.0 / r.failures_per_hour : std::numeric_limits<double>::infinity();

  // The interval: a whole number of steps, at least one; without failures no checkpoint is needed.
  double interval = 0;
  if (spec.checkpoint_interval_s) {
    interval = *spec.checkpoint_interval_s;
    if (interval < in.step_time_s) {
      throw InputError(spec.interval_where + fmt::format("{:.3f} s is shorter than one training step ({:.3f} s); "
                                                         "give at least one step, or auto",
                                                         interval, in.step_time_s));
    }
  } else if (std::isfinite(r.mtbf_s) && r.checkpoint_wait_s > 0) {
    interval = std::max(young_interval(r.checkpoint_wait_s, r.mtbf_s), spec.async_save ? r.checkpoint_write_s : 0.0);
    r.interval_is_optimum = true;
  } else {
    interval = r.work_s;  // no failures (or free checkpoints): one segment
    r.interval_is_optimum = true;
  }
  r.checkpoint_interval_steps = std::max<int64_t>(1, std::llround(interval / in.step_time_s));
  if (!spec.checkpoint_interval_s && spec.async_save &&
      static_cast<double>(r.checkpoint_interval_steps) * in.step_time_s < r.checkpoint_write_s) {
    // An asynchronous write must end before the next checkpoint: round up, not to the nearest step.
    r.checkpoint_interval_steps = static_cast<int64_t>(std::ceil(r.checkpoint_write_s / in.step_time_s));
  }
  r.checkpoint_interval_s = static_cast<double>(r.checkpoint_interval_steps) * in.step_time_s;
  if (spec.checkpoint_interval_s && r.checkpoint_interval_s < r.checkpoint_write_s) {
    throw InputError(spec.interval_where +
                     fmt::format("{:.1f} s ({} steps of {:.3f} s) is shorter than the checkpoint write ({:.1f} s: "
                                 "{:.3g} GB at {:.3g} GB/s); give at least the write, or auto",
                                 *spec.checkpoint_interval_s, r.checkpoint_interval_steps, in.step_time_s,
                                 r.checkpoint_write_s, in.checkpoint_bytes * 1e-9,
                                 in.storage_write_bytes_per_s * 1e-9));
  }

  const double tau = r.checkpoint_interval_s;
  r.first_order_wall_s = std::isfinite(r.mtbf_s)
                             ? first_order_wall_time(r.work_s, tau, r.checkpoint_wait_s, r.restart_s, r.mtbf_s)
                             : Timeline{tau, r.checkpoint_wait_s, 0}.time_to_finish(r.work_s);
  r.exact_wall_s = exact_wall_time(r.work_s, tau, r.checkpoint_wait_s, r.restart_s, r.mtbf_s);
  if (!(r.exact_wall_s <= kMaxWallSeconds)) {
    throw at_campaign(fmt::format(
        "the run would not finish: a failure every {:.2f} h of the job against segments of {:.2f} h and restarts of "
        "{:.2f} h leave it an expected {:.3g} s; shorten the interval, speed up the storage or lower the failure rates",
        r.mtbf_s / 3600, (tau + r.checkpoint_wait_s) / 3600, r.restart_s / 3600, r.exact_wall_s));
  }
  const double expected_failures = std::isfinite(r.mtbf_s) ? r.exact_wall_s / r.mtbf_s : 0;

  r.wall_s = r.wall_s_p10 = r.wall_s_p90 = r.exact_wall_s;
  r.interruptions = expected_failures;
  r.goodput = r.work_s / r.wall_s;
  r.gpu_hours = in.gpus * r.wall_s / 3600.0;
  r.cost = r.gpu_hours * spec.gpu_hour_price;
  if (in.training_power_w > 0) {
    const double train = std::min(r.wall_s, r.work_s + expected_failures * (tau + r.checkpoint_wait_s) / 2);
    r.energy_mwh = in.pue * (in.training_power_w * train + in.waiting_power_w * (r.wall_s - train)) / 3.6e9;
  }
  return r;
}

CampaignResult simulate_campaign(const CampaignSpec& spec, const CampaignInputs& in,
                                 const std::function<void(int done, int total)>& progress) {
  CampaignResult r = plan_campaign(spec, in);
  const double tau = r.checkpoint_interval_s;
  if (r.interruptions * spec.seeds > kMaxFailureEvents) {
    throw InputError(spec.campaign_where + fmt::format("{} seeds of about {:.3g} failures each exceed the "
                                                       "Monte-Carlo's {:.0e} failure events; lower campaign.seeds or the failure rates",
                                                       spec.seeds, r.interruptions, kMaxFailureEvents));
  }
  r.energy_mwh.reset();
  const Timeline line{tau, r.checkpoint_wait_s, spec.async_save ? r.checkpoint_write_s : 0.0};
  std::vector<double> walls;
  walls.reserve(static_cast<size_t>(spec.seeds));
  double failures = 0, training = 0, spare_wait = 0;
  Spares pool;
  if (spec.spare_nodes) {
    const FailureRates& f = spec.failures;
    const double node = in.gpus * f.gpu + in.nodes * f.host + in.nics * f.nic;
    const double all = node + in.gpus * f.software + in.nics * f.network;
    pool = Spares{true, *spec.spare_nodes, spec.repair_s, all > 0 ? node / all : 0};
  }
  SplitMix64 seeder(spec.seed);
  for (int i = 0; i < spec.seeds; ++i) {
    const RunOutcome o = run_once(r.work_s, line, r.restart_s, r.mtbf_s, pool, seeder.next());
    spare_wait += o.spare_wait;
    walls.push_back(o.wall);
    failures += static_cast<double>(o.failures);
    training += o.training;
    r.events += o.events;
    if (progress) progress(i + 1, spec.seeds);
  }
  const double n = spec.seeds;
  r.seeds = spec.seeds;
  double sum = 0;
  for (double w : walls) sum += w;
  r.wall_s = sum / n;
  r.wall_s_p10 = percentile(walls, 0.10);
  r.wall_s_p90 = percentile(walls, 0.90);
  r.interruptions = failures / n;
  r.spare_wait_s = spare_wait / n;
  r.goodput = r.work_s / r.wall_s;
  r.gpu_hours = in.gpus * r.wall_s / 3600.0;
  r.cost = r.gpu_hours * spec.gpu_hour_price;
  if (in.training_power_w > 0) {
    const double train = training / n;
    const double joules = in.pue * (in.training_power_w * train + in.waiting_power_w * (r.wall_s - train));
    r.energy_mwh = joules / 3.6e9;
  }
  return r;
}

}  // namespace clustersim
