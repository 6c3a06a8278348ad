// What a package says about its systems: systems/<system>.json, loaded and
// checked as the official system description checker checks it (spec 7.5),
// and results/<system>/privateid.json, which the result summarizer reads for
// its private_id column.
#pragma once

#include <filesystem>
#include <string>

#include "checker/package/package_check.h"

namespace mlperf::package {

// Every systems/*.json of the organisation into report.systems (only
// options.only_system's, where set); unreadable or invalid ones are errors.
void CheckSystemDescriptions(const std::filesystem::path& org, const PackageOptions& options,
                             OrgReport& report);

// results/<system>/privateid.json into the system's report: {"private_id": ...}.
// A file that does not parse makes the summarizer skip the system's row (one
// that is not an object makes it crash): marked, with a warning.
void ReadPrivateId(const std::filesystem::path& sys_dir, const std::string& system,
                   OrgReport& report);

}  // namespace mlperf::package
