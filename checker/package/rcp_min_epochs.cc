#include "checker/package/rcp_min_epochs.h"

#include <cmath>

#include "checker/package/student_t.h"

namespace mlperf::package {

double EqualVarianceT(double m1, double s, int n1, double m2, int n2) {
  const double v = s * s;
  const double df = n1 + n2 - 2.0;
  const double pooled = ((n1 - 1) * v + (n2 - 1) * v) / df;
  return (m1 - m2) / std::sqrt(pooled * (1.0 / n1 + 1.0 / n2));
}

double RcpMinEpochs(double rcp_mean, double rcp_stdev, int n_ref, int submission_runs) {
  if (rcp_stdev == 0) return rcp_mean;
  const int n_subm = submission_runs - 2;
  // The official one-sided p-value exceeds alpha exactly when t exceeds the
  // alpha-quantile of Student's t with n_ref + n_subm - 2 degrees of freedom.
  const double t_alpha = StudentTQuantile(kRcpAlpha, n_ref + n_subm - 2.0);
  double lo = 0.0, hi = rcp_mean;
  double mid = (lo + hi) / 2;
  while (hi - lo > kRcpMinEpochsTolerance) {
    if (EqualVarianceT(mid, rcp_stdev, n_ref, rcp_mean, n_subm) > t_alpha) {
      hi = mid;
    } else {
      lo = mid;
    }
    mid = (lo + hi) / 2;
  }
  return mid;
}

}  // namespace mlperf::package
