#include "throughput/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace mlperf::throughput {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy's 'linear' method on sorted values: index q/100 * (n - 1).
double SortedPercentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double index = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(index));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = index - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

std::vector<double> Sorted(std::span<const double> values) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return v;
}

double Mean(std::span<const double> values) {
  if (values.empty()) return kNaN;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace

double Percentile(std::span<const double> values, double q) {
  return SortedPercentile(Sorted(values), q);
}

Spread Summarize(std::span<const double> values) {
  const std::vector<double> v = Sorted(values);
  if (v.empty()) return {kNaN, kNaN, kNaN, kNaN};
  return {SortedPercentile(v, 50), Mean(values), v.front(), v.back()};
}

Latency SummarizeLatency(std::span<const double> seconds) {
  const std::vector<double> v = Sorted(seconds);
  if (v.empty()) return {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  return {Mean(seconds),           SortedPercentile(v, 50), SortedPercentile(v, 90),
          SortedPercentile(v, 95), SortedPercentile(v, 99), v.back()};
}

}  // namespace mlperf::throughput
