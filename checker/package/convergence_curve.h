// A run's convergence curve for the HTML report: every evaluation's metric
// against the training progress, read where the RCP checker reads a run's
// convergence point (epoch_num, samples_count, or the eval step key), so the
// curve and the RCP band share one axis. And the quality target the rules
// state, for the target line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checker/rule_library.h"
#include "logging/mllog_parser.h"

namespace mlperf::package {

struct CurvePoint {
  double x = 0, y = 0;
  int64_t file_line = 0;
};

// One metric of one run, e.g. "eval_accuracy", "eval_accuracy[BBOX]", "FID".
struct ConvergenceCurve {
  std::string metric;
  std::vector<CurvePoint> points;  // in log order
};

struct RunCurves {
  std::string x_key;  // the metadata key on the x axis
  std::vector<ConvergenceCurve> curves;
};

// Evaluation lines (eval_accuracy, eval_error) without a numeric x are left out.
RunCurves ExtractCurves(const mllog::ParsedLog& log, const std::string& benchmark,
                        const std::string& ruleset);

struct QualityTarget {
  std::string metric;  // as ConvergenceCurve::metric names it
  double value = 0;
  bool at_least = true;  // the metric must reach value from below (accuracy) or above (loss)
};

// The targets the ruleset's rule file for the benchmark states (its `target`
// comparisons with a number), or the benchmark metadata's FID and CLIP bounds.
std::vector<QualityTarget> QualityTargets(const checker::RuleLibrary& rules,
                                          const std::string& ruleset, const std::string& division,
                                          const std::string& benchmark);

}  // namespace mlperf::package
