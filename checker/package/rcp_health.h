// Reviewer notes on a directory's RCP comparison, never changing a verdict:
// a package whose mean convergence is faster than every reference run at its
// batch size (as llama31_8b packages were in mlcommons/training #838), which
// reference batch sizes the
// pruning dropped and why (mlcommons/logging #367, #368), and reference
// hyperparameters the compared RCP record leaves out (mlcommons/logging #142).
#pragma once

#include <string>
#include <vector>

#include "checker/package/rcp_check.h"

namespace mlperf::package {

std::vector<std::string> RcpHealthNotes(const RcpVerdict& verdict, const std::string& ruleset);

}  // namespace mlperf::package
