// Reviewer notes on seeds beyond the official seed checker, never changing
// a verdict: a run without a seed where the 6.x training policies require
// one but the seed checker did not run (open division, a bypass;
// mlcommons/training_policies #546), seeds that step by a constant (derived
// from one base seed rather than drawn per run), and two or more seeds in
// common between two systems' runs of one benchmark (implementations sharing
// seeds, mlcommons/logging #129). A seed reused within a directory is
// DirectoryWarnings' note.
#pragma once

#include <string>
#include <vector>

#include "checker/package/package_check.h"

namespace mlperf::package {

std::vector<std::string> DirectorySeedNotes(const BenchmarkDirReport& d,
                                            const std::string& ruleset);

std::vector<std::string> SharedSeedNotes(const OrgReport& report);

}  // namespace mlperf::package
