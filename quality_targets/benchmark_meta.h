// What the official tools know per benchmark and ruleset besides the rule
// files and RCP tables, read from quality_targets/benchmarks.json (compiled
// in): result files per submission, runs the RCP statistics assume, olympic
// scoring, where a run's convergence point is read, which benchmarks each
// round allows, and what a system description must hold.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quality_targets/embedded_file.h"

namespace mlperf::meta {

// Where the RCP checker reads the point at which a run converged.
enum class ConvergedAt {
  kEpochNum,                // the eval line's epoch_num
  kEpochNumOrTrainSamples,  // epoch_num, or train_samples with --bert_train_samples
  kEvalSamplesCount,        // the eval line's samples_count
  kFidAndClip,              // the first eval step meeting both FID and CLIP targets
};

struct BenchmarkMeta {
  std::string name;
  int result_files = 0;         // result logs a closed submission directory holds
  std::optional<int> rcp_runs;  // runs the RCP statistics assume; none: unknown to the RCP checker
  int olympic_drop_per_side =
      1;                    // runs olympic scoring drops at each end (and may miss the target)
  bool rcp_checked = true;  // false: the package checker never runs the RCP check
  ConvergedAt converged_at = ConvergedAt::kEpochNum;
  // kFidAndClip only: the targets and the eval-step metadata key per ruleset.
  double fid_at_most = 0;
  double clip_at_least = 0;
  std::map<std::string, std::string> eval_step_key;  // ruleset or "default" -> key
  // From `min_mean_allowance_from` on, the minimum acceptable mean is lowered
  // by this many samples.
  std::optional<double> min_mean_allowance_samples;
  std::string min_mean_allowance_from;

  std::string EvalStepKey(const std::string& ruleset) const;
};

struct SystemDescriptionRules {
  std::vector<std::string> required_fields;
  std::vector<std::string> status_values;
  std::string status_checked_from;  // ruleset from which `status` must be one of status_values
};

// nullptr for a benchmark the official tools do not know.
const BenchmarkMeta* FindBenchmark(std::string_view name);

// Shorthands for FindBenchmark: nullopt (olympic: 1) for an unknown benchmark.
std::optional<int> ResultFiles(std::string_view benchmark);
std::optional<int> RcpRuns(std::string_view benchmark);
int OlympicDropPerSide(std::string_view benchmark);

// Benchmarks a training ruleset allows, in the summarizer's column order (the
// ruleset itself, else without its last component: "6.1.0" -> "6.1"); empty
// for an unknown ruleset.
std::vector<std::string> AllowedBenchmarks(const std::string& ruleset);

// Rulesets the package checker runs the RCP check for.
const std::vector<std::string>& RcpRulesets();

const SystemDescriptionRules& SystemDescription();

// Numerically per dotted component, shorter padded with zeros: "5.1.0" >= "5.0".
bool RulesetAtLeast(const std::string& ruleset, const std::string& minimum);

// The embedded benchmarks.json (for tests and tools that print it).
std::span<const EmbeddedFile> EmbeddedBenchmarkMeta();

}  // namespace mlperf::meta
