#include "tools/validation/validate_calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "collectives/collective_profile.h"
#include "core/error.h"
#include "core/input_file.h"
#include "cost_models/compute_cost_model.h"
#include "cost_models/gemm_efficiency_model.h"
#include "parallelism/training_simulation.h"
#include "scenarios/prepared_scenario.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tools/common/output_file.h"
#include "workloads/op_cost.h"
#include "workloads/pytorch_eager_ops.h"
#include "workloads/transformer.h"

namespace clustersim {

namespace {

double relative_error(Duration predicted, Duration measured) {
  return (static_cast<double>(predicted.ps()) - static_cast<double>(measured.ps())) /
         static_cast<double>(measured.ps());
}

std::pair<double, double> median_and_max(std::vector<double> abs_errors) {
  if (abs_errors.empty()) return {0, 0};
  std::sort(abs_errors.begin(), abs_errors.end());
  const size_t n = abs_errors.size();
  const double median = n % 2 == 1 ? abs_errors[n / 2] : 0.5 * (abs_errors[n / 2 - 1] + abs_errors[n / 2]);
  return {median, abs_errors.back()};
}

std::string alignment_name(GemmAlignment a) {
  switch (a) {
    case GemmAlignment::kAligned: return "aligned";
    case GemmAlignment::kFourByteAligned: return "4/8-byte aligned";
    case GemmAlignment::kMisaligned: return "misaligned";
  }
  return "?";
}

// Median and max |error| per dtype and alignment class.
std::vector<GemmClassSummary> gemm_class_summaries(const std::vector<LeaveOneOutResult::Row>& rows) {
  std::map<std::string, std::vector<double>> by_class;
  for (const auto& r : rows) {
    by_class[fmt::format("{} {}", name_of(r.shape.dtype), alignment_name(GemmEfficiencyModel::alignment_of(r.shape)))]
        .push_back(std::fabs(r.relative_error));
  }
  std::vector<GemmClassSummary> out;
  for (const auto& [name, errors] : by_class) {
    const auto [median, max] = median_and_max(errors);
    out.push_back({name, static_cast<int>(errors.size()), median, max});
  }
  return out;
}

Duration sum_of(const std::vector<Op>& ops, const ComputeCostModel& cost) {
  Duration total;
  for (const Op& op : ops) {
    if (op.cost != OpCost::kCommunication) total += op_duration(op, cost);
  }
  return total;
}

std::string percent(double e) { return fmt::format("{:+.1f} %", 100 * e); }

std::string shape_text(const GemmShape& s) {
  return fmt::format("{}×{}×{}{}", s.m, s.n, s.k, s.batch > 1 ? fmt::format(" ×{}", s.batch) : "");
}

// One nccl input's measurements, named for the report.
struct NcclSource {
  std::string name;
  std::vector<CollectiveMeasurement> measurements;
};

CollectiveFitCheck validate_group(const std::string& source, const CollectiveGroupFit& g) {
  CollectiveFitCheck v;
  v.source = source;
  v.fit = g.fit;
  v.fit_rms = g.alpha_beta.rms_relative_error;
  const std::vector<Duration> left_out =
      g.points.size() >= 2 ? leave_one_out_alpha_beta(g.points) : std::vector<Duration>(g.points.size());
  std::vector<double> fitted_errors, left_out_errors;
  for (size_t i = 0; i < g.points.size(); ++i) {
    CollectiveFitCheckRow row{g.points[i].size, g.points[i].time, g.alpha_beta.predict(g.points[i].size),
                                left_out[i]};
    fitted_errors.push_back(std::fabs(relative_error(row.fitted, row.measured)));
    if (row.left_out.ps() > 0) left_out_errors.push_back(std::fabs(relative_error(row.left_out, row.measured)));
    v.rows.push_back(row);
  }
  std::tie(v.median_fitted_error, v.max_fitted_error) = median_and_max(fitted_errors);
  std::tie(v.median_left_out_error, v.max_left_out_error) = median_and_max(left_out_errors);
  return v;
}

// One train_step.py result line, checked: `where` is "file:line" for the errors.
struct ReferenceMeasurement {
  std::string name;
  int ranks = 1;
  std::string variant = "none";  // config.parallel
  int64_t microbatches = 1;      // config.microbatches
  double step_ms = 0;            // the slowest rank's when given (step_time_ms_max_rank)
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  int64_t peak_bytes = 0;        // the largest rank's
};

ReferenceMeasurement parse_reference(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& key, const std::string& what) {
    return InputError(fmt::format("{}: \"{}\": {}", where, key, what));
  };
  // Milliseconds (at most 1e9, eleven days) or bytes (at most 1e15).
  auto number = [&](const nlohmann::json& obj, const std::string& key, double min_exclusive, double max = 1e9) {
    if (!obj.contains(key)) throw bad(key, "missing number");
    if (!obj.at(key).is_number()) throw bad(key, fmt::format("{} is not a number", obj.at(key).dump()));
    const double v = obj.at(key).get<double>();
    if (!std::isfinite(v) || v <= min_exclusive || v > max) {
      throw bad(key, fmt::format("{} is out of range; valid: {} 0 and at most {:g}", v, min_exclusive < 0 ? ">=" : ">", max));
    }
    return v;
  };
  auto count = [&](const nlohmann::json& obj, const std::string& key, int64_t max) {
    const nlohmann::json& v = obj.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > max) {
      throw bad(key, fmt::format("{} is not a whole number from 1 to {}", v.dump(), max));
    }
    return v.get<int64_t>();
  };
  ReferenceMeasurement m;
  if (!j.at("name").is_string()) throw bad("name", "not a string");
  m.name = j.at("name").get<std::string>();
  if (m.name.empty() || m.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                            std::string::npos || m.name.front() == '.') {
    throw bad("name", fmt::format("\"{}\" is not a configuration name (letters, digits, '.', '_', '-')", m.name));
  }
  if (j.contains("world_size")) m.ranks = static_cast<int>(count(j, "world_size", 65536));
  if (j.contains("config")) {
    const nlohmann::json& c = j.at("config");
    if (!c.is_object()) throw bad("config", "not an object");
    if (c.contains("parallel")) {
      if (!c.at("parallel").is_string()) throw bad("config.parallel", "not a string");
      m.variant = c.at("parallel").get<std::string>();
      if (m.variant != "none" && m.variant != "ddp" && m.variant != "tp" && m.variant != "pp") {
        throw bad("config.parallel", fmt::format("\"{}\"; valid: none, ddp, tp, pp", m.variant));
      }
    }
    if (c.contains("microbatches") && !c.at("microbatches").is_null()) m.microbatches = count(c, "microbatches", 65536);
  }
  if ((m.ranks > 1) != (m.variant != "none")) {
    throw bad("config.parallel", fmt::format("\"{}\" with world_size {}: a parallel variant runs on 2 or more ranks, "
                                            "\"none\" on one", m.variant, m.ranks));
  }
  m.step_ms = number(j, "step_time_ms", 0);
  if (j.contains("step_time_ms_max_rank")) {
    m.step_ms = number(j, "step_time_ms_max_rank", 0);
  } else if (m.ranks > 1) {
    throw bad("step_time_ms_max_rank", "missing number (a torchrun result gives the slowest rank's step)");
  }
  m.forward_ms = number(j, "forward_ms", 0);
  m.backward_ms = number(j, "backward_ms", 0);
  m.optimizer_ms = number(j, "optimizer_ms", -1);
  const double peak = number(j, "peak_allocated_bytes", 0, 1e15);
  if (peak != std::floor(peak)) throw bad("peak_allocated_bytes", "not a whole number of bytes");
  m.peak_bytes = static_cast<int64_t>(peak);
  if (j.contains("peak_allocated_bytes_per_rank")) {
    const nlohmann::json& per = j.at("peak_allocated_bytes_per_rank");
    if (!per.is_array() || per.size() != static_cast<size_t>(m.ranks)) {
      throw bad("peak_allocated_bytes_per_rank", fmt::format("expected a list of {} byte counts (one per rank)", m.ranks));
    }
    for (const auto& b : per) {
      if (!b.is_number_integer() || b.get<int64_t>() <= 0 || b.get<int64_t>() > int64_t{1'000'000'000'000'000}) {
        throw bad("peak_allocated_bytes_per_rank", fmt::format("{} is not a positive whole number of bytes", b.dump()));
      }
      m.peak_bytes = std::max(m.peak_bytes, b.get<int64_t>());
    }
  } else if (m.ranks > 1) {
    throw bad("peak_allocated_bytes_per_rank", "missing (a torchrun result gives every rank's peak)");
  }
  return m;
}

// Throws InputError unless the measured configuration (train_step.py's "config") is the one the
// scenario describes: every dimension the line gives is compared with the scenario's.
void check_reference_matches(const nlohmann::json& j, const Scenario& s, const std::string& where,
                             const std::string& scenario_path) {
  if (!j.contains("config")) return;
  const nlohmann::json& c = j.at("config");
  auto mismatch = [&](const std::string& key, const std::string& measured, const std::string& simulated,
                      const std::string& scenario_key) {
    return InputError(fmt::format("{}: \"config.{}\": {}, but {} has {} {}; the measurement does not describe that "
                                  "scenario",
                                  where, key, measured, scenario_path, scenario_key, simulated));
  };
  const ModelSpec& m = s.model;
  const std::vector<std::tuple<const char*, int64_t, const char*>> counts = {
      {"layers", m.layers, "model.layers"},         {"hidden", m.hidden, "model.hidden"},
      {"heads", m.heads, "model.heads"},            {"kv_heads", m.kv_head_count(), "model.kv_heads"},
      {"ffn_hidden", m.ffn_hidden, "model.ffn_hidden"}, {"vocab", m.vocab, "model.vocab"},
      {"seq_len", s.training.seq_len, "training.seq_len"}, {"micro_batch", s.training.micro_batch, "training.micro_batch"}};
  for (const auto& [key, simulated, scenario_key] : counts) {
    if (!c.contains(key)) continue;
    const nlohmann::json& v = c.at(key);
    if (v.is_null() && std::string(key) == "kv_heads") {
      if (m.kv_head_count() != m.heads) throw mismatch(key, "null (= heads)", std::to_string(simulated), scenario_key);
      continue;
    }
    if (!v.is_number_integer()) throw InputError(fmt::format("{}: \"config.{}\": {} is not a whole number", where, key, v.dump()));
    if (v.get<int64_t>() != simulated) throw mismatch(key, v.dump(), std::to_string(simulated), scenario_key);
  }
  const std::vector<std::tuple<const char*, std::string, const char*>> names = {
      {"mlp", std::string(name_of(m.mlp)), "model.mlp"},
      {"norm", std::string(name_of(m.norm)), "model.norm"},
      {"positions", std::string(name_of(m.position_embedding)), "model.position_embedding"}};
  for (const auto& [key, simulated, scenario_key] : names) {
    if (!c.contains(key)) continue;
    if (!c.at(key).is_string()) throw InputError(fmt::format("{}: \"config.{}\": not a string", where, key));
    if (c.at(key).get<std::string>() != simulated) throw mismatch(key, c.at(key).dump(), simulated, scenario_key);
  }
  const std::vector<std::tuple<const char*, bool, const char*>> flags = {
      {"bias", m.linear_bias, "model.linear_bias"},
      {"tie_embeddings", m.tied_embeddings, "model.tied_embeddings"},
      {"recompute", s.training.recompute == Recompute::kFull, "training.recompute full"}};
  for (const auto& [key, simulated, scenario_key] : flags) {
    if (!c.contains(key)) continue;
    if (!c.at(key).is_boolean()) throw InputError(fmt::format("{}: \"config.{}\": not true or false", where, key));
    if (c.at(key).get<bool>() != simulated) {
      throw mismatch(key, c.at(key).dump(), simulated ? "true" : "false", scenario_key);
    }
  }
}

TrainingValidationRow predict_reference(const ReferenceMeasurement& measured, const std::string& scenario_path,
                                        const CalibrationProfile& profile,
                                        const std::optional<CollectiveProfile>& collectives) {
  TrainingValidationRow row;
  row.name = measured.name;
  row.ranks = measured.ranks;
  if (row.ranks > 1) row.name += fmt::format(" {}×{}", measured.variant, row.ranks);
  if (measured.microbatches > 1) row.name += fmt::format(", {} micro-batches", measured.microbatches);
  row.scenario = scenario_path;
  // The slowest rank sets a parallel step's pace; memory is the largest rank's.
  row.step_ms = measured.step_ms;
  row.forward_ms = measured.forward_ms;
  row.backward_ms = measured.backward_ms;
  row.optimizer_ms = measured.optimizer_ms;
  row.peak_bytes = measured.peak_bytes;
  const Scenario s = load_scenario(scenario_path);
  const Cluster cluster(s.cluster);
  TrainingSimulationOptions sim;
  sim.fidelity = resolve_fidelity(s.simulation, s.layout);
  sim.compute_profile = &profile;
  sim.collective_profile = collectives ? &*collectives : nullptr;
  sim.power_model = power_model_applies(s.simulation, &profile);  // as `clustersim run` simulates it
  const TrainingReport report = simulate_training(cluster, s.model, s.training, s.layout, sim);
  row.predicted_step_ms = report.step_time_s * 1e3;
  row.predicted_optimizer_ms = report.breakdown.optimizer.to_seconds() * 1e3;
  row.predicted_host_bound_ms = report.breakdown.host_bound.to_seconds() * 1e3;
  // The forward and backward passes of the one-GPU step, priced as the simulator prices them.
  const Transformer t(s.model, s.training, ShardSpec{s.layout.tp, s.layout.sequence_parallel, s.layout.cp});
  const ComputeCostModel cost(cluster.node_spec(0).gpu, &profile);
  const int64_t layers = s.model.layers;
  const Duration forward = sum_of(t.embedding_forward(), cost) + sum_of(t.layer_forward(), cost) * layers +
                           sum_of(t.head_forward(), cost);
  const Duration backward = sum_of(t.head_backward(), cost) +
                            (sum_of(t.layer_recompute(), cost) + sum_of(t.layer_backward(), cost)) * layers +
                            sum_of(t.embedding_backward(), cost);
  row.predicted_forward_ms = forward.to_seconds() * 1e3;
  row.predicted_backward_ms = backward.to_seconds() * 1e3;
  row.parameters = t.parameters().total();
  const StageMemory& peak = report.programs.memory.at(static_cast<size_t>(report.peak_stage));
  row.predicted_peak_bytes = peak.memory.allocated().count();
  if (s.training.framework == Framework::kPytorchEager) {
    row.peak_moment = peak.peak_moment;
    if (s.layout.pp > 1) row.peak_moment += fmt::format(", stage {}", peak.stage);
  } else {
    row.peak_moment = "Megatron accounting";
  }
  row.step_error = row.predicted_step_ms / row.step_ms - 1;
  row.memory_error = static_cast<double>(row.predicted_peak_bytes) / static_cast<double>(row.peak_bytes) - 1;
  return row;
}

// Why a torchrun reference row has no scenario (scenarios/reference/h200x<ranks>-<name>-<variant>.yaml).
std::string not_simulated_reason(const std::string& scenario) { return fmt::format("no scenario {}", scenario); }

}  // namespace

