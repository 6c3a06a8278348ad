// Warnings a submission reviewer wants to see beyond the official rules.
// They never change a verdict: timestamps that go backwards, run_start after
// training began, evaluations missing from a run's schedule, runs whose logs
// are identical, and seeds reused across runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "logging/mllog_parser.h"

namespace mlperf::package {

// Within one run: time_ms going back by more than a second from one MLLOG
// line to the next; a
// run_start logged after the first block_start/epoch_start; an evaluation
// interval (in epoch_num or samples_count) more than 1.5 times the usual one.
std::vector<std::string> RunWarnings(const mllog::ParsedLog& log);

// A 64-bit hash of all of a log's MLLOG lines in order, 0 for a log with none:
// two runs with the same non-zero fingerprint have identical bodies. Taken
// while the log is whole, so that the directory checks can work on the few
// lines they read.
uint64_t BodyFingerprint(const mllog::ParsedLog& log);

// Across the runs of one directory: identical MLLOG bodies (equal
// `fingerprints`), and the same seed value logged by two runs (the official
// seed checker only objects when the source line is also the same). `seeds`
// and `fingerprints` per run, aligned with `logs`; `benchmark` is the
// directory name, compared with submission_benchmark.
std::vector<std::string> DirectoryWarnings(const std::vector<const mllog::ParsedLog*>& logs,
                                           const std::vector<uint64_t>& fingerprints,
                                           const std::vector<std::vector<std::string>>& seeds,
                                           const std::string& benchmark);

}  // namespace mlperf::package
