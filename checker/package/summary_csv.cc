#include "checker/package/summary_csv.h"

#include <algorithm>

#include "checker/package/table_cells.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {

std::string SummaryCsv(const std::vector<const OrgReport*>& orgs) {
  std::vector<std::string> benchmarks;
  for (const OrgReport* org : orgs) {
    for (const std::string& b : meta::AllowedBenchmarks(org->ruleset)) {
      if (std::find(benchmarks.begin(), benchmarks.end(), b) == benchmarks.end())
        benchmarks.push_back(b);
    }
  }
  std::vector<std::string> header = SystemColumns();
  header.push_back("notes");
  header.push_back("private_id");
  header.insert(header.end(), benchmarks.begin(), benchmarks.end());
  header.push_back("details_url");
  header.push_back("code_url");

  std::vector<std::vector<Cell>> rows;
  for (const OrgReport* org : orgs) {
    for (const SystemReport& s : org->systems) {
      if (!s.desc_loaded || s.private_id_unreadable) continue;
      bool has_results = false;
      for (const BenchmarkDirReport& d : org->dirs) has_results = has_results || d.system == s.name;
      if (!has_results) continue;
      const std::string submitter = DescField(s.desc, "submitter");
      std::vector<Cell> row = SystemCells(s.desc);
      row.push_back(SystemNotes(s.desc));
      row.push_back(s.private_id);
      for (const std::string& b : benchmarks) {
        std::optional<double> score;
        for (const BenchmarkDirReport& d : org->dirs) {
          if (d.system == s.name && d.benchmark == b && !d.skipped) score = d.score.score;
        }
        row.push_back(score);
      }
      row.push_back(DetailsUrl(org->ruleset, submitter, s.name));
      row.push_back(CodeUrl(org->ruleset, submitter));
      rows.push_back(std::move(row));
    }
  }
  SortRows(rows);
  return CsvText(header, rows);
}

}  // namespace mlperf::package
