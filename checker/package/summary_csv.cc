#include "checker/package/summary_csv.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

// A cell with its pandas dtype: str, int or float (NaN = empty, sorts last).
using Cell = std::variant<std::string, std::optional<long long>, std::optional<double>>;

// str(value) for a description field; missing fields are empty.
std::string Field(const json::Value& desc, const char* name) {
  const json::Value* v = desc.Find(name);
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->as_string();
  if (v->is_float()) return json::PythonFloatRepr(v->as_float());
  return json::Dump(*v);
}

std::optional<long long> ToInt(const std::string& s) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') return std::nullopt;
  return v;
}

// "3.0.0" -> "3.0", "5.1.0" -> "5.1" (ruleset[:3] + rest with ".0" removed).
std::string ShortRound(const std::string& ruleset) {
  std::string rest = ruleset.size() > 3 ? ruleset.substr(3) : "";
  for (size_t p; (p = rest.find(".0")) != std::string::npos;) rest.erase(p, 2);
  return ruleset.substr(0, 3) + rest;
}

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Render(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return CsvQuote(*s);
  if (const auto* i = std::get_if<std::optional<long long>>(&c))
    return *i ? std::to_string(**i) : "";
  const auto& f = std::get<std::optional<double>>(c);
  return f ? json::PythonFloatRepr(*f) : "";
}

// pandas sort_values over all columns: values ascending, missing last.
bool CellLess(const Cell& a, const Cell& b) {
  if (a.index() != b.index()) return a.index() < b.index();
  if (const auto* s = std::get_if<std::string>(&a)) return *s < std::get<std::string>(b);
  auto less_opt = [](const auto& x, const auto& y) { return x && (!y || *x < *y); };
  if (const auto* i = std::get_if<std::optional<long long>>(&a))
    return less_opt(*i, std::get<std::optional<long long>>(b));
  return less_opt(std::get<std::optional<double>>(a), std::get<std::optional<double>>(b));
}

}  // namespace

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
      if (!s.desc_loaded) continue;
      bool has_results = false;
      for (const BenchmarkDirReport& d : org->dirs) has_results = has_results || d.system == s.name;
      if (!has_results) continue;
      const json::Value& desc = s.desc;
      const std::optional<long long> nodes = ToInt(Field(desc, "number_of_nodes"));
      const std::optional<long long> hosts = ToInt(Field(desc, "host_processors_per_node"));
      const std::optional<long long> accels = ToInt(Field(desc, "accelerators_per_node"));
      std::string notes;
      for (const char* n : {"hw_notes", "sw_notes"}) {
        const std::string v = Field(desc, n);
        if (!v.empty()) notes += (notes.empty() ? "" : ";") + v;
      }
      const std::string prefix = fmt::format("https://github.com/mlcommons/training_results_v{}",
                                             ShortRound(org->ruleset));
      const std::string submitter = Field(desc, "submitter");
      std::vector<Cell> row = {
          Field(desc, "division"),
          Field(desc, "status"),
          submitter,
          Field(desc, "system_name"),
          Field(desc, "number_of_nodes"),
          Field(desc, "host_processor_model_name"),
          hosts && nodes ? std::optional<long long>(*hosts * *nodes) : std::nullopt,
          Field(desc, "accelerator_model_name"),
          accels && nodes ? std::optional<long long>(*accels * *nodes) : std::nullopt,
          Field(desc, "framework"),
          notes,
          std::string()};
      for (const std::string& b : benchmarks) {
        std::optional<double> score;
        for (const BenchmarkDirReport& d : org->dirs) {
          if (d.system == s.name && d.benchmark == b && !d.skipped) score = d.score.score;
        }
        row.push_back(score);
      }
      row.push_back(fmt::format("{}/blob/main/{}/systems/{}.json", prefix, submitter, s.name));
      row.push_back(fmt::format("{}/blob/master/{}/benchmarks", prefix, submitter));
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
      out += Render(row[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace mlperf::package