bool TrainingValidationRow::within() const {
  return std::fabs(step_error) <= CalibrationTargets::kTraining && std::fabs(memory_error) <= CalibrationTargets::kTraining;
}

bool CalibrationValidation::gemm_meets_target() const {
  return !gemm.rows.empty() && gemm.median_abs_error <= CalibrationTargets::kGemmMedian &&
         gemm.max_abs_error <= CalibrationTargets::kGemmMax;
}

bool CalibrationValidation::step_gemms_meet_target() const {
  if (step_gemms.empty()) return gemm_meets_target();
  return step_gemms_median <= CalibrationTargets::kGemmMedian && step_gemms_max <= CalibrationTargets::kGemmMax;
}

bool CalibrationValidation::training_meets_target() const {
  return training_within >= CalibrationTargets::kTrainingRows;
}

CalibrationValidation validate_calibration(const CalibrationValidationOptions& options) {
  CalibrationValidation v;
  v.profile_path = resolve_profile_path(options.profile);
  v.profile = load_calibration_profile(v.profile_path);
  const GpuSpec gpu = HardwareCatalog().gpu(options.gpu);

  // (a) GEMM leave-one-out, per dtype and alignment class.
  v.gemm = leave_one_out_gemm(v.profile, gpu);
  v.gemm_classes = gemm_class_summaries(v.gemm.rows);

  // (e) GEMMs outside the profile.
  if (!options.gemm_holdout.empty()) {
    std::vector<calibrate::RawTable> tables;
    for (const std::string& path : options.gemm_holdout) tables.push_back(calibrate::read_raw_table_file(path));
    std::vector<const calibrate::RawTable*> gemm_tables;
    for (const calibrate::RawTable& t : tables) {
      const std::string* kind = t.find_metadata("kind");
      if (kind == nullptr || *kind != "gemm") {
        throw InputError(fmt::format("--gemm-holdout {}: not a clustersim-calibrate gemm file (its header has no "
                                     "`# kind: gemm`)",
                                     t.source));
      }
      const std::string* gpu_name = t.find_metadata("gpu_name");
      if (gpu_name != nullptr && !v.profile.machine.gpu.empty() && *gpu_name != v.profile.machine.gpu) {
        throw InputError(fmt::format("--gemm-holdout {}: measured on {}, but profile {} is of {}; give GEMMs measured "
                                     "on the profile's GPU",
                                     t.source, *gpu_name, v.profile_path, v.profile.machine.gpu));
      }
      gemm_tables.push_back(&t);
    }
    const ComputeCostModel calibrated(gpu, &v.profile);
    if (calibrated.gemm_predictor() == nullptr) {
      throw InputError(fmt::format("--gemm-holdout: profile {} has no GEMM samples to predict from", v.profile_path));
    }
    std::set<std::tuple<int, int64_t, int64_t, int64_t>> profiled;
    for (const GemmSample& s : v.profile.gemm_samples) {
      profiled.insert({static_cast<int>(s.shape.dtype), s.shape.m, s.shape.n, s.shape.k});
    }
    std::vector<double> errors;
    const std::vector<GemmSample> measured = fit_gemm_samples(gemm_tables);
    if (measured.empty()) {
      throw InputError("--gemm-holdout: the files hold no measured GEMM (no row with status ok)");
    }
    for (const GemmSample& s : measured) {
      if (profiled.count({static_cast<int>(s.shape.dtype), s.shape.m, s.shape.n, s.shape.k}) > 0) {
        ++v.holdout_in_profile;
        continue;
      }
      const Duration predicted = calibrated.gemm_predictor()->predict(s.shape);
      const double error = relative_error(predicted, s.time);
      v.holdout.rows.push_back({s.shape, s.time, predicted, error});
      errors.push_back(std::fabs(error));
    }
    if (errors.empty()) {
      throw InputError("--gemm-holdout: every shape of the files is already in the profile; nothing is left to check");
    }
    std::tie(v.holdout.median_abs_error, v.holdout.max_abs_error) = median_and_max(errors);
    v.holdout_classes = gemm_class_summaries(v.holdout.rows);
  }

  // (b) attention leave-one-out.
  std::vector<AttentionSample> flash;
  for (const AttentionSample& a : v.profile.attention_samples) {
    if (a.kernel == name_of(FusedAttentionKernel::kSdpaFlash)) flash.push_back(a);
  }
  if (flash.size() >= 2) {
    const AttentionPredictor predictor(flash, gpu.peak(flash.front().shape.dtype));
    std::vector<double> errors;
    for (size_t i = 0; i < flash.size(); ++i) {
      AttentionLooRow row{flash[i].shape, flash[i].forward,
                          predictor.predict_without(flash[i].shape, AttentionPredictor::Direction::kForward, i),
                          flash[i].backward,
                          predictor.predict_without(flash[i].shape, AttentionPredictor::Direction::kBackward, i)};
      errors.push_back(std::fabs(relative_error(row.forward_predicted, row.forward_measured)));
      errors.push_back(std::fabs(relative_error(row.backward_predicted, row.backward_measured)));
      v.attention.push_back(row);
    }
    std::tie(v.attention_median, v.attention_max) = median_and_max(errors);
  }

  // (c) collectives.
  std::vector<NcclSource> sources;
  for (const std::string& path : options.nccl_raw) {
    sources.push_back({path, collective_measurements(calibrate::read_raw_table_file(path))});
  }
  for (const NcclTestsLogInput& log : options.nccl_logs) sources.push_back({log.path, collective_measurements(log)});
  for (const NcclSource& src : sources) {
    for (const CollectiveGroupFit& g : fit_collectives(src.measurements)) v.collectives.push_back(validate_group(src.name, g));
  }

  // (d) training steps.
  std::set<std::tuple<int, int64_t, int64_t, int64_t>> step_shapes;  // (dtype, m, n, k) of their GEMMs
  for (const std::string& reference : options.references) {
    std::istringstream in = [&] {
      try {
        return std::istringstream(read_input_file(reference, "reference JSON-lines file"));
      } catch (const InputError& e) {
        throw InputError(fmt::format("--reference {}", e.what()));
      }
    }();
    const std::string dir =
        options.scenario_dir.empty() ? (std::filesystem::path(default_data_dir()) / "reference").string()
                                     : options.scenario_dir;
    std::optional<CollectiveProfile> collectives;
    if (!v.profile.collectives_json.empty()) collectives = parse_collective_profile(v.profile.collectives_json);
    std::string line;
    int number = 0;
    int results = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json measured;
      try {
        measured = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        throw InputError(fmt::format("{}:{}: not a JSON line: {}", reference, number, e.what()));
      }
      if (!measured.is_object() || !measured.contains("name")) {
        throw InputError(fmt::format("{}:{}: expected a train_step.py result with \"name\"", reference, number));
      }
      ++results;
      if (measured.contains("error")) continue;  // a configuration that did not run (out of memory)
      const std::string where = fmt::format("{}:{}", reference, number);
      const ReferenceMeasurement m = parse_reference(measured, where);
      if (measured.contains("device") && measured.at("device").is_string() && !v.profile.machine.gpu.empty() &&
          measured.at("device").get<std::string>() != v.profile.machine.gpu) {
        throw InputError(fmt::format("{}: \"device\": measured on {} but the profile {} is of {}; give a profile of "
                                     "the same GPU",
                                     where, measured.at("device").get<std::string>(), v.profile.name,
                                     v.profile.machine.gpu));
      }
      // Several micro-batches per step (pipeline parallelism): one scenario per count.
      const std::string suffix = m.microbatches > 1 ? fmt::format("-m{}", m.microbatches) : "";
      const std::string scenario =
          (std::filesystem::path(dir) / (m.ranks > 1 ? fmt::format("h200x{}-{}-{}{}.yaml", m.ranks, m.name, m.variant, suffix)
                                                     : fmt::format("h200-{}.yaml", m.name)))
              .string();
      if (!std::filesystem::exists(scenario)) {
        if (m.ranks == 1) {
          throw InputError(fmt::format("{}: configuration \"{}\" has no scenario {}", where, m.name, scenario));
        }
        v.training_not_simulated.emplace_back(fmt::format("{} {}×{}{} ({})", m.name, m.variant, m.ranks,
                                                          m.microbatches > 1 ? fmt::format(", {} micro-batches", m.microbatches) : "",
                                                          where),
                                              not_simulated_reason(scenario));
        continue;
      }
      check_reference_matches(measured, load_scenario(scenario), where, scenario);
      v.training.push_back(predict_reference(m, scenario, v.profile, collectives));
      if (v.training.back().within()) ++v.training_within;
      const Scenario s = load_scenario(scenario);
      const Transformer t(s.model, s.training, ShardSpec{s.layout.tp, s.layout.sequence_parallel, s.layout.cp});
      for (const auto* ops : {&t.layer_forward(), &t.layer_backward(), &t.head_forward(), &t.head_backward()}) {
        for (const Op& op : *ops) {
          if (op.cost == OpCost::kGemm) step_shapes.insert({static_cast<int>(op.gemm.dtype), op.gemm.m, op.gemm.n, op.gemm.k});
        }
      }
    }
    if (results == 0) {
      throw InputError(fmt::format("--reference {}: no train_step.py result in the file (expected JSON lines with "
                                   "\"name\", \"step_time_ms\", ...)",
                                   reference));
    }
  }
  std::vector<double> errors;
  for (const auto& r : v.gemm.rows) {
    if (step_shapes.contains({static_cast<int>(r.shape.dtype), r.shape.m, r.shape.n, r.shape.k})) {
      v.step_gemms.push_back(r);
      errors.push_back(std::fabs(r.relative_error));
    }
  }
  std::tie(v.step_gemms_median, v.step_gemms_max) = median_and_max(errors);
  return v;
}

