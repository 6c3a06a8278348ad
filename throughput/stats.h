// The statistics of a benchmark report, defined as numpy defines them so that
// anyone can recompute them from the recorded times.
#pragma once

#include <span>

namespace mlperf::throughput {

// numpy.percentile(values, q) with its default linear interpolation between
// the order statistics; q in [0, 100]. NaN for no values.
double Percentile(std::span<const double> values, double q);

// Median, mean, min and max (NaN each for no values).
struct Spread {
  double median, mean, min, max;
};
Spread Summarize(std::span<const double> values);

// Per-batch latencies: mean, true percentiles (not trimmed means) and max.
struct Latency {
  double mean, p50, p90, p95, p99, max;
};
Latency SummarizeLatency(std::span<const double> seconds);

}  // namespace mlperf::throughput
