// Mean, population standard deviation and linear interpolation computed with
// the same floating-point operations as numpy (np.mean, np.std, np.interp),
// so that RCP statistics and olympic means agree with the official tools to
// the last bit, not only to a tolerance.
#pragma once

#include <span>

namespace mlperf::package {

// np.sum over a contiguous float64 array: pairwise summation with eight
// accumulators in blocks of at most 128 values.
double NumpySum(std::span<const double> values);

// np.mean: NumpySum / n. NaN for an empty span (numpy warns and returns nan).
double NumpyMean(std::span<const double> values);

// np.std with ddof=0 (the population standard deviation).
double NumpyPopulationStdev(std::span<const double> values);

// np.interp(x, [x0, x1], [y0, y1]) for x0 <= x <= x1.
double NumpyInterp(double x, double x0, double x1, double y0, double y1);

}  // namespace mlperf::package
