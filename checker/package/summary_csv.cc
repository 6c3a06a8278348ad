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
  std::vector<std::string> header = {"division",
                                     "availability",
                                     "submitter",
                                     "system",
                                     "number_of_nodes",
                                     "host_processor_model_name",
                                     "host_processors_count",
                                     "accelerator_model_name",
                                     "accelerators_count",
                                     "framework",
                                     "notes",
                                     "private_id"};
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
      const json::Value& desc = s.desc;
      const std::optional<long long> nodes = ToInt(DescField(desc, "number_of_nodes"));
      const std::optional<long long> hosts = ToInt(DescField(desc, "host_processors_per_node"));
      const std::optional<long long> accels = ToInt(DescField(desc, "accelerators_per_node"));
      const std::string submitter = DescField(desc, "submitter");
      std::vector<Cell> row = {
          DescField(desc, "division"),
          DescField(desc, "status"),
          submitter,
          DescField(desc, "system_name"),
          DescField(desc, "number_of_nodes"),
          DescField(desc, "host_processor_model_name"),
          hosts && nodes ? std::optional<long long>(*hosts * *nodes) : std::nullopt,
          DescField(desc, "accelerator_model_name"),
          accels && nodes ? std::optional<long long>(*accels * *nodes) : std::nullopt,
          DescField(desc, "framework"),
          SystemNotes(desc),
          s.private_id};
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
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), CellLess);
  });
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) {
    if (i) out += ',';
    out += header[i];
  }
  out += "\n";
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += RenderCsv(row[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace mlperf::package
