#include "checker/package/benchmark_score.h"

#include "base/json.h"
#include "checker/package/olympic_mean.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {

double SummarizerScalingFactor(ScalingSource source, std::optional<double> existing,
                               const absl::StatusOr<RcpVerdict>* rcp) {
  // package_checker's RCP comparison deletes scaling.json and writes it back
  // only for a pass faster than the RCP mean; checks that stop before the
  // comparison (or raise) leave the file alone.
  if (source == ScalingSource::kAfterPackageChecker && rcp && rcp->ok() && (*rcp)->compared) {
    return (*rcp)->scaling_factor_written.value_or(1.0);
  }
  return existing.value_or(1.0);
}

BenchmarkScore ScoreBenchmark(const std::string& benchmark, const std::vector<RunTime>& runs,
                              double scaling_factor) {
  BenchmarkScore s;
  s.max_dropped = meta::OlympicDropPerSide(benchmark);
  s.scaling_factor = scaling_factor;
  std::vector<double> minutes;
  std::vector<size_t> run_of;  // minutes[i] is runs[run_of[i]]
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].compliant && runs[i].minutes) {
      minutes.push_back(*runs[i].minutes);
      run_of.push_back(i);
    } else {
      ++s.dropped_runs;
    }
  }
  s.olympic_mean = OlympicScore(minutes, s.dropped_runs, s.max_dropped);
  s.counted.assign(runs.size(), false);
  if (s.olympic_mean) {
    for (size_t i : OlympicCounted(minutes, s.dropped_runs, s.max_dropped))
      s.counted[run_of[i]] = true;
  }
  if (s.olympic_mean) s.score = *s.olympic_mean * scaling_factor;
  return s;
}

absl::StatusOr<double> ParseScalingJson(const std::string& text, const std::string& path) {
  absl::StatusOr<json::Value> doc = json::Parse(text, {.encoding = json::Encoding::kUtf8});
  if (!doc.ok())
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path, std::string(doc.status().message())));
  const json::Value* f = doc->Find("scaling_factor");
  if (!f || !f->is_number()) {
    return absl::InvalidArgumentError(fmt::format("{}: expected a number 'scaling_factor'", path));
  }
  return f->as_float();
}

}  // namespace mlperf::package
