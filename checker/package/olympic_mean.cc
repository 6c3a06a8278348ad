#include "checker/package/olympic_mean.h"

#include <algorithm>
#include <cstdint>

#include "checker/package/numpy_stats.h"

namespace mlperf::package {
namespace {

// values[begin:end] for a sorted vector, Python slice rules for end.
std::vector<double> PythonSlice(const std::vector<double>& values, int64_t begin, int64_t end) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (end < 0) end = std::max<int64_t>(end + n, 0);
  begin = std::min(begin, n);
  end = std::min(end, n);
  if (end <= begin) return {};
  return std::vector<double>(values.begin() + begin, values.begin() + end);
}

}  // namespace

std::vector<double> OlympicTrim(std::vector<double> values, int drop) {
  std::sort(values.begin(), values.end());
  const int64_t n = static_cast<int64_t>(values.size());
  return PythonSlice(values, drop, n - drop);
}

double OlympicMean(std::vector<double> values, int drop) {
  return NumpyMean(OlympicTrim(std::move(values), drop));
}

std::optional<double> OlympicScore(std::vector<double> minutes, int dropped_runs, int max_dropped) {
  if (dropped_runs > max_dropped) return std::nullopt;
  std::sort(minutes.begin(), minutes.end());
  const int64_t n = static_cast<int64_t>(minutes.size());
  const std::vector<double> countable =
      PythonSlice(minutes, max_dropped, n - (max_dropped - dropped_runs));
  if (countable.empty()) return std::nullopt;
  double sum = 0;  // Python 3.11 sum(): left to right, uncompensated
  for (double m : countable) sum += m;
  return sum * 1.0 / static_cast<double>(countable.size());
}

}  // namespace mlperf::package
