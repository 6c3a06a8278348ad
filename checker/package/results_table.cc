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
  t.columns = {"round",
               "division",
               "availability",
               "submitter",
               "system",
               "system_folder",
               "number_of_nodes",
               "host_processor_model_name",
               "host_processors_count",
               "accelerator_model_name",
               "accelerators_count",
               "framework",
               "benchmark",
               "verdict",
               "runs",
               "compliant_runs",
               "time_to_train",
               "Energy",
               "GBS",
               "samples_to_converge",
               "RCP",
               "rcp_mean",
               "rcp_scaling_factor",
               "private_id",
               "notes",
               "details_url",
               "code_url"};
  for (const OrgReport* org : orgs) {
    for (const SystemReport& s : org->systems) {
      if (!s.desc_loaded || s.private_id_unreadable) continue;
      const json::Value& desc = s.desc;
      const std::optional<long long> nodes = ToInt(DescField(desc, "number_of_nodes"));
      const std::optional<long long> hosts = ToInt(DescField(desc, "host_processors_per_node"));
      const std::optional<long long> accels = ToInt(DescField(desc, "accelerators_per_node"));
      const std::string submitter = DescField(desc, "submitter");
      for (const BenchmarkDirReport& d : org->dirs) {
        if (d.system != s.name || d.skipped) continue;
        const bool closed = d.division == "closed";
        std::optional<double> gbs;
        if (closed && d.rcp && d.rcp->global_batch_size.is_number())
          gbs = d.rcp->global_batch_size.as_float();
        const std::string rcp = SummarizerRcpStatus(d);
        t.rows.push_back({
            ShortRound(org->ruleset),
            DescField(desc, "division"),
            DescField(desc, "status"),
            submitter,
            DescField(desc, "system_name"),
            s.name,
            DescField(desc, "number_of_nodes"),
            DescField(desc, "host_processor_model_name"),
            hosts && nodes ? std::optional<long long>(*hosts * *nodes) : std::nullopt,
            DescField(desc, "accelerator_model_name"),
            accels && nodes ? std::optional<long long>(*accels * *nodes) : std::nullopt,
            DescField(desc, "framework"),
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
            SystemNotes(desc),
            DetailsUrl(org->ruleset, submitter, s.name),
            CodeUrl(org->ruleset, submitter),
        });
      }
    }
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), CellLess);
  });
  return t;
}

std::string ResultsTableCsv(const ResultsTable& table) {
  std::string out;
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (i) out += ',';
    out += table.columns[i];
  }
  out += '\n';
  for (const auto& row : table.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += RenderCsv(row[i]);
    }
    out += '\n';
  }
  return out;
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
