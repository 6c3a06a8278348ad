// Per-benchmark numbers the official tools hard-code: how many runs a
// submission has (RCP statistics, rcp_checker.submission_runs), how many
// result files a directory must hold (benchmark_meta), and how many runs
// olympic scoring drops per side.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mlperf::package {

// Runs per submission used by the RCP statistics (spec 6.2); nullopt for a
// benchmark the official RCP checker does not know (it raises a KeyError).
std::optional<int> SubmissionRuns(const std::string& benchmark);

// Result files a closed submission directory must contain (spec 7.2,
// benchmark_meta, version independent); nullopt for an unknown benchmark.
std::optional<int> RequiredResultFiles(const std::string& benchmark);

// Runs dropped from each end by olympic scoring: 4 for unet3d, else 1
// (rcp_checker samples_rejected, result summarizer max dropped).
int OlympicDropPerSide(const std::string& benchmark);

// Benchmarks a training ruleset allows (benchmark_meta, looked up by the full
// ruleset, else by "X.Y"), in the summarizer's column order; empty if unknown.
std::vector<std::string> AllowedBenchmarks(const std::string& ruleset);

}  // namespace mlperf::package
