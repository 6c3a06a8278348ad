#include "checker/package/student_t.h"

#include <cmath>
#include <limits>

namespace mlperf::package {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

double LogBeta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

// Continued fraction for I_x(a, b) (modified Lentz), valid and quickly
// convergent for x < (a + 1) / (a + b + 2). y = 1 - x, passed separately
// because callers often know it more precisely than 1 - x.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    // Odd step.
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEps) break;
  }
  return h;
}

double IncompleteBeta(double a, double b, double x, double y) {
  if (x <= 0.0) return 0.0;
  if (y <= 0.0) return 1.0;
  const double log_front = a * std::log(x) + b * std::log(y) - LogBeta(a, b);
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  }
  return 1.0 - std::exp(log_front) * BetaContinuedFraction(b, a, y) / b;
}

// d/dx I_x(a, b).
double IncompleteBetaDensity(double a, double b, double x) {
  return std::exp((a - 1.0) * std::log(x) + (b - 1.0) * std::log1p(-x) - LogBeta(a, b));
}

}  // namespace

double RegularizedIncompleteBeta(double a, double b, double x) {
  return IncompleteBeta(a, b, x, 1.0 - x);
}

double InverseRegularizedIncompleteBeta(double a, double b, double p) {
  if (p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  // Start from the small-x asymptote I_x ~ x^a / (a B(a, b)); Newton steps
  // that leave the bracket fall back to bisection, so the start only needs to
  // be inside (0, 1).
  double x = std::exp((std::log(p) + std::log(a) + LogBeta(a, b)) / a);
  if (!(x > 0.0 && x < 1.0)) x = 0.5;
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < 400; ++i) {
    const double f = RegularizedIncompleteBeta(a, b, x) - p;
    if (f == 0.0) return x;
    if (f < 0.0) {
      lo = x;
    } else {
      hi = x;
    }
    double next = x - f / IncompleteBetaDensity(a, b, x);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - x) <= 2.0 * kEps * x || hi - lo <= 2.0 * kEps * lo) return next;
    x = next;
  }
  return x;
}

double StudentTCdf(double t, double df) {
  if (std::isnan(t)) return t;
  if (std::isinf(t)) return t < 0 ? 0.0 : 1.0;
  // P(T <= -|t|) = I_{df/(df+t^2)}(df/2, 1/2) / 2.
  const double t2 = t * t;
  const double tail = 0.5 * IncompleteBeta(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2));
  return t < 0 ? tail : 1.0 - tail;
}

double StudentTQuantile(double p, double df) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();
  if (p == 0.5) return 0.0;
  // Work in the lower tail: q = P(|T| >= |t|) = I_x(df/2, 1/2), x = df/(df+t^2).
  const double lower = p < 0.5 ? p : 1.0 - p;
  const double q = 2.0 * lower;
  double t2;
  if (q <= 0.5) {
    const double x = InverseRegularizedIncompleteBeta(0.5 * df, 0.5, q);
    t2 = df * (1.0 - x) / x;
  } else {
    // Near the centre solve for y = 1 - x directly, which is then small and precise.
    const double y = InverseRegularizedIncompleteBeta(0.5, 0.5 * df, 1.0 - q);
    t2 = df * y / (1.0 - y);
  }
  const double t = std::sqrt(t2);
  return p < 0.5 ? -t : t;
}

}  // namespace mlperf::package
