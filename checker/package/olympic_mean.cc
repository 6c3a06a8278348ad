#include "checker/package/olympic_mean.h"

#include <algorithm>
#include <cstdint>

#include "checker/package/numpy_stats.h"

namespace mlperf::package {
namespace {

// values[begin:end] for a sorted vector, Python slice rules for end.
template <typename T>
std::vector<T> PythonSlice(const std::vector<T>& values, int64_t begin, int64_t end) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (end < 0) end = std::max<int64_t>(end + n, 0);
  begin = std::min(begin, n);
  end = std::min(end, n);
  if (end <= begin) return {};
  return std::vector<T>(values.begin() + begin, values.begin() + end);
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

std::vector<size_t> OlympicCounted(const std::vector<double>& minutes, int dropped_runs,
                                   int max_dropped) {
  if (dropped_runs > max_dropped) return {};
  std::vector<size_t> order(minutes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return minutes[a] < minutes[b]; });
  const int64_t n = static_cast<int64_t>(order.size());
  return PythonSlice(order, max_dropped, n - (max_dropped - dropped_runs));
}

std::optional<double> OlympicScore(std::vector<double> minutes, int dropped_runs, int max_dropped) {
  const std::vector<size_t> counted = OlympicCounted(minutes, dropped_runs, max_dropped);
  if (counted.empty()) return std::nullopt;
  double sum = 0;  // Python 3.11 sum(): left to right (ascending), uncompensated
  for (size_t i : counted) sum += minutes[i];
  return sum * 1.0 / static_cast<double>(counted.size());
}

}  // namespace mlperf::package
