#include "closed_division/progress.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "fmt/format.h"

namespace mlperf::closed {

ProgressReporter::ProgressReporter(int runs, int last_epoch, quality::QualityTarget target,
                                   std::string metric, std::FILE* out)
    : runs_(runs),
      last_epoch_(last_epoch),
      target_(std::move(target)),
      metric_(std::move(metric)),
      out_(out) {}

std::string ProgressReporter::FormatDuration(double seconds) {
  const int64_t s = std::max<int64_t>(0, std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

void ProgressReporter::Print(const std::string& line) {
  if (out_ == nullptr) return;
  std::fputs(line.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

double ProgressReporter::EstimateSecondsLeft(int run, int epoch, double seconds_in_run) const {
  const double per_epoch = epoch > 0 ? seconds_in_run / epoch : 0.0;
  int expected_epochs = last_epoch_;
  if (!run_epochs_.empty()) {
    const double mean = std::accumulate(run_epochs_.begin(), run_epochs_.end(), 0.0) /
                        static_cast<double>(run_epochs_.size());
    expected_epochs = static_cast<int>(std::ceil(mean));
  }
  const double this_run = std::max(0, std::max(expected_epochs, epoch + 1) - epoch) * per_epoch;
  const double per_run = run_seconds_.empty()
                             ? per_epoch * expected_epochs
                             : std::accumulate(run_seconds_.begin(), run_seconds_.end(), 0.0) /
                                   static_cast<double>(run_seconds_.size());
  return this_run + per_run * (runs_ - run - 1);
}

void ProgressReporter::RunStarted(int run) {
  last_metric_.reset();
  Print(fmt::format("run {}/{}: started", run + 1, runs_));
}

void ProgressReporter::EpochDone(int run, int epoch, double images_per_second,
                                 double seconds_in_run) {
  const std::string accuracy = last_metric_.has_value()
                                   ? fmt::format("{} {:.4f}", metric_, *last_metric_)
                                   : fmt::format("{} -     ", metric_);
  Print(fmt::format("run {}/{}  epoch {:>3}/{}  {}  {:>8.1f} samples/s  ~{} left", run + 1, runs_,
                    epoch, last_epoch_, accuracy, images_per_second,
                    FormatDuration(EstimateSecondsLeft(run, epoch, seconds_in_run))));
}

void ProgressReporter::EvalDone(int run, int epoch, double metric, double seconds_in_run) {
  last_metric_ = metric;
  Print(fmt::format("run {}/{}  eval after epoch {}: {} {:.4f} (target {}){}  ~{} left", run + 1,
                    runs_, epoch, metric_, metric, target_.Describe(),
                    target_.Reached(metric) ? " reached" : "",
                    FormatDuration(EstimateSecondsLeft(run, epoch, seconds_in_run))));
}

void ProgressReporter::RunFinished(int run, int epochs, double seconds, bool converged) {
  run_seconds_.push_back(seconds);
  if (converged) run_epochs_.push_back(epochs);
  Print(fmt::format("run {}/{}: {} after {} epochs in {}", run + 1, runs_,
                    converged ? "reached the target" : "did NOT reach the target", epochs,
                    FormatDuration(seconds)));
}

}  // namespace mlperf::closed
