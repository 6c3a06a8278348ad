// Reviewer notes on what the logs say about the system against what its
// systems/<system>.json says: submission_org, submission_division,
// submission_status, submission_platform (its name and "<N>x" node count)
// and, where the platform names it, the accelerator count; and values still
// holding a logging template's placeholder. The
// official checks were dropped (mlcommons/logging #395, #403) because
// submitters got them wrong; these notes never change a verdict.
#pragma once

#include <string>
#include <vector>

#include "checker/package/package_check.h"

namespace mlperf::package {

// One note per system, field and log value, naming the logs' value, how many
// logs carry it (and in which benchmarks), and the description's value.
std::vector<std::string> DescriptionNotes(const OrgReport& report);

}  // namespace mlperf::package
