// The cells of the summarizer-style tables (summary_csv, results_table):
// description fields as the summarizer reads them, pandas-typed cells, CSV
// quoting and pandas' sort order.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/json.h"

namespace mlperf::package {

// A cell with its pandas dtype: str, int or float (NaN = empty, sorts last).
using Cell = std::variant<std::string, std::optional<long long>, std::optional<double>>;

// str(value) for a description field; missing fields are empty.
std::string DescField(const json::Value& desc, const char* name);

// A whole number, or nullopt ("8" -> 8, "8.0" or "" -> nullopt).
std::optional<long long> ToInt(const std::string& s);

// "3.0.0" -> "3.0", "5.1.0" -> "5.1" (ruleset[:3] + rest with ".0" removed).
std::string ShortRound(const std::string& ruleset);

std::string CsvQuote(const std::string& s);

// A cell as pandas writes it to CSV (floats as Python's repr, missing empty).
std::string RenderCsv(const Cell& c);

// A cell in JSON (missing as null).
json::Value CellJson(const Cell& c);

// pandas sort_values over all columns: values ascending, missing last.
bool CellLess(const Cell& a, const Cell& b);
void SortRows(std::vector<std::vector<Cell>>& rows);

// Header and rows as pandas writes them with index=False ("\n" line ends).
std::string CsvText(const std::vector<std::string>& header,
                    const std::vector<std::vector<Cell>>& rows);

// The summarizer's description columns, division to framework, in its order,
// and their cells for one systems/<system>.json (counts are per node times
// number_of_nodes, empty where either is not a whole number).
const std::vector<std::string>& SystemColumns();
std::vector<Cell> SystemCells(const json::Value& desc);

// The summarizer's hw_notes;sw_notes, and its details and code links.
std::string SystemNotes(const json::Value& desc);
std::string DetailsUrl(const std::string& ruleset, const std::string& submitter,
                       const std::string& system_folder);
std::string CodeUrl(const std::string& ruleset, const std::string& submitter);

}  // namespace mlperf::package
