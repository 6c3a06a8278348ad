// The seed checker (spec 7.3, seed_checker.py HEAD; closed division only):
// every run logs a seed through MLLOG, seeds are integers, and no two runs
// log the same seed from the same source line.
#pragma once

#include <string>
#include <vector>

#include "logging/mllog_parser.h"

namespace mlperf::package {

struct SeedCheck {
  std::vector<std::string> errors;    // any error fails the directory
  std::vector<std::string> warnings;  // a run logging more than one seed
  // Seed values per run, in input order (for the reviewer's reuse warning).
  std::vector<std::vector<std::string>> seeds;
};

// `logs` in the order the official checker reads them (sorted paths).
SeedCheck CheckSeeds(const std::vector<const mllog::ParsedLog*>& logs);

}  // namespace mlperf::package
