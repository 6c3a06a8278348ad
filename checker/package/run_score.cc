#include "checker/package/run_score.h"

#include <optional>

#include "fmt/format.h"

namespace mlperf::package {

absl::StatusOr<double> RunMinutes(const mllog::ParsedLog& log) {
  std::optional<double> start, stop;
  for (const mllog::LogLine& line : log.lines) {
    if (line.key == "run_start") start = line.time_ms;
    if (line.key == "run_stop") stop = line.time_ms;
    if (start && stop) break;
  }
  if (!start)
    return absl::InvalidArgumentError(fmt::format("run_start not recorded in {}", log.path));
  if (!stop)
    return absl::InvalidArgumentError(fmt::format("run_stop not recorded in {}", log.path));
  const double minutes = (*stop - *start) / 60 / 1000;
  if (minutes < 0) {
    return absl::OutOfRangeError(
        fmt::format("run_stop is logged {:.3f} minutes before run_start: a time to train cannot "
                    "be negative",
                    -minutes));
  }
  return minutes;
}

}  // namespace mlperf::package
