// The smallest submission mean that the RCP checker accepts for a reference
// convergence point (spec 6.4, find_min_acceptable_mean): the mean below which
// a one-sided equal-variance t-test at alpha = 0.05 says the submission
// converges significantly faster than the reference.
#pragma once

namespace mlperf::package {

inline constexpr double kRcpAlpha = 0.05;
// Bisection stops at this absolute width, also for RCPs counted in samples.
inline constexpr double kRcpMinEpochsTolerance = 0.0001;

// `n_ref` is the number of reference runs behind the statistics;
// `submission_runs` the benchmark's runs per submission (the test uses
// submission_runs - 2, also for unet3d, as the official tool does).
// A zero stdev accepts exactly the mean.
double RcpMinEpochs(double rcp_mean, double rcp_stdev, int n_ref, int submission_runs);

// The t statistic of scipy.stats.ttest_ind_from_stats(m1, s, n1, m2, s, n2,
// equal_var=True), with the same floating-point operations.
double EqualVarianceT(double m1, double s, int n1, double m2, int n2);

}  // namespace mlperf::package
