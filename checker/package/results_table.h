// The full results table (compliance_check --results-table): one row per
// system and benchmark with the published results page's columns (the
// summarizer's description columns), the verdict, and the summarizer's
// detailed metrics: time to train, energy, global batch size, samples to
// converge, RCP status and scaling factor, plus the RCP mean compared with.
// The columns it shares with result_summarizer's *_detailed.csv hold the same
// values (mlcommons/logging #282, #399, #455 asked for this table).
#pragma once

#include <string>
#include <vector>

#include "checker/package/package_check.h"
#include "checker/package/table_cells.h"

namespace mlperf::package {

struct ResultsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;  // sorted by every column, as the summarizer sorts
};

ResultsTable BuildResultsTable(const std::vector<const OrgReport*>& orgs);

// Header and rows, "\n" line ends, fields quoted only where they must be.
std::string ResultsTableCsv(const ResultsTable& table);
// A JSON array of one object per row (missing values null).
std::string ResultsTableJson(const ResultsTable& table);

// The summarizer's RCP column for a closed directory: "Pass", "Fail",
// "Interp. Fail", "Missing", "No RCP", "Unknown state"; "" when its RCP run
// raises or the division is open. The summarizer never applies an RCP bypass.
std::string SummarizerRcpStatus(const BenchmarkDirReport& d);

}  // namespace mlperf::package
