// Energy to train from a run's power logs, as the result summarizer computes
// its "Energy" column (HEAD): for each power/result_N/node_*.txt, the
// readings integrated from power_measurement_start (each reading times the
// time since the previous one) up to power_measurement_stop, scaled to the
// run's time to train and by conversion_eff; for each sw_*.txt its
// interconnect_power_est times the time to train. The directory's energy is
// the olympic mean of the runs' energies in the order of their times, times
// the score's scaling factor.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::package {

// One run's energy (the summarizer's unit: power x milliseconds / 1000). An
// error where the official summarizer raises: no node file, a node file
// without power_measurement_start, a file that cannot be read.
absl::StatusOr<double> RunEnergy(const std::filesystem::path& power_dir, const std::string& stem,
                                 double time_to_train_ms);

// The olympic mean of `energies` (one per scored run, in run order) ordered
// by `minutes` (the same runs' times), with `dropped` runs already dropped
// and `max_dropped` per side; nullopt when none remain.
std::optional<double> OlympicEnergy(const std::vector<double>& energies,
                                    const std::vector<double>& minutes, int dropped,
                                    int max_dropped);

}  // namespace mlperf::package
