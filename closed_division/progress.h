// Progress on stderr while run_closed trains: one line per epoch and one per
// evaluation, with the run, the epoch, the last metric, samples/s and an
// estimate of the time left for the whole invocation.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "quality_targets/quality_target.h"

namespace mlperf::closed {

class ProgressReporter {
 public:
  // `last_epoch`: the schedule's last epoch (a run ends there at the latest).
  // `metric` names the evaluation metric in the lines ("top-1", "mean DICE").
  ProgressReporter(int runs, int last_epoch, quality::QualityTarget target, std::string metric,
                   std::FILE* out);

  void RunStarted(int run);
  void EpochDone(int run, int epoch, double images_per_second, double seconds_in_run);
  void EvalDone(int run, int epoch, double metric, double seconds_in_run);
  void RunFinished(int run, int epochs, double seconds, bool converged);

  // Seconds left for this and the remaining runs: the rest of the current
  // run at its epoch rate (up to the epoch earlier runs converged at, or the
  // schedule's end), plus the remaining runs at the mean run time so far.
  double EstimateSecondsLeft(int run, int epoch, double seconds_in_run) const;

  static std::string FormatDuration(double seconds);

 private:
  void Print(const std::string& line);

  int runs_;
  int last_epoch_;
  quality::QualityTarget target_;
  std::string metric_;
  std::FILE* out_;
  std::optional<double> last_metric_;
  std::vector<double> run_seconds_;
  std::vector<int> run_epochs_;
};

}  // namespace mlperf::closed
