// The result summarizer's strong-scaling table (spec 8.3, HEAD columns):
// one row per results/<system> folder whose system description loads, one
// score column per benchmark of the ruleset, rows sorted by every column.
#pragma once

#include <string>
#include <vector>

#include "checker/package/package_check.h"

namespace mlperf::package {

// The CSV text (header and rows, "\n" line ends, fields quoted only where
// they must be) for the organisations, all of one ruleset or several (then
// the benchmark columns are the union, in first-seen order).
std::string SummaryCsv(const std::vector<const OrgReport*>& orgs);

}  // namespace mlperf::package
