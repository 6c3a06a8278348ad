#include "checker/package/table_cells.h"

#include <algorithm>
#include <cstdlib>

#include "fmt/format.h"

namespace mlperf::package {

std::string DescField(const json::Value& desc, const char* name) {
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

std::string RenderCsv(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return CsvQuote(*s);
  if (const auto* i = std::get_if<std::optional<long long>>(&c))
    return *i ? std::to_string(**i) : "";
  const auto& f = std::get<std::optional<double>>(c);
  return f ? json::PythonFloatRepr(*f) : "";
}

json::Value CellJson(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return json::Value(*s);
  if (const auto* i = std::get_if<std::optional<long long>>(&c))
    return *i ? json::Value(static_cast<int64_t>(**i)) : json::Value();
  const auto& f = std::get<std::optional<double>>(c);
  return f ? json::Value(*f) : json::Value();
}

bool CellLess(const Cell& a, const Cell& b) {
  if (a.index() != b.index()) return a.index() < b.index();
  if (const auto* s = std::get_if<std::string>(&a)) return *s < std::get<std::string>(b);
  auto less_opt = [](const auto& x, const auto& y) { return x && (!y || *x < *y); };
  if (const auto* i = std::get_if<std::optional<long long>>(&a))
    return less_opt(*i, std::get<std::optional<long long>>(b));
  return less_opt(std::get<std::optional<double>>(a), std::get<std::optional<double>>(b));
}

void SortRows(std::vector<std::vector<Cell>>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), CellLess);
  });
}

std::string CsvText(const std::vector<std::string>& header,
                    const std::vector<std::vector<Cell>>& rows) {
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) {
    if (i) out += ',';
    out += header[i];
  }
  out += '\n';
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += RenderCsv(row[i]);
    }
    out += '\n';
  }
  return out;
}

const std::vector<std::string>& SystemColumns() {
  static const std::vector<std::string> columns = {
      "division",      "availability",          "submitter",          "system",
      "number_of_nodes", "host_processor_model_name", "host_processors_count",
      "accelerator_model_name", "accelerators_count", "framework"};
  return columns;
}

std::vector<Cell> SystemCells(const json::Value& desc) {
  const std::optional<long long> nodes = ToInt(DescField(desc, "number_of_nodes"));
  const std::optional<long long> hosts = ToInt(DescField(desc, "host_processors_per_node"));
  const std::optional<long long> accels = ToInt(DescField(desc, "accelerators_per_node"));
  auto times_nodes = [&](std::optional<long long> per_node) -> std::optional<long long> {
    if (!per_node || !nodes) return std::nullopt;
    return *per_node * *nodes;
  };
  return {DescField(desc, "division"),
          DescField(desc, "status"),
          DescField(desc, "submitter"),
          DescField(desc, "system_name"),
          DescField(desc, "number_of_nodes"),
          DescField(desc, "host_processor_model_name"),
          times_nodes(hosts),
          DescField(desc, "accelerator_model_name"),
          times_nodes(accels),
          DescField(desc, "framework")};
}

std::string SystemNotes(const json::Value& desc) {
  std::string notes;
  for (const char* n : {"hw_notes", "sw_notes"}) {
    const std::string v = DescField(desc, n);
    if (!v.empty()) notes += (notes.empty() ? "" : ";") + v;
  }
  return notes;
}

std::string DetailsUrl(const std::string& ruleset, const std::string& submitter,
                       const std::string& system_folder) {
  return fmt::format("https://github.com/mlcommons/training_results_v{}/blob/main/{}/systems/{}.json",
                     ShortRound(ruleset), submitter, system_folder);
}

std::string CodeUrl(const std::string& ruleset, const std::string& submitter) {
  return fmt::format("https://github.com/mlcommons/training_results_v{}/blob/master/{}/benchmarks",
                     ShortRound(ruleset), submitter);
}

}  // namespace mlperf::package
