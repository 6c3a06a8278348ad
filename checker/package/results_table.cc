#include "checker/package/results_table.h"

#include <algorithm>

#include "checker/package/numpy_stats.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

constexpr std::string_view kBypassSuffix = " passed using rcp_bypass";

// The summarizer's samples_to_converge: the mean of the runs' convergence
// (1e9 where a run did not converge) without the lowest and highest, from
// three runs on; none when too many runs did not converge.
std::optional<double> SamplesToConverge(const BenchmarkDirReport& d) {
  if (!d.rcp || d.rcp->unconverged_runs > meta::OlympicDropPerSide(d.benchmark))
    return std::nullopt;
  std::vector<double> e = d.rcp->run_epochs;
  if (e.size() < 3) return std::nullopt;
  std::sort(e.begin(), e.end());
  return NumpyMean(std::span<const double>(e).subspan(1, e.size() - 2));
}

}  // namespace

std::string SummarizerRcpStatus(const BenchmarkDirReport& d) {
  if (d.division != "closed" || !d.rcp) return "";
  std::string message = d.rcp->message;
  bool passed = d.rcp->passed;
  if (message.ends_with(kBypassSuffix)) {
    message.resize(message.size() - kBypassSuffix.size());
    passed = false;
  }
  if (passed) return "Pass";
  if (message == "RCP found") return "Fail";
  if (message == "RCP Interpolation") return "Interp. Fail";
  if (message.find("Missing") != std::string::npos) return "Missing";
  if (message == "Cannot find any RCPs") return "No RCP";
  return "Unknown state";
}

ResultsTable BuildResultsTable(const std::vector<const OrgReport*>& orgs) {
  ResultsTable t;
  t.columns = {"round"};
  t.columns.insert(t.columns.end(), SystemColumns().begin(), SystemColumns().end());
  t.columns.insert(t.columns.end(),
                   {"system_folder", "benchmark", "verdict", "runs", "compliant_runs",
                    "time_to_train", "Energy", "GBS", "samples_to_converge", "RCP", "rcp_mean",
                    "rcp_scaling_factor", "private_id", "notes", "details_url", "code_url"});
  for (const OrgReport* org : orgs) {
    for (const SystemReport& s : org->systems) {
      if (!s.desc_loaded || s.private_id_unreadable) continue;
      const std::string submitter = DescField(s.desc, "submitter");
      for (const BenchmarkDirReport& d : org->dirs) {
        if (d.system != s.name || d.skipped) continue;
        const bool closed = d.division == "closed";
        std::optional<double> gbs;
        if (closed && d.rcp && d.rcp->global_batch_size.is_number())
          gbs = d.rcp->global_batch_size.as_float();
        const std::string rcp = SummarizerRcpStatus(d);
        std::vector<Cell> row = {ShortRound(org->ruleset)};
        std::vector<Cell> system = SystemCells(s.desc);
        row.insert(row.end(), system.begin(), system.end());
        row.insert(row.end(), {
            s.name,
            d.benchmark,
            std::string(d.passed() ? "PASS" : "FAIL"),
            std::optional<long long>(static_cast<long long>(d.runs.size())),
            std::optional<long long>(d.converged_runs()),
            d.score.score,
            d.energy,
            gbs,
            closed ? SamplesToConverge(d) : std::nullopt,
            rcp,
            d.rcp && d.rcp->record ? std::optional<double>(d.rcp->record->mean) : std::nullopt,
            std::optional<double>(d.score.scaling_factor),
            s.private_id,
            SystemNotes(s.desc),
            DetailsUrl(org->ruleset, submitter, s.name),
            CodeUrl(org->ruleset, submitter),
        });
        t.rows.push_back(std::move(row));
      }
    }
  }
  SortRows(t.rows);
  return t;
}

std::string ResultsTableCsv(const ResultsTable& table) {
  return CsvText(table.columns, table.rows);
}

std::string ResultsTableJson(const ResultsTable& table) {
  json::Array rows;
  for (const auto& row : table.rows) {
    json::Object o;
    for (size_t i = 0; i < row.size() && i < table.columns.size(); ++i)
      o.emplace_back(table.columns[i], CellJson(row[i]));
    rows.push_back(json::Value(std::move(o)));
  }
  return json::DumpIndented(json::Value(std::move(rows)), 2) + "\n";
}

}  // namespace mlperf::package
