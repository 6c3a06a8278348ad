// The package README: what the results are, how they were produced and how
// to check them. A demonstration says in its first line that it was trained
// on generated data, not ImageNet.
#pragma once

#include <string>

#include "closed_division/config.h"

namespace mlperf::closed {

std::string PackageReadmeSection(const RunPlan& plan);

// The commands that check the package at `org_dir` (ours and the official
// one), with the RCP bypass when the batch size has no RCP.
std::string CheckCommands(const RunPlan& plan, const std::string& org_dir);

}  // namespace mlperf::closed
