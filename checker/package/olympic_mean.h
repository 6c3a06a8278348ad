// Olympic averaging as the two official tools do it: the RCP checker trims
// `drop` values from each end and takes numpy's mean (spec 6.4, 6.5); the
// result summarizer drops the `max_dropped` fastest runs and counts each
// dropped (non-compliant) run as one of the slowest (spec 8.2).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace mlperf::package {

// sorted(values)[drop : len - drop] with Python slice semantics (a negative
// end counts from the back; an empty result when too few values).
std::vector<double> OlympicTrim(std::vector<double> values, int drop);

// np.mean(OlympicTrim(values, drop)); NaN when nothing is left.
double OlympicMean(std::vector<double> values, int drop);

// The summarizer's benchmark score before scaling: of the sorted valid run
// times, drop the `max_dropped` fastest and (max_dropped - dropped_runs)
// slowest, then sum()/len in Python's order. nullopt when nothing is left or
// when dropped_runs > max_dropped (the summarizer leaves the cell empty).
std::optional<double> OlympicScore(std::vector<double> minutes, int dropped_runs, int max_dropped);

// The indices into `minutes` that OlympicScore averages (fastest first).
std::vector<size_t> OlympicCounted(const std::vector<double>& minutes, int dropped_runs,
                                   int max_dropped);

}  // namespace mlperf::package
