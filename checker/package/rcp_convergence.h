// How far one run had to train, as the RCP checker reads it from a result log
// (spec 6.3, read_submission_file): the epoch_num (or samples_count) of the
// last eval line before a successful run_stop. The official reader tests
// substrings of each line's JSON text, not keys, and so do we.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "logging/mllog_parser.h"

namespace mlperf::package {

// Value the official tool uses for a run that did not converge.
inline constexpr double kUnconvergedEpochs = 1e9;

struct RunConvergence {
  bool converged = false;                           // run_stop with status "success"
  double epochs = kUnconvergedEpochs;               // epochs or samples, in the RCP's unit
  json::Value global_batch_size = json::Value(-1);  // -1 when no line mentions it
  json::Value benchmark;                            // submission_benchmark value; null if absent
};

struct ConvergenceOptions {
  std::string ruleset;              // stable_diffusion reads step_num in 3.1.0, else samples_count
  bool bert_train_samples = false;  // official --bert_train_samples: bert counts train_samples
};

// An error where the official reader raises (a missing metadata field, a
// successful run_stop before any eval line, a non-numeric epoch), naming the
// file and line.
absl::StatusOr<RunConvergence> ReadRunConvergence(const mllog::ParsedLog& log,
                                                  const ConvergenceOptions& options);

// Whether ReadRunConvergence looks at `line` at all: a log reduced to the
// lines for which this is true reads the same.
bool ConvergenceReadsLine(const mllog::LogLine& line);

// Drops (and frees) the lines ReadRunConvergence does not look at: what the
// RCP comparison keeps of a log, so that memory follows the number of logs.
void KeepConvergenceLines(mllog::ParsedLog& log);

// Python's round(x, 3) on a float: correctly rounded, ties to even on the
// exact binary value.
double PythonRound3(double x);

}  // namespace mlperf::package