namespace {

// The per-class rows of a GEMM table (after its header and any leading rows) and the 12 largest
// errors.
void write_gemm_classes_and_worst(const std::vector<GemmClassSummary>& classes,
                                  std::vector<LeaveOneOutResult::Row> rows, std::ostream& out) {
  for (const GemmClassSummary& c : classes) {
    out << fmt::format("| {} | {} | {:.1f} % | {:.1f} % |\n", c.name, c.samples, 100 * c.median_abs_error,
                       100 * c.max_abs_error);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return std::fabs(a.relative_error) > std::fabs(b.relative_error); });
  rows.resize(std::min<size_t>(rows.size(), 12));
  out << "\nThe largest errors (M×N×K of the row-major GEMM C[M, N] = A[M, K]·B[K, N]; times in µs):\n\n";
  out << "| dtype | shape | class | measured | predicted | error |\n|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    out << fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {} |\n", name_of(r.shape.dtype), shape_text(r.shape),
                       alignment_name(GemmEfficiencyModel::alignment_of(r.shape)), r.measured.to_microseconds(),
                       r.predicted.to_microseconds(), percent(r.relative_error));
  }
}

}  // namespace

void write_calibration_report(const CalibrationValidation& v, const CalibrationValidationOptions& o, std::ostream& out) {
  const CalibrationProfile& p = v.profile;
  const MachineDescription& m = p.machine;
  out << "# Calibration: predicted against measured\n\n";
  std::string command = fmt::format("clustersim validate --calibration {}", o.profile);
  for (const std::string& r : o.references) command += " --reference " + r;
  for (const std::string& n : o.nccl_raw) command += " --nccl-raw " + n;
  for (const NcclTestsLogInput& l : o.nccl_logs) {
    command += fmt::format(" --nccl-tests-log {} --ranks {} --nodes {}", l.path, l.ranks, l.nodes);
  }
  for (const std::string& h : o.gemm_holdout) command += " --gemm-holdout " + h;
  if (!o.out.empty()) command += " --out " + o.out;
  out << "Generated by `" << command << "`. Do not edit by hand.\n\n";
  out << fmt::format("Profile `{}` ({}): {}, {} SMs, driver {}, CUDA {}, cuBLASLt {}, measured {}. Method: {}.\n\n",
                     p.name, v.profile_path.substr(v.profile_path.rfind('/') == std::string::npos ? 0 : v.profile_path.rfind('/') + 1),
                     m.gpu, m.sm_count, m.driver.empty() ? "?" : m.driver, m.cuda.empty() ? "?" : m.cuda,
                     m.cublas.empty() ? "?" : m.cublas, m.date.empty() ? "?" : m.date, m.method);

  out << "## Summary\n\n";
  out << "| check | result | target | met |\n|---|---|---|---|\n";
  if (!v.step_gemms.empty()) {
    out << fmt::format("| GEMM leave-one-out, the {} shapes the training steps run (misaligned LM heads included) | "
                       "median {:.1f} %, max {:.1f} % | median ≤ 5 %, max ≤ 15 % | {} |\n",
                       v.step_gemms.size(), 100 * v.step_gemms_median, 100 * v.step_gemms_max,
                       v.step_gemms_meet_target() ? "yes" : "**no**");
  }
  out << fmt::format("| GEMM leave-one-out, every sample ({} shapes, 5 dtypes) | median {:.1f} %, max {:.1f} % | median "
                     "≤ 5 %, max ≤ 15 % | {} |\n",
                     v.gemm.rows.size(), 100 * v.gemm.median_abs_error, 100 * v.gemm.max_abs_error,
                     v.gemm_meets_target() ? "yes" : "**no** (see below)");
  if (!v.training.empty()) {
    out << fmt::format("| training steps within 10 % on step time and peak memory | {} of {} | at least 6 | {} |\n",
                       v.training_within, v.training.size(), v.training_meets_target() ? "yes" : "**no**");
  }
  if (!v.holdout.rows.empty()) {
    out << fmt::format("| GEMM shapes outside the profile, predicted from all of it ({} shapes) | median {:.1f} %, max "
                       "{:.1f} % | — | — |\n",
                       v.holdout.rows.size(), 100 * v.holdout.median_abs_error, 100 * v.holdout.max_abs_error);
  }
  if (!v.attention.empty()) {
    out << fmt::format("| SDPA flash attention leave-one-out, {} shapes × 2 | median {:.1f} %, max {:.1f} % | — | — |\n",
                       v.attention.size(), 100 * v.attention_median, 100 * v.attention_max);
  }
  for (const CollectiveFitCheck& c : v.collectives) {
    out << fmt::format("| {} {} {}/{} on {} ranks, {} node(s) ({} sizes) | fitted median {:.1f} % (max {:.1f} %), left "
                       "out median {:.1f} % (max {:.1f} %) | — | — |\n",
                       c.source.substr(c.source.rfind('/') == std::string::npos ? 0 : c.source.rfind('/') + 1),
                       name_of(c.fit.op), name_of(c.fit.algorithm), name_of(c.fit.protocol), c.fit.ranks, c.fit.nodes,
                       c.rows.size(), 100 * c.median_fitted_error, 100 * c.max_fitted_error,
                       100 * c.median_left_out_error, 100 * c.max_left_out_error);
  }

  if (!v.training.empty() || !v.training_not_simulated.empty()) {
    out << "\n## Training steps\n\n";
    out << "Each configuration of the reference files (tools/reference/train_step.py on the same kind of GPU) "
           "simulated from its scenario (`scenarios/reference/h200-<name>.yaml`, or `h200x<ranks>-<name>-<variant>.yaml` "
           "for a torchrun variant on several GPUs, `h200x<ranks>-<name>-<variant>-m<micro-batches>.yaml` with several "
           "micro-batches per step; `training.framework: pytorch-eager`) with this profile. Times in ms "
           "(measured: median of the timed steps, the period from one step's start to the next, the slowest rank's); "
           "memory: `torch.cuda.max_memory_allocated` (the largest rank's) against the predicted peak without the "
           "runtime overhead, GiB. Error = predicted / measured − 1. The predicted forward and backward columns are "
           "the one-GPU compute sums; a torchrun row's measured backward also holds the communication the step "
           "waits for, so only its step time is compared (—).\n\n";
    if (!v.training.empty()) {
      out << "| configuration | params | step measured | step predicted | error | fwd meas. / pred. | bwd meas. / "
             "pred. | opt meas. / pred. | peak measured | peak predicted | error | peak moment | within 10 % |\n";
      out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
      for (const TrainingValidationRow& r : v.training) {
        const auto phase = [&](double predicted) { return r.ranks > 1 ? std::string("—") : fmt::format("{:.1f}", predicted); };
        out << fmt::format("| {} | {:.2f} B | {:.1f} | {:.1f} | {} | {:.1f} / {} | {:.1f} / {} | {:.1f} / {:.1f} | "
                           "{:.2f} | {:.2f} | {} | {} | {} |\n",
                           r.name, static_cast<double>(r.parameters) * 1e-9, r.step_ms, r.predicted_step_ms, percent(r.step_error),
                           r.forward_ms, phase(r.predicted_forward_ms), r.backward_ms, phase(r.predicted_backward_ms), r.optimizer_ms,
                           r.predicted_optimizer_ms, static_cast<double>(r.peak_bytes) / 1073741824.0,
                           static_cast<double>(r.predicted_peak_bytes) / 1073741824.0, percent(r.memory_error),
                           r.peak_moment, r.within() ? "yes" : "**no**");
      }
      std::vector<double> step_errors, memory_errors;
      for (const TrainingValidationRow& r : v.training) {
        step_errors.push_back(std::fabs(r.step_error));
        memory_errors.push_back(std::fabs(r.memory_error));
      }
      const auto [sm, sx] = median_and_max(step_errors);
      const auto [mm, mx] = median_and_max(memory_errors);
      out << fmt::format("\nStep time |error|: median {:.1f} %, max {:.1f} %. Peak memory |error|: median {:.1f} %, max "
                         "{:.1f} %.\n",
                         100 * sm, 100 * sx, 100 * mm, 100 * mx);
    }
    if (!v.training_not_simulated.empty()) {
      out << "\nMeasured but not simulated:\n\n";
      for (const auto& [name, reason] : v.training_not_simulated) out << fmt::format("- {}: {}.\n", name, reason);
    }
  }

  out << "\n## GEMM leave-one-out\n\n";
  out << "Each sample of the profile predicted by GemmPredictor from all the others (its shape's own "
         "measurements left out: repeated measurements of a shape are one sample). Per dtype and alignment class "
         "(cost_models/gemm_efficiency_model.h: a leading dimension not a multiple of 16 bytes takes cuBLAS's slow "
         "path; fp32 runs on the CUDA cores and has none). The baseline that the samples correct is "
         "cost_models/gemm_kernel_model.h:\n\n";
  out << "| class | shapes | median |error| | max |error| |\n|---|---|---|---|\n";
  if (!v.step_gemms.empty()) {
    out << fmt::format("| the training steps' GEMMs | {} | {:.1f} % | {:.1f} % |\n", v.step_gemms.size(),
                       100 * v.step_gemms_median, 100 * v.step_gemms_max);
  }
  write_gemm_classes_and_worst(v.gemm_classes, v.gemm.rows, out);

  if (!v.holdout.rows.empty()) {
    out << "\n## GEMM shapes outside the profile\n\n";
    out << fmt::format(
        "{} shapes measured apart from the profile (--gemm-holdout; each the median of its files' measurements), "
        "predicted by GemmPredictor from every sample of the profile{}. No target of the issue applies (its target "
        "is the leave-one-out one); this is how the leave-one-out figures carry over to shapes the profile never "
        "saw.\n\n",
        v.holdout.rows.size(),
        v.holdout_in_profile > 0 ? fmt::format(" ({} more are in the profile and not checked)", v.holdout_in_profile)
                                 : "");
    out << "| class | shapes | median |error| | max |error| |\n|---|---|---|---|\n";
    out << fmt::format("| every shape | {} | {:.1f} % | {:.1f} % |\n", v.holdout.rows.size(),
                       100 * v.holdout.median_abs_error, 100 * v.holdout.max_abs_error);
    write_gemm_classes_and_worst(v.holdout_classes, v.holdout.rows, out);
  }

  if (!v.attention.empty()) {
    out << "\n## SDPA flash attention leave-one-out\n\n";
    out << "PyTorch's flash backend (FlashAttention-2), causal, bf16; each shape predicted from the others "
           "(AttentionPredictor). Times in µs.\n\n";
    out << "| batch | heads | kv heads | seq | head dim | fwd measured | fwd predicted | error | bwd measured | bwd "
           "predicted | error |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const AttentionLooRow& r : v.attention) {
      out << fmt::format("| {} | {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {:.1f} | {:.1f} | {} |\n", r.shape.batch,
                         r.shape.heads, r.shape.kv_heads, r.shape.seq, r.shape.head_dim,
                         r.forward_measured.to_microseconds(), r.forward_predicted.to_microseconds(),
                         percent(relative_error(r.forward_predicted, r.forward_measured)),
                         r.backward_measured.to_microseconds(), r.backward_predicted.to_microseconds(),
                         percent(relative_error(r.backward_predicted, r.backward_measured)));
    }
  }

  out << "\n## Collectives\n\n";
  if (v.collectives.empty()) {
    out << "No NCCL measurement was given (--nccl-raw, --nccl-tests-log).\n";
  }
  for (const CollectiveFitCheck& c : v.collectives) {
    out << fmt::format("### {}: {} ({} / {}), {} ranks on {} node(s)\n\n", c.source, name_of(c.fit.op),
                       name_of(c.fit.algorithm), name_of(c.fit.protocol), c.fit.ranks, c.fit.nodes);
    out << fmt::format("Piecewise α–β fit ({} size regimes, RMS relative error {:.1f} %):\n\n", c.fit.segments.size(),
                       100 * c.fit_rms);
    out << "| sizes | latency α | bandwidth 1/β |\n|---|---|---|\n";
    for (const CollectiveFitSegment& s : c.fit.segments) {
      out << fmt::format("| {} – {} B | {:.1f} µs | {:.2f} GB/s |\n", s.min_size.count(), s.max_size.count(),
                         s.latency.to_microseconds(), s.bandwidth.gigabytes_per_second());
    }
    out << "\n| size (B) | measured (µs) | fitted (µs) | error | left out (µs) | error |\n|---|---|---|---|---|---|\n";
    for (const CollectiveFitCheckRow& r : c.rows) {
      out << fmt::format("| {} | {:.1f} | {:.1f} | {} | {:.1f} | {} |\n", r.size.count(), r.measured.to_microseconds(),
                         r.fitted.to_microseconds(), percent(relative_error(r.fitted, r.measured)),
                         r.left_out.to_microseconds(),
                         r.left_out.ps() > 0 ? percent(relative_error(r.left_out, r.measured)) : std::string("—"));
    }
    out << "\n";
  }
}

