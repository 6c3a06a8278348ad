// A query's answer as a text table, CSV or JSON (one object per row).
// Floats print as Python's repr in every form, so answers compare as text.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

enum class Format { kTable, kCsv, kJson };

absl::StatusOr<Format> ParseFormat(std::string_view name);  // table, csv, json

std::string FormatResult(const QueryResult& result, Format format);

}  // namespace mlperf::warehouse
