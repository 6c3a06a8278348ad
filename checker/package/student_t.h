// Student's t distribution, for the one-sided equal-variance t-test behind the
// RCP "minimum acceptable mean" (spec 6.4; the official tool calls
// scipy.stats.ttest_ind_from_stats).
#pragma once

namespace mlperf::package {

// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and
// 0 <= x <= 1.
double RegularizedIncompleteBeta(double a, double b, double x);

// x with I_x(a, b) = p, for 0 <= p <= 1.
double InverseRegularizedIncompleteBeta(double a, double b, double p);

// P(T <= t) for T ~ Student t with df > 0 degrees of freedom.
double StudentTCdf(double t, double df);

// The p-quantile (scipy.stats.t.ppf): t with StudentTCdf(t, df) = p, for
// 0 < p < 1; -inf / +inf at 0 / 1.
double StudentTQuantile(double p, double df);

}  // namespace mlperf::package
