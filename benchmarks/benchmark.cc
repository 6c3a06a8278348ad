#include "benchmarks/benchmark.h"

#include <algorithm>

#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"
#include "quality_targets/quality_target.h"

namespace mlperf::benchmarks {

absl::Status ReadRules(const BenchmarkInfo& info, const RunnerOptions& options, RunPlan& plan) {
  if (info.own_rules.has_value()) {
    if (!options.ruleset.empty() && options.ruleset != info.own_rules->ruleset) {
      return absl::InvalidArgumentError(fmt::format("--ruleset={}: {} follows ruleset {} only",
                                                    options.ruleset, info.name,
                                                    info.own_rules->ruleset));
    }
    absl::StatusOr<quality::QualityTarget> target =
        quality::QualityTarget::Parse(info.own_rules->target);
    if (!target.ok()) return target.status();
    plan.ruleset = info.own_rules->ruleset;
    plan.target = *target;
    plan.required_runs = info.own_rules->required_runs;
    plan.allowed_missed_runs = info.own_rules->allowed_missed_runs;
    return absl::OkStatus();
  }
  if (options.ruleset.empty()) {
    absl::StatusOr<std::string> newest = quality::NewestRulesetFor(info.name);
    if (!newest.ok()) return newest.status();
    plan.ruleset = *newest;
  } else if (quality::RulesetAccepts(options.ruleset, info.name)) {
    plan.ruleset = options.ruleset;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "--ruleset={}: that round does not accept {} (the newest that does: {})", options.ruleset,
        info.name, quality::NewestRulesetFor(info.name).value_or("none")));
  }
  absl::StatusOr<quality::QualityTarget> target =
      quality::ReadQualityTarget(plan.ruleset, info.name);
  if (!target.ok()) return target.status();
  plan.target = *target;
  const std::optional<int> runs = meta::ResultFiles(info.name);
  if (!runs.has_value())
    return absl::NotFoundError(fmt::format("benchmarks.json has no run count for {}", info.name));
  plan.required_runs = *runs;
  plan.allowed_missed_runs = meta::OlympicDropPerSide(info.name);
  return absl::OkStatus();
}

train::TrainerConfig TrainerConfigFor(const RunPlan& plan) {
  return {.gradient_accumulation_steps = plan.gradient_accumulation_steps,
          .dynamic_loss_scaling = plan.precision == core::DType::kF16,
          .cuda_graph = plan.cuda_graph};
}

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Benchmark::Configure(
    const RunnerOptions& options, int world_size, const ProcessShare& share) const {
  const BenchmarkInfo& i = info();
  for (const auto& [flag, value] : options.flags) {
    if (std::find(i.flags.begin(), i.flags.end(), flag) == i.flags.end())
      return absl::InvalidArgumentError(fmt::format("--{}: not a flag of {}", flag, i.name));
  }
  RunPlan plan;
  plan.options = options;
  plan.demo = options.data_dir.empty();
  if (absl::Status s = ReadRules(i, options, plan); !s.ok()) return s;
  if (options.member != "" && options.member != "full" && options.member != "small") {
    return absl::InvalidArgumentError(
        fmt::format("model size '{}': expected full or small", options.member));
  }
  plan.small = options.member.empty() ? plan.demo : options.member == "small";
  const int tp = options.tensor_parallel;
  if (tp > 1 && !i.tensor_parallel) {
    return absl::InvalidArgumentError(fmt::format(
        "--tensor_parallel={}: {} has no tensor-parallel layout (every process holds the whole "
        "model)",
        tp, i.name));
  }
  if (tp > 1 && options.gpus > 0) {
    return absl::InvalidArgumentError(fmt::format(
        "--tensor_parallel={} with --gpus: the tensor-parallel groups run on the CPU's MPI "
        "only so far",
        tp));
  }
  if (tp < 1 || world_size % tp != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "--tensor_parallel={}: the {} process(es) launched do not form groups of {} (launch a "
        "multiple of it)",
        tp, world_size, tp));
  }
  plan.tensor_parallel = tp;
  if (options.precision == "fp8" && !i.fp8) {
    return absl::InvalidArgumentError(fmt::format(
        "precision fp8: {} has no FP8 layers (FP8 runs the transformer blocks' linear layers "
        "of BERT and the decoders); use fp32, bf16 or fp16",
        i.name));
  }
  return ConfigureFor(std::move(plan), world_size / tp, share);
}

}  // namespace mlperf::benchmarks
