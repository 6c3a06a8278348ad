// The auditors' dashboard: static, self-contained HTML pages generated from
// the warehouse (no script, no external file), an index and one page per
// benchmark with SVG charts of time to train against scale per round and of
// per-accelerator throughput over the rounds, and the tables behind them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

struct DashboardPage {
  std::string file;  // "index.html", "<benchmark>.html"
  std::string html;
};

absl::StatusOr<std::vector<DashboardPage>> BuildDashboard(Database& db);

// A benchmark's page name: letters, digits, '_', '-' and '.' kept, others '_'.
std::string PageFile(const std::string& benchmark);

}  // namespace mlperf::warehouse
