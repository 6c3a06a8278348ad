#include "warehouse/result_format.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "base/json.h"
#include "checker/package/table_cells.h"
#include "fmt/format.h"

namespace mlperf::warehouse {
namespace {

// Text cells longer than this are cut in the table form (CSV and JSON keep all).
constexpr size_t kMaxTableCell = 60;

// Characters, not bytes, for the column widths (UTF-8 continuation bytes skipped).
size_t Width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string TableCell(const DbValue& v) {
  std::string s = ValueText(v);
  for (char& c : s) c = (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  if (s.size() > kMaxTableCell) {
    size_t cut = kMaxTableCell - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

json::Value JsonCell(const DbValue& v) {
  if (const auto* i = std::get_if<long long>(&v)) return json::Value(static_cast<int64_t>(*i));
  if (const auto* d = std::get_if<double>(&v)) return json::Value(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return json::Value(*s);
  return json::Value();
}

}  // namespace

absl::StatusOr<Format> ParseFormat(std::string_view name) {
  if (name == "table") return Format::kTable;
  if (name == "csv") return Format::kCsv;
  if (name == "json") return Format::kJson;
  return absl::InvalidArgumentError(fmt::format("--format={}: expected table, csv or json", name));
}

std::string FormatResult(const QueryResult& result, Format format) {
  std::string out;
  if (format == Format::kCsv) {
    std::vector<std::string> header;
    for (const std::string& c : result.columns) header.push_back(package::CsvQuote(c));
    out += absl::StrJoin(header, ",") + "\n";
    for (const auto& row : result.rows) {
      std::vector<std::string> cells;
      for (const DbValue& v : row) cells.push_back(package::CsvQuote(ValueText(v)));
      out += absl::StrJoin(cells, ",") + "\n";
    }
    return out;
  }
  if (format == Format::kJson) {
    json::Array rows;
    for (const auto& row : result.rows) {
      json::Object o;
      for (size_t i = 0; i < row.size() && i < result.columns.size(); ++i)
        o.emplace_back(result.columns[i], JsonCell(row[i]));
      rows.push_back(json::Value(std::move(o)));
    }
    return json::DumpIndented(json::Value(std::move(rows)), 2) + "\n";
  }
  std::vector<std::vector<std::string>> cells;
  cells.push_back(result.columns);
  for (const auto& row : result.rows) {
    std::vector<std::string> line;
    for (const DbValue& v : row) line.push_back(TableCell(v));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(result.columns.size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], Width(line[i]));
  }
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size() && i < width.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(width[i] - Width(line[i]) + 2, ' ');
    }
    out += text + "\n";
  }
  out += fmt::format("({} row{})\n", result.rows.size(), result.rows.size() == 1 ? "" : "s");
  return out;
}

}  // namespace mlperf::warehouse