int validate_calibration_command(const CalibrationValidationOptions& options, std::ostream& out, std::ostream& err) {
  const CalibrationValidation v = validate_calibration(options);
  write_output(options.out, "--out", out, [&](std::ostream& f) { write_calibration_report(v, options, f); });
  if (!options.out.empty()) err << "wrote " << options.out << "\n";
  if (!v.step_gemms.empty()) {
    err << fmt::format("GEMM leave-one-out over the {} shapes of the training steps: median {:.1f} %, max {:.1f} % ({})\n",
                       v.step_gemms.size(), 100 * v.step_gemms_median, 100 * v.step_gemms_max,
                       v.step_gemms_meet_target() ? "target met" : "target missed: median <= 5 %, max <= 15 %");
  }
  err << fmt::format("GEMM leave-one-out over every sample ({} shapes): median {:.1f} %, max {:.1f} % ({})\n",
                     v.gemm.rows.size(), 100 * v.gemm.median_abs_error, 100 * v.gemm.max_abs_error,
                     v.gemm_meets_target() ? "target met" : "target missed: median <= 5 %, max <= 15 %");
  if (!v.holdout.rows.empty()) {
    err << fmt::format("GEMM shapes outside the profile ({}): median {:.1f} %, max {:.1f} %\n", v.holdout.rows.size(),
                       100 * v.holdout.median_abs_error, 100 * v.holdout.max_abs_error);
  }
  if (!v.training.empty()) {
    err << fmt::format("training steps within 10 % on step time and peak memory: {} of {} ({})\n", v.training_within,
                       v.training.size(), v.training_meets_target() ? "target met" : "target missed: at least 6");
  }
  if (!v.training_not_simulated.empty()) {
    err << fmt::format("measured but not simulated (no scenario; listed in the report): {}\n",
                       v.training_not_simulated.size());
  }
  // Exit 3 when any target of the summary (docs/validation/calibration.md, Summary) is missed.
  const bool ok = v.step_gemms_meet_target() && v.gemm_meets_target() && (v.training.empty() || v.training_meets_target());
  return ok ? 0 : 3;
}

}  // namespace clustersim
