#include "checker/package/numpy_stats.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mlperf::package {

double NumpySum(std::span<const double> a) {
  const size_t n = a.size();
  constexpr size_t kBlock = 128;
  if (n < 8) {
    double sum = 0.0;
    for (double x : a) sum += x;
    return sum;
  }
  if (n <= kBlock) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return NumpySum(a.first(half)) + NumpySum(a.subspan(half));
}

double NumpyMean(std::span<const double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return NumpySum(values) / static_cast<double>(values.size());
}

double NumpyPopulationStdev(std::span<const double> values) {
  const double mean = NumpyMean(values);
  std::vector<double> squares;
  squares.reserve(values.size());
  for (double x : values) squares.push_back((x - mean) * (x - mean));
  return std::sqrt(NumpySum(squares) / static_cast<double>(values.size()));
}

double NumpyInterp(double x, double x0, double x1, double y0, double y1) {
  // numpy returns the right end point exactly, which also covers x0 == x1.
  if (x == x1) return y1;
  const double slope = (y1 - y0) / (x1 - x0);
  double y = slope * (x - x0) + y0;
  if (std::isnan(y)) {
    y = slope * (x - x1) + y1;
    if (std::isnan(y) && y0 == y1) y = y0;
  }
  return y;
}

}  // namespace mlperf::package
